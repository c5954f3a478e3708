// Non-template parts of parallel_for / parallel_reduce.
#include <cunumpy/parallel.hpp>

#include <string>

namespace cunumpy::detail {

void throw_no_cuda_in_translation_unit(std::string_view name) {
  throw BackendError("parallel loop '" + std::string(name) +
                     "': the cuda backend is active, but this loop was compiled by a host "
                     "compiler, so it has no CUDA kernel; compile the file that calls it as "
                     "CUDA (a .cu file built by nvcc, with CUNUMPY_LAMBDA bodies), or run it on "
                     "Backend::host or Backend::emulated");
}

void check_extent(std::string_view name, long long n) {
  if (n < 0)
    throw ValueError("parallel loop '" + std::string(name) +
                     "': extents must be non-negative, got " + std::to_string(n));
}

}  // namespace cunumpy::detail
