// The emulated device's streams: work queued on a Stream runs on the stream's worker, in order,
// beside the host; events and synchronisations order it as on a GPU; a missing
// synchronisation gives a wrong result (always, with EmulatedStreams::deferred); the
// library's own paths stay right.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <cunumpy/cunumpy.hpp>

#include "on_backend.hpp"

namespace cn = cunumpy;

namespace {

// Each test on the emulated device in a given stream mode, restored after it.
class EmulatedStreams : public cn::testing::OnEmulated {
 protected:
  void SetUp() override {
    cn::testing::OnEmulated::SetUp();
    previous_ = cn::emulated_streams();
  }
  void TearDown() override {
    cn::set_emulated_streams(previous_);
    cn::testing::OnEmulated::TearDown();
  }
  cn::EmulatedStreams previous_{};
};

// Reads emulated device memory as the host sees it now (no transfer, no synchronisation):
// what a missing synchronisation reads.
double peek(const cn::Array<double>& a, long long i) {
  return a.data()[i];
}

}  // namespace

TEST_F(EmulatedStreams, WorkOnAStreamRunsInOrderOnItsWorker) {
  cn::set_emulated_streams(cn::EmulatedStreams::async);
  cn::Stream s;
  auto a = cn::zeros<double>({1000});
  auto v = a.view<1>();
  std::atomic<bool> on_worker{false};
  const auto host_thread = std::this_thread::get_id();
  {
    auto scope = cn::use_stream(s);
    cn::parallel_for(
        "one", 1000, CUNUMPY_LAMBDA(long long i) { v(i) = 1.0; });
    for (int k = 0; k < 20; ++k)  // in order: each step sees the one before
      cn::parallel_for(
          "double", 1000, CUNUMPY_LAMBDA(long long i) { v(i) = 2.0 * v(i); });
    cn::parallel_for("where", 1,
                     [&](long long) { on_worker = std::this_thread::get_id() != host_thread; });
  }
  s.synchronize();
  EXPECT_TRUE(on_worker) << "the stream's work runs on its own thread";
  EXPECT_EQ(peek(a, 999), 1048576.0);
  EXPECT_EQ(cn::to_host(a)(0), 1048576.0);
}

TEST_F(EmulatedStreams, DeferredModeShowsAReadWithoutSynchronisation) {
  cn::set_emulated_streams(cn::EmulatedStreams::deferred);
  cn::Stream s;
  auto a = cn::zeros<double>({64});
  auto v = a.view<1>();
  {
    auto scope = cn::use_stream(s);
    cn::parallel_for(
        "write", 64, CUNUMPY_LAMBDA(long long i) { v(i) = 7.0; });
  }
  // Planted: the host reads before s.synchronize().
  EXPECT_EQ(peek(a, 0), 0.0) << "a read without synchronisation sees the data from before";
  EXPECT_EQ(cn::to_host(a)(5), 0.0)
      << "to_host on the default stream is not ordered after another stream's work";
  auto counter = cn::count_transfers();
  s.synchronize();
  EXPECT_EQ(counter.synchronizations(cn::SyncKind::stream), 1);
  EXPECT_EQ(peek(a, 0), 7.0);
  EXPECT_EQ(cn::to_host(a)(63), 7.0);
}

TEST_F(EmulatedStreams, OperationsOnTheCurrentStreamStayInOrder) {
  // Inline operations (copies, fills, reductions, sorts) wait for the current stream first.
  cn::set_emulated_streams(cn::EmulatedStreams::deferred);
  cn::Stream s;
  auto scope = cn::use_stream(s);
  auto a = cn::zeros<double>({100});
  auto v = a.view<1>();
  cn::parallel_for(
      "iota", 100, CUNUMPY_LAMBDA(long long i) { v(i) = static_cast<double>(i); });
  EXPECT_EQ(cn::parallel_reduce(
                "sum", 100, cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long i) { return v(i); }),
            4950.0);
  EXPECT_EQ(cn::to_host(a)(99), 99.0);
  cn::parallel_for(
      "negate", 100, CUNUMPY_LAMBDA(long long i) { v(i) = -v(i); });
  auto keys = cn::zeros<std::uint64_t>({100});
  auto k = keys.view<1>();
  cn::parallel_for(
      "keys", 100, CUNUMPY_LAMBDA(long long i) { k(i) = 99 - i; });
  auto [sorted, order] = cn::sort_by_key(keys);
  EXPECT_EQ(cn::to_host(order)(0), 99);
  a.fill(3.0);
  EXPECT_EQ(cn::to_host(a)(42), 3.0);
}

