// The CUDA runtime behind cuda_api.hpp and cuda_check.hpp (built when CUDA is enabled).
// Plain C++: only the runtime API is called, so a binary starts without a driver and
// cudaGetDeviceCount then reports why there is no device.
#include <cunumpy/internal/cuda_api.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <cunumpy/cuda_check.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/stream.hpp>

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
                              std::to_string(code) + "): " + cudaGetErrorString(err) + "\n  in " +
                              call + "\n  at " + file + ":" + std::to_string(line);
  if (cuda_error_is_sticky(code)) {
    // The error surfaces at a later call: the kernels launched last are the suspects.
    const std::string launches = cuda_api::recent_launches();
    std::fprintf(stderr,
                 "cunumpy: fatal: %s\n  the most recent kernel launches, newest first: %s\n  the "
                 "CUDA context is unusable after this error; CUNUMPY_CUDA_DEBUG=1 names a failing "
                 "CudaKernel at its launch, compute-sanitizer the faulting line of any kernel\n",
                 message.c_str(), launches.empty() ? "none through cunumpy" : launches.c_str());
    std::fflush(stderr);
    std::abort();
  }
  (void)cudaGetLastError();  // clear the non-sticky error so the next call starts clean
  throw CudaError(message, code);
}

namespace cuda_api {

bool built_with_cuda() noexcept {
  return true;
}

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
    p.reason =
        "no CUDA device visible (cudaGetDeviceCount returned 0 devices; check "
        "CUDA_VISIBLE_DEVICES)";
    return p;
  }
  p.count = count;
  return p;
}

// Device memory comes from the device's stream-ordered pool, in the order of the current
// stream: a freed block is reused by the next allocation without a device synchronisation.
void* allocate(std::size_t bytes) {
  void* p = nullptr;
  CUNUMPY_CUDA_CHECK(cudaMallocAsync(
      &p, bytes, static_cast<cudaStream_t>(current_stream(Backend::cuda).native_handle())));
  return p;
}

void deallocate(void* p) noexcept {
  const cudaError_t err =
      cudaFreeAsync(p, static_cast<cudaStream_t>(current_stream(Backend::cuda).native_handle()));
  if (err != cudaSuccess && !cuda_error_is_sticky(err)) (void)cudaGetLastError();
}

namespace {
cudaMemPool_t device_pool() {
  int device = 0;
  CUNUMPY_CUDA_CHECK(cudaGetDevice(&device));
  cudaMemPool_t pool;
  CUNUMPY_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  return pool;
}
}  // namespace

void set_pool_release_threshold(std::size_t bytes) {
  std::uint64_t threshold = bytes;
  CUNUMPY_CUDA_CHECK(
      cudaMemPoolSetAttribute(device_pool(), cudaMemPoolAttrReleaseThreshold, &threshold));
}

void trim_pool() {
  CUNUMPY_CUDA_CHECK(cudaDeviceSynchronize());
  CUNUMPY_CUDA_CHECK(cudaMemPoolTrimTo(device_pool(), 0));
}

void* stream_create() {
  cudaStream_t s;
  CUNUMPY_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}
void stream_destroy(void* stream) noexcept {
  if (cudaStreamDestroy(static_cast<cudaStream_t>(stream)) != cudaSuccess) (void)cudaGetLastError();
}
void* event_create(bool timing) {
  cudaEvent_t e;
  CUNUMPY_CUDA_CHECK(
      cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return e;
}
double event_elapsed_seconds(void* start, void* end) {
  float ms = 0;
  CUNUMPY_CUDA_CHECK(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)));
  return static_cast<double>(ms) * 1e-3;
}
void event_destroy(void* event) noexcept {
  if (cudaEventDestroy(static_cast<cudaEvent_t>(event)) != cudaSuccess) (void)cudaGetLastError();
}
void event_record(void* event, void* stream) {
  CUNUMPY_CUDA_CHECK(
      cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)));
}
bool event_query(void* event) {
  const cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  CUNUMPY_CUDA_CHECK(err);
  return true;
}
void event_synchronize(void* event) {
  CUNUMPY_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
}
void stream_wait_event(void* stream, void* event) {
  CUNUMPY_CUDA_CHECK(
      cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0));
}

void mem_get_info(std::size_t& free, std::size_t& total) {
  CUNUMPY_CUDA_CHECK(cudaMemGetInfo(&free, &total));
}

