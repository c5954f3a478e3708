#include <cunumpy/internal/emulated_arena.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include <cunumpy/arithmetic.cuh>
#include <cunumpy/backend.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/internal/emulated_stream.hpp>
#include <cunumpy/internal/page_map.hpp>
#include <cunumpy/memory_block.hpp>

#if defined(__SANITIZE_ADDRESS__)
#define CUNUMPY_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUNUMPY_ARENA_ASAN 1
#endif
#endif
#if defined(CUNUMPY_ARENA_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace cunumpy::detail {
namespace {

// Under AddressSanitizer the bytes of a block past the array's end (up to the page's) are
// poisoned, so a kernel that runs past an emulated device array's end (the emulator's kernels
// are sanitized in such a build) is reported at its line, not silently written.
void poison_tail(void* p, std::size_t bytes, std::size_t mapped) noexcept {
#if defined(CUNUMPY_ARENA_ASAN)
  if (mapped > bytes) ASAN_POISON_MEMORY_REGION(static_cast<char*>(p) + bytes, mapped - bytes);
#else
  (void)p, (void)bytes, (void)mapped;
#endif
}
void unpoison(void* p, std::size_t mapped) noexcept {
#if defined(CUNUMPY_ARENA_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(p, mapped);
#else
  (void)p, (void)mapped;
#endif
}

struct Arena {
  std::mutex mutex;
  struct Block {
    std::size_t requested;
    std::size_t mapped;  // the mapping's length (with the guard page, where there is one)
    char* base;          // the mapping's start
    bool guard = false;  // the last page of the mapping is the guard
  };
  std::map<const char*, Block> blocks;  // by start address
  std::size_t bytes = 0;
};

Arena& arena() {
  static Arena* a = new Arena;  // outlives arrays destroyed during static destruction
  return *a;
}

// The block that starts at `c` or last before it, else end(); the caller holds the mutex.
std::map<const char*, Arena::Block>::const_iterator block_before(const Arena& a, const char* c) {
  auto it = a.blocks.upper_bound(c);
  return it == a.blocks.begin() ? a.blocks.end() : std::prev(it);
}

std::size_t page_size() {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return page;
}
std::size_t page_round(std::size_t bytes) {
  return round_up(bytes == 0 ? std::size_t{1} : bytes, page_size());
}

std::atomic<bool> g_any_guarded{false};
thread_local bool* t_debug_scope = nullptr;

// Debug mode's allocation: the data end at a guard page (PROT_NONE), start 16-byte aligned.
void* allocate_guarded(std::size_t bytes) {
  const std::size_t data = page_round(bytes), length = data + page_size();
  void* m = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED)
    throw BackendError("emulated device: cannot allocate " + std::to_string(bytes) + " bytes (" +
                       std::strerror(errno) + "); free device arrays or use a smaller problem");
  char* base = static_cast<char*>(m);
  if (mprotect(base + data, page_size(), PROT_NONE) != 0) {
    const int e = errno;
    munmap(m, length);
    throw BackendError(std::string("emulated device: cannot protect a guard page (") +
                       std::strerror(e) + ")");
  }
  char* p = base + data - round_up(bytes, std::size_t{16});
  Arena& a = arena();
  std::lock_guard lock(a.mutex);
  a.blocks.emplace(p, Arena::Block{bytes, length, base, true});
  a.bytes += bytes;
  g_any_guarded.store(true);
  return p;
}

}  // namespace

namespace emulated_arena {

std::atomic<bool>& debug_default() noexcept {
  static std::atomic<bool> flag{parse_flag(std::getenv("CUNUMPY_CUDA_DEBUG")).value_or(false)};
  return flag;
}
bool*& debug_scope() noexcept {
  return t_debug_scope;
}
bool debug_now() noexcept {
  if (t_debug_scope != nullptr) return *t_debug_scope;
  return debug_default().load();
}
bool any_guarded() noexcept {
  return g_any_guarded.load(std::memory_order_relaxed);
}
bool guarded_by(const void* address, const void*& start, std::size_t& bytes) noexcept {
  Arena& a = arena();
  const auto* c = static_cast<const char*>(address);
  std::lock_guard lock(a.mutex);
  const auto it = block_before(a, c);
  if (it == a.blocks.end()) return false;
  const Arena::Block& b = it->second;
  if (!b.guard || c < b.base + b.mapped - page_size() || c >= b.base + b.mapped) return false;
  start = it->first;
  bytes = b.requested;
  return true;
}

void* allocate(std::size_t bytes) {
  if (debug_now()) return allocate_guarded(bytes);
  // Large blocks on transparent huge pages, as host arrays are (so the emulated device's
  // kernels see the host's TLB behaviour).
  const bool huge = bytes >= kHugePage;
  const std::size_t mapped = huge ? huge_length(bytes) : page_round(bytes);
  void* p = huge
                ? map_huge(bytes)
                : mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (huge && p == nullptr) p = MAP_FAILED;
  if (p == MAP_FAILED)
    throw BackendError("emulated device: cannot allocate " + std::to_string(bytes) + " bytes (" +
                       std::strerror(errno) + "); free device arrays or use a smaller problem");
  poison_tail(p, bytes, mapped);
  Arena& a = arena();
  std::lock_guard lock(a.mutex);
  a.blocks.emplace(static_cast<const char*>(p), Arena::Block{bytes, mapped, static_cast<char*>(p)});
  a.bytes += bytes;
  return p;
}

void deallocate(void* p) noexcept {
  if (p == nullptr) return;
  Arena& a = arena();
  std::size_t mapped = 0;
  char* base = nullptr;
  {
    std::lock_guard lock(a.mutex);
    auto it = a.blocks.find(static_cast<const char*>(p));
    if (it == a.blocks.end()) return;
    mapped = it->second.mapped;
    base = it->second.base;
    a.bytes -= it->second.requested;
    a.blocks.erase(it);
  }
  // Work still queued on an emulated stream may read the memory (as a kernel may on a GPU):
  // it is unmapped after that work, never under it.
  auto release = [base, mapped] {
    unpoison(base, mapped);  // the addresses may be mapped again, for anything
    munmap(base, mapped);
  };
  try {
    if (emulated::after_pending_work(release)) return;
  } catch (...) {
  }
  release();
}

}  // namespace emulated_arena

bool emulated_arena_contains(const void* p) noexcept {
  Arena& a = arena();
  const auto* c = static_cast<const char*>(p);
  std::lock_guard lock(a.mutex);
  const auto it = block_before(a, c);
  return it != a.blocks.end() && c <= it->first + it->second.requested;
}

std::size_t emulated_arena_allocations() noexcept {
  Arena& a = arena();
  std::lock_guard lock(a.mutex);
  return a.blocks.size();
}

std::size_t emulated_arena_bytes() noexcept {
  Arena& a = arena();
  std::lock_guard lock(a.mutex);
  return a.bytes;
}

}  // namespace cunumpy::detail