TEST_F(EmulatedStreams, EventsOrderTwoStreams) {
  cn::set_emulated_streams(cn::EmulatedStreams::deferred);
  cn::Stream producer, consumer;
  auto a = cn::zeros<double>({32});
  auto b = cn::zeros<double>({32});
  auto va = a.view<1>();
  auto vb = b.view<1>();
  cn::Event written(cn::Backend::emulated, false);
  {
    auto scope = cn::use_stream(producer);
    cn::parallel_for(
        "produce", 32, CUNUMPY_LAMBDA(long long i) { va(i) = 5.0; });
    written.record();
  }
  consumer.wait(written);
  {
    auto scope = cn::use_stream(consumer);
    cn::parallel_for(
        "consume", 32, CUNUMPY_LAMBDA(long long i) { vb(i) = va(i) + 1.0; });
  }
  consumer.synchronize();
  EXPECT_EQ(peek(b, 31), 6.0) << "the consumer waited for the producer's event";
  EXPECT_TRUE(written.query());

  // Planted: the consumer does not wait for the producer.
  cn::Event again(cn::Backend::emulated, false);
  {
    auto scope = cn::use_stream(producer);
    cn::parallel_for(
        "produce", 32, CUNUMPY_LAMBDA(long long i) { va(i) = 50.0; });
    again.record();
  }
  {
    auto scope = cn::use_stream(consumer);
    cn::parallel_for(
        "consume", 32, CUNUMPY_LAMBDA(long long i) { vb(i) = va(i) + 1.0; });
  }
  consumer.synchronize();
  EXPECT_EQ(peek(b, 0), 6.0) << "without the wait the consumer read the old values";
  EXPECT_FALSE(again.query()) << "deferred: nothing waited for the producer yet";
  while (!again.query()) std::this_thread::yield();  // polling makes progress
  EXPECT_EQ(peek(a, 0), 50.0);
}

TEST_F(EmulatedStreams, MemoryReleasedWhileWorkIsQueuedStaysMappedForIt) {
  cn::set_emulated_streams(cn::EmulatedStreams::deferred);
  cn::Stream s;
  auto result = cn::zeros<double>({1});
  auto r = result.view<1>();
  {
    auto temp = cn::full<double>({1 << 16}, 2.0);
    auto t = temp.view<1>();
    auto scope = cn::use_stream(s);
    cn::parallel_for(
        "read temp", 1, CUNUMPY_LAMBDA(long long) {
          double sum = 0;
          for (long long i = 0; i < (1 << 16); ++i) sum += t(i);
          r(0) = sum;
        });
  }  // temp released with the read still queued
  s.synchronize();
  EXPECT_EQ(peek(result, 0), 2.0 * (1 << 16));
  EXPECT_EQ(cn::detail::emulated_arena_allocations(), 1u) << "temp's memory went after the work";
}

TEST_F(EmulatedStreams, SyncModeCompletesWorkAsItIsIssued) {
  cn::set_emulated_streams(cn::EmulatedStreams::sync);
  cn::Stream s;
  auto a = cn::zeros<double>({8});
  auto v = a.view<1>();
  auto scope = cn::use_stream(s);
  cn::parallel_for(
      "write", 8, CUNUMPY_LAMBDA(long long i) { v(i) = 1.0; });
  EXPECT_EQ(peek(a, 7), 1.0);
}

TEST_F(EmulatedStreams, DeviceSynchronizeWaitsForEveryStream) {
  cn::set_emulated_streams(cn::EmulatedStreams::deferred);
  cn::Stream s1, s2;
  auto a = cn::zeros<double>({2});
  auto v = a.view<1>();
  {
    auto scope = cn::use_stream(s1);
    cn::parallel_for(
        "a0", 1, CUNUMPY_LAMBDA(long long) { v(0) = 1.0; });
  }
  {
    auto scope = cn::use_stream(s2);
    cn::parallel_for(
        "a1", 1, CUNUMPY_LAMBDA(long long) { v(1) = 2.0; });
  }
  cn::synchronize();
  EXPECT_EQ(peek(a, 0), 1.0);
  EXPECT_EQ(peek(a, 1), 2.0);
}

TEST_F(EmulatedStreams, HostStagingIsRightWhileTheComputeStreamOverwrites) {
  // The library's own path: the snapshot is taken in order on the compute stream, the copy
  // stream waits for it, the next kernels overwrite the array.
  cn::set_emulated_streams(cn::EmulatedStreams::deferred);
  cn::Stream compute;
  auto scope = cn::use_stream(compute);
  cn::HostStaging<double> staging({16}, 2);
  auto a = cn::zeros<double>({16});
  auto v = a.view<1>();
  cn::parallel_for(
      "step 1", 16, CUNUMPY_LAMBDA(long long i) { v(i) = 1.0; });
  auto c1 = staging.copy(a);
  cn::parallel_for(
      "step 2", 16, CUNUMPY_LAMBDA(long long i) { v(i) = 2.0; });
  auto c2 = staging.copy(a);
  cn::parallel_for(
      "step 3", 16, CUNUMPY_LAMBDA(long long i) { v(i) = 3.0; });
  EXPECT_EQ(c1.result()(15), 1.0);
  EXPECT_EQ(c2.result()(0), 2.0);
  compute.synchronize();
  EXPECT_EQ(peek(a, 3), 3.0);
}

TEST(EmulatedStreamsMode, NamesAndEnvironment) {
  EXPECT_EQ(cn::to_string(cn::EmulatedStreams::deferred), "deferred");
  if (const char* expect = std::getenv("CUNUMPY_TEST_EXPECT_STREAMS")) {
    EXPECT_EQ(cn::to_string(cn::emulated_streams()), expect);
  }
}
