// cunumpy/cuda_check.hpp: checking CUDA runtime return codes.
//
//   CUNUMPY_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, stream));
//
// A failed call throws CudaError naming the error, the call, its file and line, after
// clearing the runtime's last error.  Sticky errors (illegal address, launch failure,
// hardware traps, device-side assert), which leave the CUDA context unusable, are fatal:
// the message is printed and the process aborts, since nothing after them can succeed.
// The header needs no CUDA headers; the macro is one expression, safe in if/else chains.
#pragma once

#include <string_view>

namespace cunumpy::detail {

// Returns when `code` is 0 (cudaSuccess); throws CudaError or aborts otherwise.
void cuda_check(int code, const char* call, const char* file, int line);

// Whether `code` is one of the sticky errors that leave the context unusable.
bool cuda_error_is_sticky(int code) noexcept;

// "cudaErrorInsufficientDriver" (or "CUDA error <code>" without the CUDA runtime).
const char* cuda_error_name(int code) noexcept;

// Records a kernel launch (a 1D grid of blocks) among the most recent ones, which the message
// of a later sticky error lists: the suspects, since such an error surfaces at a later call.
void note_kernel_launch(std::string_view name, unsigned int grid, unsigned int block,
                        void* stream) noexcept;

}  // namespace cunumpy::detail

// Checks a CUDA runtime call: throws CudaError naming the call, the file and the line.
#define CUNUMPY_CUDA_CHECK(call) \
  ::cunumpy::detail::cuda_check(static_cast<int>(call), #call, __FILE__, __LINE__)
