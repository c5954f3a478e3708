// The memory layer's pools: the host cache of large blocks and the pinned staging pool, as
// memory resources over the core's system ones (memory.hpp, internal/memory_context.hpp).
#include <cunumpy/internal/memory_context.hpp>

#include <algorithm>
#include <map>
#include <mutex>

#include <cunumpy/arithmetic.cuh>
#include <cunumpy/internal/core_context.hpp>
#include <cunumpy/internal/cuda_api.hpp>
#include <cunumpy/internal/page_map.hpp>
#include <cunumpy/memory.hpp>

namespace cunumpy {
namespace detail {
namespace {

constexpr std::size_t kAlignment = 64;

// Host arrays from this size on come from (and return to) the host cache.
constexpr std::size_t kHostCacheMinimum = std::size_t{1} << 20;

}  // namespace

// Freed blocks kept for reuse, by capacity: a request takes the smallest cached block that
// holds it, unless that block is more than twice as large.  Requests below `minimum` bytes
// go straight to the upstream resource.  With `headroom`, a block of a huge page or more is
// obtained 1/32 larger than asked, in whole huge pages: the host's mapped pages cost memory
// only once touched, and arrays that come back a few rows longer (particle arrays after a
// migration, re-sorted every few steps) find the block freed before instead of mapping (and
// faulting in) a new one.
class CachingResource final : public MemoryResource {
 public:
  CachingResource(std::shared_ptr<MemoryResource> upstream, std::size_t minimum, bool headroom)
      : upstream_(std::move(upstream)), minimum_(minimum), headroom_(headroom) {}
  ~CachingResource() override { release(); }

  void* allocate(std::size_t bytes) override {
    if (bytes < minimum_) return upstream_->allocate(bytes);
    {
      std::lock_guard lock(mutex_);
      auto it = free_.lower_bound(bytes);
      if (it != free_.end() && it->first <= 2 * std::max<std::size_t>(bytes, 4096)) {
        void* p = it->second;
        stats_.cached_blocks -= 1;
        stats_.cached_bytes -= it->first;
        stats_.reuses += 1;
        free_.erase(it);
        return p;
      }
    }
    const std::size_t cap = headroom_ && bytes >= kHugePage
                                ? huge_length(bytes + bytes / 32)
                                : round_up(std::max<std::size_t>(bytes, 1), kAlignment);
    void* p = upstream_->allocate(cap);
    std::lock_guard lock(mutex_);
    capacity_.emplace(p, cap);
    stats_.system_allocations += 1;
    return p;
  }

  void deallocate(void* p, std::size_t bytes) noexcept override {
    if (bytes < minimum_) return upstream_->deallocate(p, bytes);
    std::lock_guard lock(mutex_);
    const std::size_t cap = capacity_.at(p);
    free_.emplace(cap, p);
    stats_.cached_blocks += 1;
    stats_.cached_bytes += cap;
  }

  void release() {
    std::lock_guard lock(mutex_);
    for (auto& [cap, p] : free_) {
      upstream_->deallocate(p, cap);
      capacity_.erase(p);
    }
    free_.clear();
    stats_.cached_blocks = 0;
    stats_.cached_bytes = 0;
  }

  MemoryPoolStats stats() {
    std::lock_guard lock(mutex_);
    return stats_;
  }

 private:
  std::shared_ptr<MemoryResource> upstream_;
  std::size_t minimum_;
  bool headroom_;
  std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;
  std::map<void*, std::size_t> capacity_;
  MemoryPoolStats stats_;
};

MemoryContext::MemoryContext(const MemoryResources& system)
    : host_cache(std::make_shared<CachingResource>(system[static_cast<int>(MemoryKind::host)],
                                                   kHostCacheMinimum, true)),
      pinned_pool(
          std::make_shared<CachingResource>(system[static_cast<int>(MemoryKind::pinned)], 0,
                                            false)),  // pinned pages are locked: no headroom
      resources(system) {
  resources[static_cast<int>(MemoryKind::host)] = host_cache;
  resources[static_cast<int>(MemoryKind::pinned)] = pinned_pool;
}

MemoryContext::MemoryContext() : MemoryContext(system_resources()) {}

void MemoryContext::release_cached() {
  host_cache->release();
  pinned_pool->release();
}

}  // namespace detail

MemoryPoolStats pinned_pool_stats() {
  return detail::memory_context().pinned_pool->stats();
}
MemoryPoolStats host_cache_stats() {
  return detail::memory_context().host_cache->stats();
}

void free_memory_pool() {
  if (cuda_available()) detail::cuda_api::trim_pool();
  detail::memory_context().release_cached();
}

void set_memory_pool_release_threshold(std::size_t bytes) {
  if (cuda_available()) detail::cuda_api::set_pool_release_threshold(bytes);
}

}  // namespace cunumpy
