// Raw memory of the three backends (detail/memory.hpp).
#include <cunumpy/detail/memory.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <atomic>
#include <limits>
#include <map>
#include <mutex>
#include <string>

#include <sys/mman.h>

#include <cunumpy/errors.hpp>

#include "cuda_api.hpp"
#include "emulated_arena.hpp"

namespace cunumpy::detail {
namespace {

constexpr std::size_t kHostAlignment = 64;

thread_local void* t_current_stream = nullptr;

// Blocks from this size on get a mapping of their own, backed by transparent huge pages where
// the kernel allows them (THP in "madvise" mode, Debian's default): a sort or a gather over
// arrays of many megabytes then takes one TLB entry per 2 MiB instead of per 4 KiB.  They are
// mapped rather than taken from malloc so that the huge-page advice never reaches the malloc
// heap, whose top is trimmed and regrown as small blocks come and go.
constexpr std::size_t kHugePage = std::size_t{2} << 20;

void* map_huge(std::size_t bytes) {
  const std::size_t length = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  // One extra huge page of address space, so that a 2 MiB-aligned start can be cut out of it.
  void* raw = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) munmap(raw, aligned - start);
  const std::uintptr_t tail = start + length + kHugePage - (aligned + length);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + length), tail);
  void* p = reinterpret_cast<void*>(aligned);
  (void)madvise(p, length, MADV_HUGEPAGE);  // advice only: without THP the block is plain pages
  return p;
}

void* host_allocate(std::size_t bytes) {
  void* p = nullptr;
  if (bytes >= kHugePage) {
    p = map_huge(bytes);
  } else {
    const std::size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
    p = std::aligned_alloc(kHostAlignment, rounded == 0 ? kHostAlignment : rounded);
  }
  if (p == nullptr)
    throw ValueError("host allocation of " + std::to_string(bytes) +
                     " bytes failed; reduce the problem size or free arrays");
  return p;
}

// Frees a block of host_allocate(bytes) (the same `bytes`).
void host_free(void* p, std::size_t bytes) {
  if (bytes >= kHugePage)
    munmap(p, (bytes + kHugePage - 1) / kHugePage * kHugePage);
  else
    std::free(p);
}

}  // namespace

namespace {

// Freed blocks kept for reuse, by capacity: a request takes the smallest cached block that
// holds it, unless that block is more than twice as large.  Used for pinned staging memory
// and for large host arrays (so a time loop that allocates the same arrays every step does
// not pay the operating system's page faults every step).
class BlockCache {
 public:
  BlockCache(void* (*system_allocate)(std::size_t), void (*system_free)(void*, std::size_t))
      : system_allocate_(system_allocate), system_free_(system_free) {}

