// kernels/src/compile_request.hpp: what a kernel program is compiled from, by either compiler
// (NVRTC for cuda, the host compiler for the kernel emulator; private to the kernels layer).
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace cunumpy::detail {

// One request for both compilers: CudaKernel builds it once per compilation (request()), NVRTC
// (compile_cuda) and the emulator (emulate_compile) each take what they use.
struct CompileRequest {
  std::string source;
  std::string source_name;  // the file the compiler's messages name, e.g. "push_cuda.cu"
  // The kernels: each a name or a template instantiation (NVRTC's name expressions).
  std::vector<std::string> expressions;
  std::string owner;  // what errors name: "CudaKernel 'push'", "CudaModule 'pic.cu'"
  // Complete: the user's options, include folders, defines, the architecture.  The emulator
  // passes the -D, -I and -U ones to the host compiler.
  std::vector<std::string> options;
  std::string arch;                            // NVRTC's target, "sm_90"
  std::vector<std::filesystem::path> headers;  // every header the source includes, resolved
};

// Appends to a cache key's text what both compilers' keys cover: the expressions, the options
// the compiler takes from the request (NVRTC all of them, the emulator its -D, -I and -U ones:
// an NVRTC-only option does not recompile emulated kernels), the source and each header's
// contents (delimited by their sizes).  Returns the headers' contents, read once, in the order
// of request.headers.
std::vector<std::string> append_key_inputs(std::string& text, const CompileRequest& request,
                                           std::span<const std::string> options);

}  // namespace cunumpy::detail
