// The memory layer on host and on the emulated device: pools, memory info, pin_memory,
// as_device_array, streams, HostStaging, DeviceMirror.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/internal/core_context.hpp>

#include "on_backend.hpp"

namespace cn = cunumpy;

namespace {
std::string here(int line) {
  return std::string(__FILE__) + ":" + std::to_string(line);
}

using OnEmulated = cn::testing::OnEmulated;
}  // namespace

TEST(Pools, PinnedBlocksAreReusedAndReleased) {
  cn::free_memory_pool();
  const auto start = cn::pinned_pool_stats();
  EXPECT_EQ(start.cached_blocks, 0u);
  void* first = nullptr;
  {
    auto a = cn::allocate_block(cn::MemoryKind::pinned, 10000);
    first = a->data();
  }
  EXPECT_EQ(cn::pinned_pool_stats().cached_blocks, 1u);
  {
    auto b = cn::allocate_block(cn::MemoryKind::pinned, 9000);  // fits the cached block
    EXPECT_EQ(b->data(), first);
    auto c =
        cn::allocate_block(cn::MemoryKind::pinned, 9000);  // the cached block is taken: a new one
    EXPECT_NE(c->data(), first);
  }
  const auto after = cn::pinned_pool_stats();
  EXPECT_EQ(after.reuses, start.reuses + 1);
  EXPECT_EQ(after.system_allocations, start.system_allocations + 2);
  cn::free_memory_pool();
  EXPECT_EQ(cn::pinned_pool_stats().cached_blocks, 0u);
  EXPECT_EQ(cn::pinned_pool_stats().cached_bytes, 0u);
}

// Host blocks of 2 MiB and more are mapped on 2 MiB boundaries (huge pages where the kernel
// allows them), cached when freed, and unmapped when the cache is released; smaller blocks
// come from malloc.
TEST(Pools, LargeHostBlocksAreHugePageAlignedCachedAndReleased) {
  cn::free_memory_pool();
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  void* first = nullptr;
  {
    auto big = cn::allocate_block(cn::MemoryKind::host, 3 * kHuge + 100);
    first = big->data();
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big->data()) % kHuge, 0u);
    std::memset(big->data(), 0x5A, 3 * kHuge + 100);  // every byte of it is usable
    auto small = cn::allocate_block(cn::MemoryKind::host, 1000);
    static_cast<char*>(small->data())[999] = 1;
  }
  EXPECT_EQ(cn::host_cache_stats().cached_blocks, 1u);
  {
    auto again = cn::allocate_block(cn::MemoryKind::host, 3 * kHuge);
    EXPECT_EQ(again->data(), first);
  }
  {
    auto pinned = cn::allocate_block(cn::MemoryKind::pinned,
                                     kHuge + 1);  // page-locked with CUDA, else a mapped block
    static_cast<char*>(pinned->data())[kHuge] = 1;
  }
  cn::free_memory_pool();
  EXPECT_EQ(cn::host_cache_stats().cached_blocks, 0u);
  EXPECT_EQ(cn::pinned_pool_stats().cached_blocks, 0u);
  auto after = cn::allocate_block(cn::MemoryKind::host, 3 * kHuge);  // a fresh mapping works
  static_cast<char*>(after->data())[3 * kHuge - 1] = 1;
}

// Particle arrays come back a few rows longer after a migration: the block freed by the
// previous (shorter) array is found again instead of a fresh mapping that every page of must
// fault in (a re-sort every few steps was several times slower on the rank whose count grew).
TEST(Pools, ABlockAFewRowsLongerThanTheFreedOneReusesIt) {
  cn::free_memory_pool();
  constexpr std::size_t kRows = std::size_t{4718592};  // 36 MiB of doubles: whole huge pages
  void* first = nullptr;
  {
    auto a = cn::allocate_block(cn::MemoryKind::host, kRows * sizeof(double));
    first = a->data();
  }
  const cn::MemoryPoolStats before = cn::host_cache_stats();
  {
    auto b = cn::allocate_block(cn::MemoryKind::host, (kRows + 14) * sizeof(double));
    EXPECT_EQ(b->data(), first);
    static_cast<double*>(b->data())[kRows + 13] = 1.0;  // the longer block is usable whole
  }
  const cn::MemoryPoolStats after = cn::host_cache_stats();
  EXPECT_EQ(after.system_allocations, before.system_allocations);
  EXPECT_EQ(after.reuses, before.reuses + 1);
  cn::free_memory_pool();
}

