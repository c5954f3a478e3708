// cunumpy/internal/cuda_api.hpp: the one door to the CUDA runtime (library-internal).
//
// Implemented by cuda_api.cpp (built with CUDA) or cuda_api_none.cpp (built without), so
// that no other host-compiled file of the library includes CUDA headers or needs #ifs.  The
// layers above the core reach the CUDA runtime only through here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cunumpy::detail::cuda_api {

// Whether this build has the CUDA runtime at all.
bool built_with_cuda() noexcept;

// Asks the runtime for the visible devices.  On failure count is 0 and reason says why.
struct Probe {
  int count = 0;
  std::string reason;
};
Probe probe();

void* allocate(std::size_t bytes);
void deallocate(void* p) noexcept;
// Page-locked host memory.
void* host_allocate(std::size_t bytes);
void host_free(void* p) noexcept;

void set_pool_release_threshold(std::size_t bytes);
void trim_pool();

void* stream_create();
void stream_destroy(void* stream) noexcept;
// Events without timing unless `timing` (cudaEventDisableTiming otherwise).
void* event_create(bool timing);
// Milliseconds between two completed timing events, in seconds.
double event_elapsed_seconds(void* start, void* end);
void event_destroy(void* event) noexcept;
void event_record(void* event, void* stream);
bool event_query(void* event);
void event_synchronize(void* event);
void stream_wait_event(void* stream, void* event);

// (free, total) bytes of the current device.
void mem_get_info(std::size_t& free, std::size_t& total);
int shared_memory_per_block(bool opt_in);

enum class Direction { host_to_device, device_to_host, device_to_device };
void copy_async(void* dst, const void* src, std::size_t bytes, Direction direction, void* stream);
// Copies on `stream` and waits for it: the data has landed when this returns.
void copy(void* dst, const void* src, std::size_t bytes, Direction direction, void* stream);
void device_synchronize();
void stream_synchronize(void* stream);

// Run-time compiled kernels: a CUBIN image loaded as a library (cudaLibraryLoadData, so no
// layer links the driver library), its kernels, their launch and attributes.
void* library_load(const void* image);
// Unloads after the device has finished its work (launches from the library may be in flight).
void library_unload(void* library) noexcept;
void* library_kernel(void* library, const char* name);
// A module-scope variable (__constant__ or __device__) of a library: its device address, and
// its size in `bytes`; nullptr when the library has no variable of that name.
void* library_global(void* library, const char* name, std::size_t* bytes);
struct LaunchDims {
  unsigned int grid[3];
  unsigned int block[3];
};
// Launches `kernel`, named `name` (recorded for the message of a later asynchronous error).
void launch_kernel(void* kernel, const LaunchDims& dims, void** args, std::size_t shared_mem,
                   void* stream, const char* name);
// The process's most recent kernel launches (the last four: name, grid, block, stream): a
// sticky error surfaces at a later call, whose message lists them, newest first.  Recorded by
// launch_kernel, and by parallel_for / parallel_reduce (note_kernel_launch in cuda_check.hpp).
void note_launch(std::string_view name, const LaunchDims& dims, void* stream) noexcept;
// "'push' with grid (4, 1, 1) and block (128, 1, 1) on stream 0x..; ..." (empty: none).
std::string recent_launches();
// Lets `kernel` use up to `bytes` of dynamic shared memory (above the default 48 KiB).
void set_max_dynamic_shared_memory(void* kernel, int bytes);
// The current device's compute capability as major * 10 + minor (90 for an H100/H200).
int compute_capability();
// The last launch's error (cudaGetLastError), thrown as CudaError naming `what`.
void check_last_error(const char* what);

// Selects the device and creates its primary context.
void set_device(int id);
int current_device();

}  // namespace cunumpy::detail::cuda_api