  void* take(std::size_t bytes) {
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
    const std::size_t cap = std::max<std::size_t>((bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment,
                                                  kHostAlignment);
    void* p = system_allocate_(cap);
    std::lock_guard lock(mutex_);
    capacity_.emplace(p, cap);
    stats_.system_allocations += 1;
    return p;
  }

  void put(void* p) {
    std::lock_guard lock(mutex_);
    const std::size_t cap = capacity_.at(p);
    free_.emplace(cap, p);
    stats_.cached_blocks += 1;
    stats_.cached_bytes += cap;
  }

  void release() {
    std::lock_guard lock(mutex_);
    for (auto& [cap, p] : free_) {
      system_free_(p, cap);
      capacity_.erase(p);
    }
    free_.clear();
    stats_.cached_blocks = 0;
    stats_.cached_bytes = 0;
  }

  BlockCacheStats stats() {
    std::lock_guard lock(mutex_);
    return stats_;
  }

 private:
  void* (*system_allocate_)(std::size_t);
  void (*system_free_)(void*, std::size_t);
  std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;
  std::map<void*, std::size_t> capacity_;
  BlockCacheStats stats_;
};

bool pin_with_cuda() { return cuda_api::built_with_cuda() && cuda_available(); }
void* pinned_system_allocate(std::size_t bytes) {
  return pin_with_cuda() ? cuda_api::host_allocate(bytes) : host_allocate(bytes);
}
void pinned_system_free(void* p, std::size_t bytes) {
  if (pin_with_cuda())
    cuda_api::host_free(p);
  else
    host_free(p, bytes);
}

// Blocks may be released during static destruction: the caches are never destroyed.
BlockCache& pinned_cache() {
  static BlockCache* c = new BlockCache(pinned_system_allocate, pinned_system_free);
  return *c;
}
BlockCache& host_cache() {
  static BlockCache* c = new BlockCache(host_allocate, host_free);
  return *c;
}

// Host arrays from this size on come from (and return to) the host cache.
constexpr std::size_t kHostCacheMinimum = std::size_t{1} << 20;

}  // namespace

std::shared_ptr<Allocation> pinned_allocate(std::size_t bytes) {
  auto a = std::make_shared<Allocation>(pinned_cache().take(bytes), bytes, Backend::host, true);
  return a;
}
BlockCacheStats pinned_pool_stats() { return pinned_cache().stats(); }
void release_pinned_pool() { pinned_cache().release(); }
BlockCacheStats host_cache_stats() { return host_cache().stats(); }
void release_host_cache() { host_cache().release(); }

std::shared_ptr<Allocation> borrow(void* ptr, std::size_t bytes, Backend backend) {
  return std::make_shared<Allocation>(ptr, bytes, backend, false, false);
}

Allocation::~Allocation() {
  if (!owned) return;
  if (pinned) {
    pinned_cache().put(ptr);
    return;
  }
  if (cached) {
    host_cache().put(ptr);
    return;
  }
  switch (backend) {
    case Backend::host: host_free(ptr, bytes); break;
    case Backend::cuda: cuda_api::deallocate(ptr); break;
    case Backend::emulated: emulated_arena::deallocate(ptr); break;
  }
}

std::shared_ptr<Allocation> allocate(Backend backend, std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(std::numeric_limits<long long>::max()))
    throw ValueError("allocation of " + std::to_string(bytes) + " bytes is too large");
  void* p = nullptr;
  switch (backend) {
    case Backend::host:
      if (bytes >= kHostCacheMinimum) {
        auto a = std::make_shared<Allocation>(host_cache().take(bytes), bytes, Backend::host);
        a->cached = true;
        return a;
      }
      p = host_allocate(bytes);
      break;
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

namespace {
// The CUDA copy kind of a transfer in which at least one side is on cuda.
cuda_api::Direction direction(Backend dst_backend, Backend src_backend) {
  using cuda_api::Direction;
  return src_backend != Backend::cuda   ? Direction::host_to_device
         : dst_backend != Backend::cuda ? Direction::device_to_host
                                        : Direction::device_to_device;
}
}  // namespace

void copy_memory(void* dst, Backend dst_backend, const void* src, Backend src_backend,
                 std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_backend != Backend::cuda && src_backend != Backend::cuda) {
    std::memcpy(dst, src, bytes);  // host and emulated memory are both host-addressable
    return;
  }
  cuda_api::copy(dst, src, bytes, direction(dst_backend, src_backend), current_stream());
}

void copy_memory_async(void* dst, Backend dst_backend, const void* src, Backend src_backend, std::size_t bytes,
                       void* stream) {
  if (bytes == 0) return;
  if (dst_backend != Backend::cuda && src_backend != Backend::cuda) {
    std::memcpy(dst, src, bytes);  // the emulated device completes work as it is issued
    return;
  }
  cuda_api::copy_async(dst, src, bytes, direction(dst_backend, src_backend), stream);
}

void cuda_memory_info(std::size_t& free, std::size_t& total) { cuda_api::mem_get_info(free, total); }
int cuda_shared_memory_per_block(bool opt_in) { return cuda_api::shared_memory_per_block(opt_in); }

void set_device_pool_release_threshold(std::size_t bytes) {
  if (cuda_available()) cuda_api::set_pool_release_threshold(bytes);
}

void trim_device_pool() {
  if (cuda_available()) cuda_api::trim_pool();
}

namespace {
std::atomic<long long> g_live_streams{0};
std::atomic<long long> g_live_events{0};
// Emulated streams and events: distinct objects, so handles are unique and non-null.
struct EmulatedHandle {
  int kind;
};
void require_device(Backend backend, const char* what) {
  if (backend == Backend::host)
    throw BackendError(std::string(what) + ": the host backend has no streams or events");
}
}  // namespace

void* stream_create(Backend backend) {
  require_device(backend, "stream_create");
  void* s = backend == Backend::cuda ? cuda_api::stream_create() : new EmulatedHandle{1};
  ++g_live_streams;
  return s;
}
void stream_destroy(Backend backend, void* stream) noexcept {
  if (stream == nullptr) return;
  if (backend == Backend::cuda)
    cuda_api::stream_destroy(stream);
  else
    delete static_cast<EmulatedHandle*>(stream);
  --g_live_streams;
}
void stream_synchronize(Backend backend, void* stream) {
  if (backend == Backend::cuda) cuda_api::stream_synchronize(stream);
}
void* event_create(Backend backend) {
  require_device(backend, "event_create");
  void* e = backend == Backend::cuda ? cuda_api::event_create() : new EmulatedHandle{2};
  ++g_live_events;
  return e;
}
void event_destroy(Backend backend, void* event) noexcept {
  if (event == nullptr) return;
  if (backend == Backend::cuda)
    cuda_api::event_destroy(event);
  else
    delete static_cast<EmulatedHandle*>(event);
  --g_live_events;
}
void event_record(Backend backend, void* event, void* stream) {
  if (backend == Backend::cuda) cuda_api::event_record(event, stream);
}
bool event_query(Backend backend, void* event) {
  return backend == Backend::cuda ? cuda_api::event_query(event) : true;
}
void event_synchronize(Backend backend, void* event) {
  if (backend == Backend::cuda) cuda_api::event_synchronize(event);
}
void stream_wait_event(Backend backend, void* stream, void* event) {
  if (backend == Backend::cuda) cuda_api::stream_wait_event(stream, event);
}
long long live_streams() noexcept { return g_live_streams.load(); }
long long live_events() noexcept { return g_live_events.load(); }

void* current_stream() noexcept { return t_current_stream; }
void set_current_stream(void* stream) noexcept { t_current_stream = stream; }

}  // namespace cunumpy::detail
