// Raw memory of the three backends (detail/memory.hpp).
#include <cunumpy/detail/memory.hpp>

#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <string>

#include <cunumpy/errors.hpp>

#include "cuda_api.hpp"
#include "emulated_arena.hpp"

namespace cunumpy::detail {
namespace {

constexpr std::size_t kHostAlignment = 64;

thread_local void* t_current_stream = nullptr;

void* host_allocate(std::size_t bytes) {
  const std::size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void* p = std::aligned_alloc(kHostAlignment, rounded == 0 ? kHostAlignment : rounded);
  if (p == nullptr)
    throw ValueError("host allocation of " + std::to_string(bytes) +
                     " bytes failed; reduce the problem size or free arrays");
  return p;
}

}  // namespace

namespace {
struct PinnedPool {
  std::mutex mutex;
  std::multimap<std::size_t, void*> free_blocks;  // by capacity
  std::map<void*, std::size_t> capacity;          // every block we own
  PinnedPoolStats stats;
};
PinnedPool& pinned_pool() {
  static PinnedPool* p = new PinnedPool;  // blocks may be released during static destruction
  return *p;
}
void pinned_system_free(void* p) {
  if (cuda_api::built_with_cuda() && cuda_available())
    cuda_api::host_free(p);
  else
    std::free(p);
}
void pinned_release(void* p) {
  PinnedPool& pool = pinned_pool();
  std::lock_guard lock(pool.mutex);
  const std::size_t cap = pool.capacity.at(p);
  pool.free_blocks.emplace(cap, p);
  pool.stats.cached_blocks += 1;
  pool.stats.cached_bytes += cap;
}
}  // namespace

std::shared_ptr<Allocation> pinned_allocate(std::size_t bytes) {
  PinnedPool& pool = pinned_pool();
  {
    std::lock_guard lock(pool.mutex);
    auto it = pool.free_blocks.lower_bound(bytes);
    // Reuse a cached block that fits without wasting more than half of it.
    if (it != pool.free_blocks.end() && it->first <= 2 * std::max<std::size_t>(bytes, 4096)) {
      void* p = it->second;
      pool.stats.cached_blocks -= 1;
      pool.stats.cached_bytes -= it->first;
      pool.stats.reuses += 1;
      pool.free_blocks.erase(it);
      return std::make_shared<Allocation>(p, bytes, Backend::host, true);
    }
  }
  const std::size_t cap = std::max<std::size_t>((bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment, kHostAlignment);
  void* p = (cuda_api::built_with_cuda() && cuda_available()) ? cuda_api::host_allocate(cap) : host_allocate(cap);
  std::lock_guard lock(pool.mutex);
  pool.capacity.emplace(p, cap);
  pool.stats.system_allocations += 1;
  return std::make_shared<Allocation>(p, bytes, Backend::host, true);
}

PinnedPoolStats pinned_pool_stats() {
  PinnedPool& pool = pinned_pool();
  std::lock_guard lock(pool.mutex);
  return pool.stats;
}

void release_pinned_pool() {
  PinnedPool& pool = pinned_pool();
  std::lock_guard lock(pool.mutex);
  for (auto& [cap, p] : pool.free_blocks) {
    pinned_system_free(p);
    pool.capacity.erase(p);
  }
  pool.free_blocks.clear();
  pool.stats.cached_blocks = 0;
  pool.stats.cached_bytes = 0;
}

Allocation::~Allocation() {
  if (pinned) {
    pinned_release(ptr);
    return;
  }
  switch (backend) {
    case Backend::host: std::free(ptr); break;
    case Backend::cuda: cuda_api::deallocate(ptr); break;
    case Backend::emulated: emulated_arena::deallocate(ptr); break;
  }
}

std::shared_ptr<Allocation> allocate(Backend backend, std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(std::numeric_limits<long long>::max()))
    throw ValueError("allocation of " + std::to_string(bytes) + " bytes is too large");
  void* p = nullptr;
  switch (backend) {
    case Backend::host: p = host_allocate(bytes); break;
    case Backend::emulated: p = emulated_arena::allocate(bytes); break;
    case Backend::cuda:
      if (!cuda_available())
        throw BackendError("allocation on the cuda backend: CUDA is unavailable (" +
                           cuda_unavailable_reason() +
                           "); use Backend::host or CUNUMPY_BACKEND=emulated");
      p = cuda_api::allocate(bytes);
      break;
  }
  return std::make_shared<Allocation>(p, bytes, backend);
}

void copy_memory(void* dst, Backend dst_backend, const void* src, Backend src_backend,
                 std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_backend != Backend::cuda && src_backend != Backend::cuda) {
    std::memcpy(dst, src, bytes);  // host and emulated memory are both host-addressable
    return;
  }
  using cuda_api::Direction;
  const Direction direction = src_backend != Backend::cuda  ? Direction::host_to_device
                              : dst_backend != Backend::cuda ? Direction::device_to_host
                                                             : Direction::device_to_device;
  cuda_api::copy(dst, src, bytes, direction, current_stream());
}

void* current_stream() noexcept { return t_current_stream; }
void set_current_stream(void* stream) noexcept { t_current_stream = stream; }

}  // namespace cunumpy::detail
