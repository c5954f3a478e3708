// Memory running out inside the host sort's parallel region reaches the caller as an
// exception (it may not leave an OpenMP region: it used to end the program), and the next
// sort works.  This program replaces the global operator new: once armed, it refuses every
// allocation of kRefused bytes or more.  The sort allocates that much through operator new
// only inside its region: the arrays come from the host allocator's own blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <numeric>
#include <random>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace {
std::atomic<bool> g_armed{false};
constexpr std::size_t kRefused = std::size_t{1} << 20;
}  // namespace

// The whole family is replaced (plain, array, sized, aligned, nothrow), so that every new
// and delete pairs with its own kind: a sanitizer sees no alloc-dealloc mismatch.
namespace {
void* allocate(std::size_t bytes, std::size_t alignment) {
  if (g_armed.load() && bytes >= kRefused) throw std::bad_alloc();
  if (bytes == 0) bytes = 1;
  void* p = alignment <= alignof(std::max_align_t)
                ? std::malloc(bytes)
                : std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t bytes) {
  return allocate(bytes, 0);
}
void* operator new[](std::size_t bytes) {
  return allocate(bytes, 0);
}
void* operator new(std::size_t bytes, std::align_val_t a) {
  return allocate(bytes, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t bytes, std::align_val_t a) {
  return allocate(bytes, static_cast<std::size_t>(a));
}
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return allocate(bytes, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept {
  try {
    return allocate(bytes, 0);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}

namespace cn = cunumpy;

TEST(SortFailure, OutOfMemoryInsideTheHostSortIsAnExceptionAndTheNextSortWorks) {
  // 2^20 keys: half of them one value (one group the counting passes cannot split: the sort
  // takes memory of its size, 4 MB, for it), half spread.
  const long long n = 1 << 20;
  std::mt19937_64 g(7);
  std::vector<std::uint64_t> host(static_cast<std::size_t>(n));
  for (auto& k : host) k = (g() & 1) != 0 ? 0x123456789ULL : g() >> 20;
  const auto keys = cn::from_host<std::uint64_t>(host, cn::Shape{n}, cn::Backend::host);
  const auto payload = cn::arange<std::int64_t>(0, n, 1, cn::Backend::host);

  g_armed = true;
  EXPECT_THROW((void)cn::sort_by_key(keys, payload), std::bad_alloc);
  g_armed = false;

  const auto [sorted, order, moved] = cn::sort_by_key(keys, payload);
  std::vector<std::int64_t> expected(static_cast<std::size_t>(n));
  std::iota(expected.begin(), expected.end(), 0);
  std::stable_sort(expected.begin(), expected.end(), [&](auto a, auto b) {
    return host[static_cast<std::size_t>(a)] < host[static_cast<std::size_t>(b)];
  });
  const auto o = cn::to_host(order);
  const auto m = cn::to_host(moved);
  long long wrong = 0;
  for (long long i = 0; i < n; ++i)
    wrong += o(i) != expected[static_cast<std::size_t>(i)] ||
             m(i) != expected[static_cast<std::size_t>(i)];
  EXPECT_EQ(wrong, 0);
}
