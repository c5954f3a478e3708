// kernels/src/embedded_headers.hpp: the CUDA headers cunumpy ships (device_headers/cunumpy/),
// compiled into the library (private to the kernels layer).
//
// Run-time compilation needs them on an include path; reading them from the source tree or
// from a path fixed at configure time would tie an installed library to a checkout or to one
// prefix.  Instead the library carries them and writes them out once into a folder named by
// their digest (cuda_include_dir()), so a prefix can be copied anywhere and a statically
// linked program can move between machines.
#pragma once

#include <span>
#include <string_view>

namespace cunumpy::detail {

struct EmbeddedFile {
  std::string_view path;  // relative to the include folder: "cunumpy/array_view.cuh"
  std::string_view text;
};

// Generated at build time by cmake/embed_headers.cmake.
std::span<const EmbeddedFile> embedded_device_headers();

}  // namespace cunumpy::detail
