// cunumpy/detail/memory.hpp: raw memory of the three backends, used by Array<T>.
//
// Not a public interface: Array<T>, the transfers and the memory layer are built on it.
// Host memory is 64-byte aligned; cuda memory comes from the CUDA runtime; emulated device
// memory comes from the emulated device's own arena (separate mappings, tracked, never
// handed out through a host-access API).
#pragma once

#include <cstddef>
#include <memory>

#include <cunumpy/backend.hpp>
#include <cunumpy/dtype.hpp>

namespace cunumpy::detail {

// One allocation; frees itself through the backend that made it.
struct Allocation {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  Backend backend = Backend::host;  // host, cuda or emulated (device arena)
  bool pinned = false;              // host memory from the pinned pool (returned there)
  bool owned = true;                // false: memory of another library, never freed here
  bool cached = false;              // a large host block of the host cache (returned there)

  Allocation(void* p, std::size_t n, Backend b, bool pin = false, bool own = true)
      : ptr(p), bytes(n), backend(b), pinned(pin), owned(own) {}
  ~Allocation();
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;
};

// Allocates `bytes` on `backend` (0 bytes gives a valid, empty allocation).  Throws
// BackendError when the backend cannot be used (cuda without a device), ValueError for an
// impossible size.
std::shared_ptr<Allocation> allocate(Backend backend, std::size_t bytes);

// Memory that someone else owns (e.g. a host buffer of another library), wrapped without
// copying; it is never freed through cunumpy.
std::shared_ptr<Allocation> borrow(void* ptr, std::size_t bytes, Backend backend);

// Page-locked host memory for staging (cudaHostAlloc when a CUDA device is available, 64-byte
// aligned host memory otherwise), from a process-wide pool: a released block is kept and
// handed to the next request it fits, so staging buffers persist across calls.
std::shared_ptr<Allocation> pinned_allocate(std::size_t bytes);
struct BlockCacheStats {
  std::size_t cached_blocks = 0;   // free blocks kept for reuse
  std::size_t cached_bytes = 0;
  std::size_t system_allocations = 0;  // blocks obtained from the system so far
  std::size_t reuses = 0;              // requests served from the cache
};
using PinnedPoolStats = BlockCacheStats;
PinnedPoolStats pinned_pool_stats();
// Frees the cached (unused) blocks; blocks in use are kept until released.
void release_pinned_pool();
// Host arrays of 1 MiB and more are cached the same way when freed (reused by the next
// allocation they fit), so loops that allocate every step skip the page faults.
BlockCacheStats host_cache_stats();
void release_host_cache();

// Copies bytes between memory of any two backends, synchronously with respect to the host
// (a device->host copy has landed when it returns).  Uses the current stream on cuda.
void copy_memory(void* dst, Backend dst_backend, const void* src, Backend src_backend,
                 std::size_t bytes);

// Device-side fills for the cuda backend (host and emulated memory are filled in place by
// the templates of array.hpp).  `value`, `start` and `step` point to one element of `dtype`.
void cuda_fill(void* dst, DType dtype, long long count, const void* value);
void cuda_arange(void* dst, DType dtype, long long count, const void* start, const void* step);
void cuda_linspace(void* dst, DType dtype, long long count, double start, double step,
                   bool endpoint, double stop);

// Device pool control (cuda): memory freed by arrays stays cached in the stream-ordered pool
// up to the release threshold (default: keep everything until trimmed).
void set_device_pool_release_threshold(std::size_t bytes);
void trim_device_pool();

// The CUDA device's (free, total) memory and its shared memory per block (cuda only).
void cuda_memory_info(std::size_t& free, std::size_t& total);
int cuda_shared_memory_per_block(bool opt_in);

// Streams and events of the device backends, as opaque handles (cudaStream_t / cudaEvent_t on
// cuda, bookkeeping objects on emulated, where work completes as it is issued).
void* stream_create(Backend backend);
void stream_destroy(Backend backend, void* stream) noexcept;
void stream_synchronize(Backend backend, void* stream);
void* event_create(Backend backend);
void event_destroy(Backend backend, void* event) noexcept;
void event_record(Backend backend, void* event, void* stream);
bool event_query(Backend backend, void* event);  // true when complete; never waits
void event_synchronize(Backend backend, void* event);
void stream_wait_event(Backend backend, void* stream, void* event);
// Streams and events alive now (for leak tests).
long long live_streams() noexcept;
long long live_events() noexcept;
// An asynchronous copy on `stream` (synchronous on emulated).
void copy_memory_async(void* dst, Backend dst_backend, const void* src, Backend src_backend, std::size_t bytes,
                       void* stream);

// Whether `p` points into the emulated device arena (an allocation or one past its end).
bool emulated_arena_contains(const void* p) noexcept;
// Bytes currently allocated in the emulated arena, and the number of live allocations.
std::size_t emulated_arena_bytes() noexcept;
std::size_t emulated_arena_allocations() noexcept;

// The stream that device work is issued on now (a cudaStream_t; nullptr is the default
// stream).  Set by stream scopes; per thread.
void* current_stream() noexcept;
void set_current_stream(void* stream) noexcept;

}  // namespace cunumpy::detail
