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

  Allocation(void* p, std::size_t n, Backend b, bool pin = false)
      : ptr(p), bytes(n), backend(b), pinned(pin) {}
  ~Allocation();
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;
};

// Allocates `bytes` on `backend` (0 bytes gives a valid, empty allocation).  Throws
// BackendError when the backend cannot be used (cuda without a device), ValueError for an
// impossible size.
std::shared_ptr<Allocation> allocate(Backend backend, std::size_t bytes);

// Page-locked host memory for staging (cudaHostAlloc when a CUDA device is available, 64-byte
// aligned host memory otherwise), from a process-wide pool: a released block is kept and
// handed to the next request it fits, so staging buffers persist across calls.
std::shared_ptr<Allocation> pinned_allocate(std::size_t bytes);
struct PinnedPoolStats {
  std::size_t cached_blocks = 0;   // free blocks kept for reuse
  std::size_t cached_bytes = 0;
  std::size_t system_allocations = 0;  // blocks obtained from the system so far
  std::size_t reuses = 0;              // requests served from the cache
};
PinnedPoolStats pinned_pool_stats();
// Frees the cached (unused) blocks; blocks in use are kept until released.
void release_pinned_pool();

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
