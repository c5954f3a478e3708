// cuda_api.hpp and cuda_check.hpp for a build without CUDA: the probe explains why there is
// no device, and nothing else is reachable (the cuda backend cannot be selected).
#include <cunumpy/internal/cuda_api.hpp>

#include <string>

#include <cunumpy/cuda_check.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/memory_block.hpp>

namespace cunumpy::detail {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw BackendError(std::string(what) +
                     ": cunumpy was built without CUDA (CUNUMPY_ENABLE_CUDA=OFF or no CUDA "
                     "toolkit at configure time); rebuild with -DCUNUMPY_ENABLE_CUDA=ON, or use "
                     "Backend::host or CUNUMPY_BACKEND=emulated");
}
}  // namespace

const char* cuda_error_name(int) noexcept {
  return "CUDA error (cunumpy built without CUDA)";
}
bool cuda_error_is_sticky(int) noexcept {
  return false;
}
void cuda_check(int code, const char* call, const char* file, int line) {
  if (code == 0) return;
  throw CudaError(std::string("CUDA error ") + std::to_string(code) + "\n  in " + call + "\n  at " +
                      file + ":" + std::to_string(line),
                  code);
}

void cuda_fill(void*, DType, long long, const void*) {
  no_cuda("cuda_fill");
}
void cuda_arange(void*, DType, long long, const void*, const void*) {
  no_cuda("cuda_arange");
}
void cuda_linspace(void*, DType, long long, double, double, bool, double) {
  no_cuda("cuda_linspace");
}

namespace cuda_api {
bool built_with_cuda() noexcept {
  return false;
}
Probe probe() {
  return {0, "built without CUDA (CUNUMPY_ENABLE_CUDA=OFF or no CUDA toolkit at configure time)"};
}
void* allocate(std::size_t) {
  no_cuda("cuda allocation");
}
void deallocate(void*) noexcept {}
void* host_allocate(std::size_t) {
  no_cuda("pinned allocation");
}
void host_free(void*) noexcept {}
void copy(void*, const void*, std::size_t, Direction, void*) {
  no_cuda("cuda copy");
}
void copy_async(void*, const void*, std::size_t, Direction, void*) {
  no_cuda("cuda copy");
}
void set_pool_release_threshold(std::size_t) {
  no_cuda("device pool");
}
void trim_pool() {
  no_cuda("device pool");
}
void* stream_create() {
  no_cuda("cuda stream");
}
void stream_destroy(void*) noexcept {}
void* event_create(bool) {
  no_cuda("cuda event");
}
void* library_load(const void*) {
  no_cuda("loading a compiled kernel");
}
void library_unload(void*) noexcept {}
void* library_kernel(void*, const char*) {
  no_cuda("loading a compiled kernel");
}
void* library_global(void*, const char*, std::size_t*) {
  no_cuda("a kernel's module data");
}
void launch_kernel(void*, const LaunchDims&, void**, std::size_t, void*, const char*) {
  no_cuda("a kernel launch");
}
void set_max_dynamic_shared_memory(void*, int) {
  no_cuda("a kernel attribute");
}
int compute_capability() {
  no_cuda("the compute capability");
}
void check_last_error(const char*) {}
double event_elapsed_seconds(void*, void*) {
  no_cuda("cuda event");
}
void event_destroy(void*) noexcept {}
void event_record(void*, void*) {
  no_cuda("cuda event");
}
bool event_query(void*) {
  no_cuda("cuda event");
}
void event_synchronize(void*) {
  no_cuda("cuda event");
}
void stream_wait_event(void*, void*) {
  no_cuda("cuda event");
}
void mem_get_info(std::size_t&, std::size_t&) {
  no_cuda("memory_info");
}
int shared_memory_per_block(bool) {
  no_cuda("max_shared_memory_per_block");
}
void device_synchronize() {
  no_cuda("cuda synchronize");
}
void stream_synchronize(void*) {
  no_cuda("cuda stream synchronize");
}
void set_device(int) {
  no_cuda("set_device");
}
int current_device() {
  return 0;
}
}  // namespace cuda_api
}  // namespace cunumpy::detail