int shared_memory_per_block(bool opt_in) {
  int device = 0, value = 0;
  CUNUMPY_CUDA_CHECK(cudaGetDevice(&device));
  CUNUMPY_CUDA_CHECK(cudaDeviceGetAttribute(
      &value, opt_in ? cudaDevAttrMaxSharedMemoryPerBlockOptin : cudaDevAttrMaxSharedMemoryPerBlock,
      device));
  return value;
}

void* host_allocate(std::size_t bytes) {
  void* p = nullptr;
  CUNUMPY_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  return p;
}

void host_free(void* p) noexcept {
  if (cudaFreeHost(p) != cudaSuccess) (void)cudaGetLastError();
}

void copy_async(void* dst, const void* src, std::size_t bytes, Direction direction, void* stream) {
  const cudaMemcpyKind kind = direction == Direction::host_to_device   ? cudaMemcpyHostToDevice
                              : direction == Direction::device_to_host ? cudaMemcpyDeviceToHost
                                                                       : cudaMemcpyDeviceToDevice;
  CUNUMPY_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, static_cast<cudaStream_t>(stream)));
}

void copy(void* dst, const void* src, std::size_t bytes, Direction direction, void* stream) {
  copy_async(dst, src, bytes, direction, stream);
  CUNUMPY_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void device_synchronize() {
  CUNUMPY_CUDA_CHECK(cudaDeviceSynchronize());
}

void stream_synchronize(void* stream) {
  CUNUMPY_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void* library_load(const void* image) {
  cudaLibrary_t library = nullptr;
  CUNUMPY_CUDA_CHECK(
      cudaLibraryLoadData(&library, image, nullptr, nullptr, 0, nullptr, nullptr, 0));
  return library;
}

void library_unload(void* library) noexcept {
  if (library == nullptr) return;
  // Kernels of the library may still run or wait on a stream (the last handle on a kernel can
  // go while its launches are queued), and unloading a library under them is undefined
  // behaviour: the device finishes its work first.  A sticky error stays for the next check
  // to report; any other (the runtime shutting down at exit) is cleared.
  const cudaError_t synced = cudaDeviceSynchronize();
  if (synced != cudaSuccess && !cuda_error_is_sticky(synced)) (void)cudaGetLastError();
  if (cudaLibraryUnload(static_cast<cudaLibrary_t>(library)) != cudaSuccess)
    (void)cudaGetLastError();
}

void* library_kernel(void* library, const char* name) {
  cudaKernel_t kernel = nullptr;
  CUNUMPY_CUDA_CHECK(cudaLibraryGetKernel(&kernel, static_cast<cudaLibrary_t>(library), name));
  return kernel;
}

void* library_global(void* library, const char* name, std::size_t* bytes) {
  void* address = nullptr;
  std::size_t size = 0;
  const cudaError_t e =
      cudaLibraryGetGlobal(&address, &size, static_cast<cudaLibrary_t>(library), name);
  if (e == cudaErrorSymbolNotFound || e == cudaErrorInvalidSymbol) {
    (void)cudaGetLastError();
    return nullptr;
  }
  CUNUMPY_CUDA_CHECK(e);
  *bytes = size;
  return address;
}

void launch_kernel(void* kernel, const LaunchDims& d, void** args, std::size_t shared_mem,
                   void* stream, const char* name) {
  note_launch(name, d, stream);
  const dim3 grid(d.grid[0], d.grid[1], d.grid[2]), block(d.block[0], d.block[1], d.block[2]);
  CUNUMPY_CUDA_CHECK(cudaLaunchKernel(static_cast<const void*>(kernel), grid, block, args,
                                      shared_mem, static_cast<cudaStream_t>(stream)));
}

void set_max_dynamic_shared_memory(void* kernel, int bytes) {
  CUNUMPY_CUDA_CHECK(cudaFuncSetAttribute(static_cast<const void*>(kernel),
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

int compute_capability() {
  int device = 0, major = 0, minor = 0;
  CUNUMPY_CUDA_CHECK(cudaGetDevice(&device));
  CUNUMPY_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUNUMPY_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return 10 * major + minor;
}

void check_last_error(const char* what) {
  cuda_check(static_cast<int>(cudaGetLastError()), what, __FILE__, __LINE__);
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
