// cunumpy/errors.hpp: the exception types cunumpy throws, all derived from cunumpy::Error.
//
// The names follow the Python reference's error kinds: a wrong value or shape is a
// ValueError, a wrong kind of argument (mixed backends, dtype) a TypeError, an unavailable
// backend or a call that the current state cannot serve a RuntimeError.
#pragma once

#include <cunumpy/error.hpp>

namespace cunumpy {

// A value, shape or size outside what the call accepts.
class ValueError : public Error {
 public:
  using Error::Error;
};

// An argument of the wrong kind: arrays on different backends, the wrong element type.
class TypeError : public Error {
 public:
  using Error::Error;
};

// The backend or device cannot do what was asked (no CUDA device, host access to device
// memory, ...).
class BackendError : public Error {
 public:
  using Error::Error;
};

// A CUDA runtime call failed; the message names the call, its file and line.
class CudaError : public Error {
 public:
  CudaError(const std::string& message, int code) : Error(message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

// A run-time compiled kernel that does not compile: the message holds the compiler's log.
class CompileError : public Error {
 public:
  using Error::Error;
};

// A name that is not there: a kernel of a catalog, a host implementation (Python's
// LookupError / KeyError).
class LookupError : public Error {
 public:
  using Error::Error;
};

// An MPI call failed, or a communication was used where it cannot work (after MPI_Finalize);
// the message names the call and MPI's error string.
class MpiError : public Error {
 public:
  using Error::Error;
};

// The installed cunumpy is older than a component requires (require_version).
class VersionError : public Error {
 public:
  using Error::Error;
};

// assert_no_transfers saw a transfer; the message is the transfer report.
class TransferAssertionError : public Error {
 public:
  using Error::Error;
};

}  // namespace cunumpy