TEST(MemoryInfo, HostHasNoneEmulatedReportsTheMachine) {
  EXPECT_FALSE(cn::memory_info().has_value());
  auto e = cn::use_backend(cn::Backend::emulated);
  const auto info = cn::memory_info();
  ASSERT_TRUE(info.has_value());
  EXPECT_GT(info->total, 0u);
  EXPECT_LE(info->free, info->total);
  EXPECT_EQ(cn::max_shared_memory_per_block(), 48 * 1024);
  EXPECT_EQ(cn::max_shared_memory_per_block(true), 227 * 1024) << "the emulated device is an sm_90";
  auto h = cn::use_backend(cn::Backend::host);
  if (!cn::cuda_available()) {
    EXPECT_EQ(cn::max_shared_memory_per_block(true), 48 * 1024);
  }
}

TEST(PinMemory, ErrorsAndCopies) {
  auto h = cn::arange<double>(0.0, 5.0, 1.0, cn::Backend::host);
  if (!cn::cuda_available()) {
    try {
      (void)cn::pin_memory(h);
      FAIL() << "host backend without CUDA: BackendError";
    } catch (const cn::BackendError& e) {
      EXPECT_NE(std::string(e.what()).find("no CUDA runtime to pin memory with"), std::string::npos)
          << e.what();
    }
  }
  auto e = cn::use_backend(cn::Backend::emulated);
  auto p = cn::pin_memory(h);
  EXPECT_TRUE(p.is_pinned());
  EXPECT_TRUE(p.is_host());
  EXPECT_FALSE(p.shares_memory_with(h));
  EXPECT_EQ(p(4), 4.0);
  auto d = cn::zeros<double>({2});
  EXPECT_THROW((void)cn::pin_memory(d), cn::BackendError);
}

TEST(AsDeviceArray, ReferenceOrCopyOnce) {
  auto h = cn::arange<double>(0.0, 6.0, 1.0, cn::Backend::host);
  EXPECT_THROW((void)cn::as_device_array(h, 1, "markers"), cn::BackendError) << "host backend";
  auto e = cn::use_backend(cn::Backend::emulated);
  auto d = cn::zeros<double>({2, 3});
  auto counter = cn::count_transfers();
  EXPECT_TRUE(cn::as_device_array(d, 2, "markers").shares_memory_with(d))
      << "the same array, no copy";
  EXPECT_EQ(counter.total(), 0);
  const int line = __LINE__ + 1;
  auto copied = cn::as_device_array(h, 1, "weights");
  EXPECT_TRUE(copied.is_device());
  EXPECT_EQ(counter.to_device(), 1);
  EXPECT_EQ(counter.events().back().where, here(line));
  const std::vector<int> degree{3, 3, 3};
  auto deg = cn::as_device_array<int>(std::span<const int>(degree), 1, "degree");
  EXPECT_EQ(cn::to_host(deg)(2), 3);
  auto as_float = cn::as_device_array<float>(d, 2, "markers");
  EXPECT_TRUE(as_float.is_device());
  try {
    (void)cn::as_device_array(d, 1, "markers");
    FAIL();
  } catch (const cn::ValueError& err) {
    EXPECT_NE(std::string(err.what()).find("'markers' must have 1 dimension(s), got 2"),
              std::string::npos);
  }
}

TEST(Streams, ScopedCurrentStreamAndNoLeaks) {
  const long long live = cn::detail::live_streams();
  {
    cn::Stream s;
    EXPECT_EQ(s.native_handle(), nullptr) << "nothing on host";
    s.synchronize();
  }
  auto e = cn::use_backend(cn::Backend::emulated);
  void* before = cn::current_stream().native_handle();
  auto counter = cn::count_transfers();
  {
    cn::Stream outer;
    EXPECT_NE(outer.native_handle(), nullptr);
    EXPECT_EQ(cn::current_stream().native_handle(), before)
        << "a stream is current only inside a scope";
    auto outer_scope = cn::use_stream(outer);
    EXPECT_EQ(cn::current_stream().native_handle(), outer.native_handle());
    {
      cn::Stream inner;
      auto inner_scope = cn::use_stream(inner);
      EXPECT_EQ(cn::current_stream().native_handle(), inner.native_handle());
      EXPECT_EQ(cn::current_stream().backend(), cn::Backend::emulated);
      EXPECT_EQ(cn::detail::live_streams(), live + 2);
    }
    EXPECT_EQ(cn::current_stream().native_handle(), outer.native_handle());
    outer.synchronize();
  }
  EXPECT_EQ(cn::current_stream().native_handle(), before);
  EXPECT_EQ(cn::detail::live_streams(), live);
  EXPECT_EQ(counter.synchronizations(cn::SyncKind::stream), 1);
}

