// kernels/src/cuda_compiler.hpp: NVRTC, loaded at first use, and the on-disk cache of compiled
// kernels (private to the kernels layer).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "compile_request.hpp"

namespace cunumpy::detail {

struct CompiledCode {
  std::string cubin;
  std::vector<std::string> lowered_names;  // the symbols to load, one per expression
  bool from_cache = false;
  std::string key;  // the cache key (64 hex digits)
};

// Compiles with NVRTC to CUBIN, through the on-disk cache.  CompileError with NVRTC's log
// for a source that does not compile; BackendError when NVRTC cannot be loaded.
CompiledCode compile_cuda(const CompileRequest& request);

// The cache key of a request (SHA-256 over the library version, NVRTC's version, the
// toolkit's CUDA_VERSION, the architecture, the expressions, the options, the source and the
// headers' contents).
std::string cache_key(const CompileRequest& request);

// NVRTC's version as major * 1000 + minor * 10 (e.g. 13000); BackendError without NVRTC.
int nvrtc_version();

// The CUDA toolkit's headers kernels compile against (cuda/std/..., CCCL; -I for NVRTC and the
// emulator), and their identity (cuda.h's CUDA_VERSION line), part of both compilers' keys.
std::filesystem::path toolkit_include_dir();
const std::string& toolkit_identity();

}  // namespace cunumpy::detail
