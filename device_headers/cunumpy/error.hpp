// cunumpy/error.hpp: the root of cunumpy's exception hierarchy.
//
// Every error cunumpy throws derives from cunumpy::Error.  It lives in the lowest layer so
// that the host side of the device headers (bounds checks) can throw it too; the other
// error types are in <cunumpy/errors.hpp>.  Absent under NVRTC, which has no standard library.
#pragma once

#include "cunumpy/config.cuh"

#if !CUNUMPY_NVRTC()
#include <stdexcept>
#include <string>

namespace cunumpy {

// Base of all cunumpy exceptions.  Messages say what was expected, what was given, and
// how to fix it.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An index outside an array's shape (the IndexError of the Python reference).
class IndexError : public Error {
 public:
  using Error::Error;
};

}  // namespace cunumpy
#endif