TEST(Streams, MovedStreamsOwnOnce) {
  auto e = cn::use_backend(cn::Backend::emulated);
  const long long live = cn::detail::live_streams();
  cn::Stream a;
  void* handle = a.native_handle();
  cn::Stream b = std::move(a);
  EXPECT_EQ(a.native_handle(), nullptr) << "a moved-from stream is empty";
  EXPECT_EQ(b.native_handle(), handle);
  EXPECT_EQ(cn::detail::live_streams(), live + 1);
  cn::Stream c;
  c = std::move(b);  // c's own stream is destroyed, b's is taken
  EXPECT_EQ(c.native_handle(), handle);
  EXPECT_EQ(cn::detail::live_streams(), live + 1);
  a.synchronize();  // an empty stream synchronises nothing
}

TEST(Events, RecordQuerySynchronizeAndElapsed) {
  const long long before = cn::detail::live_events();
  for (const cn::Backend backend : {cn::Backend::host, cn::Backend::emulated}) {
    auto use = cn::use_backend(backend);
    const long long live = cn::detail::live_events();
    cn::Stream s;
    cn::Event start(true), stop(true);
    EXPECT_EQ(cn::detail::live_events(), live + 2);
    EXPECT_TRUE(start.query()) << "nothing recorded: nothing to wait for";
    EXPECT_THROW((void)cn::Event::elapsed(start, stop), cn::ValueError) << "not recorded yet";
    start.record(s);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop.record(s);
    EXPECT_TRUE(stop.query()) << "host and emulated work completes as it is issued";
    auto counter = cn::count_transfers();
    stop.synchronize();
    EXPECT_EQ(counter.synchronizations(cn::SyncKind::stream), backend == cn::Backend::host ? 0 : 1);
    const double seconds = cn::Event::elapsed(start, stop);
    EXPECT_GE(seconds, 0.015);
    EXPECT_LT(seconds, 5.0);
    cn::Event untimed;
    untimed.record();
    EXPECT_THROW((void)cn::Event::elapsed(start, untimed), cn::ValueError)
        << "timing needs timing events";
    cn::Event moved = std::move(untimed);
    EXPECT_TRUE(moved.query());
    EXPECT_THROW(untimed.record(), cn::Error) << "a moved-from event owns nothing";
  }
  EXPECT_EQ(cn::detail::live_events(), before) << "every event was destroyed once";
}

TEST_F(OnEmulated, HostStagingRingOrderStalenessAndCounting) {
  const long long streams = cn::detail::live_streams(), events = cn::detail::live_events();
  {
    cn::HostStaging<double> staging({4}, 2);
    EXPECT_EQ(staging.buffers(), 2);
    auto a = cn::full<double>({4}, 1.0);
    auto counter = cn::count_transfers();
    const int line = __LINE__ + 1;
    auto c1 = staging.copy(a);
    a.fill(2.0);  // the next "step" overwrites the array; the copy has its snapshot
    auto c2 = staging.copy(a);
    EXPECT_EQ(counter.to_host(), 2);
    EXPECT_EQ(counter.events()[0].where, here(line));
    EXPECT_EQ(counter.events()[0].description, "HostStaging::copy(shape=(4,), dtype=float64)");
    const long long syncs = counter.synchronizations();
    // The copy runs on the copy stream's worker: polling ready() makes progress (also with
    // CUNUMPY_EMULATED_STREAMS=deferred) and never waits.
    while (!c1.ready()) std::this_thread::yield();
    EXPECT_EQ(counter.synchronizations(), syncs) << "ready() never waits";
    EXPECT_FALSE(c1.stale());
    EXPECT_EQ(c1.result()(3), 1.0);
    EXPECT_EQ(c2.result()(0), 2.0);
    EXPECT_TRUE(c1.result().is_pinned());
    a.fill(3.0);
    auto c3 = staging.copy(a);  // reuses c1's buffer
    EXPECT_TRUE(c1.stale());
    EXPECT_TRUE(c1.ready()) << "ready() never waits, also for a stale copy";
    try {
      (void)c1.result();
      FAIL() << "a stale result must raise";
    } catch (const cn::Error& e) {
      EXPECT_NE(std::string(e.what()).find("stale"), std::string::npos) << e.what();
    }
    EXPECT_EQ(c2.result()(0), 2.0) << "c2's buffer is not reused yet";
    EXPECT_EQ(c3.result()(0), 3.0);
    staging.synchronize();
    // Host arrays copy at once and are not transfers.
    auto h = cn::full<double>({4}, 9.0, cn::Backend::host);
    auto ch = staging.copy(h);
    EXPECT_EQ(ch.result()(1), 9.0);
    EXPECT_EQ(counter.to_host(), 3);
    // Wrong shape.
    auto wrong = cn::zeros<double>({5});
    EXPECT_THROW((void)staging.copy(wrong), cn::ValueError);
    EXPECT_LE(cn::detail::live_streams(), streams + 1) << "at most one copy stream: the Runtime's";
    EXPECT_EQ(cn::copy_stream().native_handle(),
              cn::detail::runtime_copy_stream(cn::Backend::emulated)->native_handle());
  }
  EXPECT_LE(cn::detail::live_streams(), streams + 1) << "the Runtime keeps its copy stream";
  EXPECT_EQ(cn::detail::live_events(), events) << "the staging's events are released";
}

