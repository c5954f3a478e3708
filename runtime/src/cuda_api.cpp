// The CUDA runtime behind cuda_api.hpp and cuda_check.hpp (built when CUDA is enabled).
// Plain C++: only the runtime API is called, so a binary starts without a driver and
// cudaGetDeviceCount then reports why there is no device.
#include "cuda_api.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <cunumpy/cuda_check.hpp>
#include <cunumpy/errors.hpp>

namespace cunumpy::detail {

const char* cuda_error_name(int code) noexcept {
  return cudaGetErrorName(static_cast<cudaError_t>(code));
}

bool cuda_error_is_sticky(int code) noexcept {
  switch (static_cast<cudaError_t>(code)) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

void cuda_check(int code, const char* call, const char* file, int line) {
  if (code == 0) return;
  const auto err = static_cast<cudaError_t>(code);
  const std::string message = std::string("CUDA error ") + cudaGetErrorName(err) + " (" +
                              std::to_string(code) + "): " + cudaGetErrorString(err) +
                              "\n  in " + call + "\n  at " + file + ":" + std::to_string(line);
  if (cuda_error_is_sticky(code)) {
    std::fprintf(stderr,
                 "cunumpy: fatal: %s\n  the CUDA context is unusable after this error; run "
                 "under compute-sanitizer to find the faulting kernel\n",
                 message.c_str());
    std::fflush(stderr);
    std::abort();
  }
  (void)cudaGetLastError();  // clear the non-sticky error so the next call starts clean
  throw CudaError(message, code);
}

namespace cuda_api {

bool built_with_cuda() noexcept { return true; }

Probe probe() {
  Probe p;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    const std::string what = err == cudaErrorInsufficientDriver ? "no driver"
                             : err == cudaErrorNoDevice         ? "no device"
                                                                : "CUDA unusable";
    p.reason = what + ": cudaGetDeviceCount returned " + std::to_string(static_cast<int>(err)) +
               " (" + cudaGetErrorName(err) + ")";
    return p;
  }
  if (count == 0) {
    p.reason = "no CUDA device visible (cudaGetDeviceCount returned 0 devices; check "
               "CUDA_VISIBLE_DEVICES)";
    return p;
  }
  p.count = count;
  return p;
}

void* allocate(std::size_t bytes) {
  void* p = nullptr;
  CUNUMPY_CUDA_CHECK(cudaMalloc(&p, bytes));
  return p;
}

void deallocate(void* p) noexcept {
  const cudaError_t err = cudaFree(p);
  if (err != cudaSuccess && !cuda_error_is_sticky(err)) (void)cudaGetLastError();
}

void* host_allocate(std::size_t bytes) {
  void* p = nullptr;
  CUNUMPY_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  return p;
}

void host_free(void* p) noexcept {
  if (cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
}

void copy(void* dst, const void* src, std::size_t bytes, Direction direction, void* stream) {
  const cudaMemcpyKind kind = direction == Direction::host_to_device   ? cudaMemcpyHostToDevice
                              : direction == Direction::device_to_host ? cudaMemcpyDeviceToHost
                                                                       : cudaMemcpyDeviceToDevice;
  auto s = static_cast<cudaStream_t>(stream);
  CUNUMPY_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s));
  CUNUMPY_CUDA_CHECK(cudaStreamSynchronize(s));
}

void device_synchronize() { CUNUMPY_CUDA_CHECK(cudaDeviceSynchronize()); }

void stream_synchronize(void* stream) {
  CUNUMPY_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void set_device(int id) {
  CUNUMPY_CUDA_CHECK(cudaSetDevice(id));
  CUNUMPY_CUDA_CHECK(cudaFree(nullptr));  // create the context now, before MPI_Init
}

int current_device() {
  int id = 0;
  CUNUMPY_CUDA_CHECK(cudaGetDevice(&id));
  return id;
}

}  // namespace cuda_api
}  // namespace cunumpy::detail