TEST(HostStaging, HostBackendCopiesAtOnce) {
  cn::HostStaging<int> staging({3}, 1);
  auto a = cn::arange<int>(3);
  auto counter = cn::count_transfers();
  auto c = staging.copy(a);
  EXPECT_TRUE(c.ready());
  EXPECT_EQ(c.result()(2), 2);
  EXPECT_EQ(counter.total(), 0);
  EXPECT_THROW(cn::HostStaging<int>({3}, 0), cn::ValueError);
}

namespace {
void add_one(const cn::Array<double>& a) {
  auto v = a.view<2>();
  cn::parallel_for(
      "add_one", a.size(), CUNUMPY_LAMBDA(long long k) { v.data[k] += 1.0; });
}
}  // namespace

TEST_F(OnEmulated, DeviceMirrorTransfersAndIdentity) {
  std::vector<double> owner(6, 5.0);
  const double* host_before = owner.data();
  cn::DeviceMirror<double> mirror(owner, {2, 3});
  auto counter = cn::count_transfers();
  const cn::Array<double>& dev = mirror.device();
  EXPECT_TRUE(dev.is_device());
  EXPECT_EQ(counter.to_device(), 1) << "allocated on first access as a copy";
  (void)mirror.device();
  EXPECT_EQ(counter.to_device(), 1) << "only once";
  add_one(mirror.device());
  mirror.to_host();
  EXPECT_EQ(owner.data(), host_before) << "the owner's memory keeps its identity";
  EXPECT_EQ(owner[5], 6.0);
  EXPECT_EQ(counter.to_host(), 1);
  mirror.zero().to_host();  // chaining
  EXPECT_EQ(owner[0], 0.0);
  owner.assign(6, 7.0);  // same size, same memory
  mirror.to_device();
  EXPECT_EQ(cn::to_host(mirror.device())(1, 2), 7.0);

  // The owner reallocates: using the mirror without rebind() is an error.
  const cn::Array<double> device_before = mirror.device();  // shares the device memory
  owner.reserve(1000);
  EXPECT_THROW((void)mirror.device(), cn::ValueError);
  EXPECT_THROW(mirror.to_host(), cn::ValueError);
  mirror.rebind({2, 3});
  EXPECT_TRUE(mirror.device().shares_memory_with(device_before))
      << "same shape: the device array is kept";
  owner.resize(8);
  mirror.rebind({2, 4});
  EXPECT_FALSE(mirror.device().shares_memory_with(device_before))
      << "new shape: a new device array";
  EXPECT_EQ(mirror.device().shape().str(), "(2, 4)");
  EXPECT_THROW(mirror.rebind({3, 3}), cn::ValueError) << "8 elements are not a (3, 3)";
}

TEST(DeviceMirror, HostBackendIsTheHostArrayItself) {
  std::vector<float> owner(4, 1.0f);
  cn::DeviceMirror<float> mirror(owner, {4});
  auto counter = cn::count_transfers();
  EXPECT_EQ(mirror.device().data(), owner.data());
  EXPECT_TRUE(mirror.device().is_host());
  mirror.to_device().to_host().zero();
  EXPECT_EQ(owner[3], 0.0f);
  owner.resize(100);  // reallocates
  EXPECT_THROW((void)mirror.device(), cn::ValueError);
  mirror.rebind({100});
  EXPECT_EQ(mirror.device().data(), owner.data()) << "follows the owner's new memory";
  EXPECT_EQ(counter.total(), 0);
}
