// Threads: where work runs is an argument, never a process-wide switch.  The active backend is
// per thread on top of the process default; the library's operations run where their arrays
// live whatever any thread selects; objects bind to their data; the transfer ledger counts per
// thread or per process as asked.  Built and run under ThreadSanitizer in CI
// (scripts/tsan_check.sh), where every test here must also be race-free.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/kernel_catalog.hpp>

#include "kernel_sources.hpp"
#include "test_environment.hpp"

namespace cn = cunumpy;
using cunumpy_test::have_host_compiler;
using cunumpy_test::message_of;

namespace {

// Runs `n` threads of `body(t)` at once and joins them; the first failure of a thread is
// reported as the test's.
template <typename Body>
void in_threads(int n, Body body) {
  std::vector<std::thread> threads;
  std::vector<std::string> failures(static_cast<std::size_t>(n));
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      try {
        body(t);
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(t)] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < n; ++t)
    EXPECT_EQ(failures[static_cast<std::size_t>(t)], "") << "thread " << t << " threw";
}

// The process default is host for every test; a test that changes it puts it back.
class Threads : public ::testing::Test {
 protected:
  void SetUp() override { cn::set_backend(cn::Backend::host); }
  void TearDown() override { cn::set_backend(cn::Backend::host); }
};

std::vector<double> host_values(const cn::Array<double>& a) {
  const cn::Array<double> h = cn::to_host(a);
  return {h.data(), h.data() + h.size()};
}

}  // namespace

TEST_F(Threads, UseBackendSelectsForTheCallingThreadOnly) {
  auto scope = cn::use_backend(cn::Backend::emulated);
  EXPECT_EQ(cn::get_backend(), cn::Backend::emulated);
  EXPECT_EQ(cn::default_backend(), cn::Backend::host);
  cn::Backend seen = cn::Backend::emulated;
  std::string reason;
  std::thread other([&] {
    seen = cn::get_backend();
    reason = cn::backend_reason();
  });
  other.join();
  EXPECT_EQ(seen, cn::Backend::host) << "a new thread starts from the process default";
  EXPECT_EQ(reason, "set_backend(host)");
  EXPECT_EQ(cn::backend_reason(), "use_backend(emulated)");
}

TEST_F(Threads, SetBackendChangesTheDefaultEveryUnscopedThreadFollows) {
  std::atomic<int> phase{0};
  cn::Backend before = cn::Backend::emulated, after = cn::Backend::host, scoped = cn::Backend::host;
  std::thread follower([&] {
    before = cn::get_backend();
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
    after = cn::get_backend();
    auto s = cn::use_backend(cn::Backend::host);
    scoped = cn::get_backend();
  });
  while (phase.load() != 1) std::this_thread::yield();
  cn::set_backend(cn::Backend::emulated);
  phase = 2;
  follower.join();
  EXPECT_EQ(before, cn::Backend::host);
  EXPECT_EQ(after, cn::Backend::emulated);
  EXPECT_EQ(scoped, cn::Backend::host);
  EXPECT_EQ(cn::get_backend(), cn::Backend::emulated);
}

TEST_F(Threads, SetBackendInsideAScopeChangesTheScopeAndTheDefault) {
  {
    auto s = cn::use_backend(cn::Backend::emulated);
    cn::set_backend(cn::Backend::host);
    EXPECT_EQ(cn::get_backend(), cn::Backend::host);
    cn::set_backend(cn::Backend::emulated);
    EXPECT_EQ(cn::get_backend(), cn::Backend::emulated);
  }
  EXPECT_EQ(cn::get_backend(), cn::Backend::emulated) << "the default set inside the scope stays";
}

// The new user's program of the issue: thread A sorts and sums on the emulated device while
// thread B, which never selects a backend, creates arrays on the default (host).  Before, the
// library flipped the one process-wide backend inside sort_by_key and segment_sum, and B's
// arrays landed on the emulated device.
TEST_F(Threads, LibraryCallsOnDeviceArraysNeverMoveAnotherThreadsArrays) {
  constexpr int kRounds = 200;
  std::atomic<bool> a_done{false};
  std::atomic<int> b_wrong{0}, b_rounds{0}, a_wrong{0};
  std::thread a([&] {
    const long long n = 3000;
    std::vector<std::int64_t> key_values(static_cast<std::size_t>(n));
    std::vector<double> ones(static_cast<std::size_t>(n), 1.0);
    for (long long i = 0; i < n; ++i) key_values[static_cast<std::size_t>(i)] = (i * 7919) % 97;
    const auto keys = cn::from_host<std::int64_t>(key_values, cn::Shape{n}, cn::Backend::emulated);
    const auto values = cn::from_host<double>(ones, cn::Shape{n}, cn::Backend::emulated);
    for (int r = 0; r < kRounds; ++r) {
      auto [sorted, order, v] = cn::sort_by_key(keys, values);
      const auto sums = cn::segment_sum(keys, v, 97);
      const auto h = cn::to_host(sums);
      double total = 0;
      for (long long s = 0; s < 97; ++s) total += h.data()[s];
      if (total != static_cast<double>(n) || sorted.backend() != cn::Backend::emulated) ++a_wrong;
    }
    a_done = true;
  });
  std::thread b([&] {
    while (!a_done.load() || b_rounds.load() < kRounds) {
      const auto x = cn::zeros<double>({64});
      const auto k = cn::arange<std::int64_t>(64);
      if (x.backend() != cn::Backend::host || k.backend() != cn::Backend::host ||
          cn::get_backend() != cn::Backend::host)
        ++b_wrong;
      ++b_rounds;
    }
  });
  a.join();
  b.join();
  EXPECT_EQ(a_wrong.load(), 0);
  EXPECT_EQ(b_wrong.load(), 0) << "of " << b_rounds.load() << " rounds of thread B";
}

// Every public operation on arrays runs where the arrays live, with another backend active in
// the calling thread: the results are the same as on the arrays' own backend.
TEST_F(Threads, OperationsRunWhereTheirArraysLiveWhateverIsActive) {
  const long long n = 5000;
  std::vector<double> pos(static_cast<std::size_t>(2 * n));
  for (long long i = 0; i < 2 * n; ++i) pos[static_cast<std::size_t>(i)] = (i * 37 % 1000) / 1000.0;
  const double lower[2] = {0, 0}, upper[2] = {1, 1};
  auto run = [&](cn::Backend arrays) {
    std::vector<double> out;
    const auto p = cn::from_host<double>(pos, cn::Shape{n, 2}, arrays);
    const auto keys = cn::morton_keys(p, lower, upper, 10);
    EXPECT_EQ(keys.backend(), arrays);
    auto [sorted, order, q] = cn::sort_by_key(keys, p);
    const auto cells = cn::morton_decode(sorted, 2);
    EXPECT_EQ(cells.backend(), arrays);
    const auto seg = cn::segment_sum(
        cn::from_host<std::int64_t>(std::vector<std::int64_t>(static_cast<std::size_t>(n), 3),
                                    cn::Shape{n}, arrays),
        cn::ones<double>({n}, arrays), 5);
    const auto u = cn::philox_uniform(
        std::uint64_t{7}, cn::arange<std::uint64_t>(0, 100, 1, arrays), std::uint64_t{3});
    EXPECT_EQ(u.backend(), arrays);
    for (double x : host_values(q)) out.push_back(x);
    for (double x : host_values(seg)) out.push_back(x);
    for (double x : host_values(u)) out.push_back(x);
    auto y = cn::zeros<double>({n}, arrays);
    auto yv = y.view<1>();
    cn::parallel_for(
        cn::on(y), "fill", n, CUNUMPY_LAMBDA(long long i) { yv(i) = 2.0 * i; });
    out.push_back(cn::parallel_reduce(
        cn::on(y), "sum", n, cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long i) { return yv(i); }));
    return out;
  };
  std::vector<double> reference;
  {
    auto host = cn::use_backend(cn::Backend::host);
    reference = run(cn::Backend::host);
  }
  for (cn::Backend active : {cn::Backend::host, cn::Backend::emulated}) {
    auto s = cn::use_backend(active);
    EXPECT_EQ(run(cn::Backend::emulated), reference) << "active " << active;
    EXPECT_EQ(run(cn::Backend::host), reference) << "active " << active;
  }
}

TEST_F(Threads, ALoopOnAStreamTargetRunsOnThatStreamWithoutAScope) {
  cn::Stream s(cn::Backend::emulated);
  auto a = cn::zeros<double>({2000}, cn::Backend::emulated);
  auto v = a.view<1>();
  std::atomic<bool> on_worker{false};
  const auto me = std::this_thread::get_id();
  cn::parallel_for(
      cn::on(s), "one", 2000, CUNUMPY_LAMBDA(long long i) { v(i) = 1.0; });
  cn::parallel_for(cn::on(s), "where", 1,
                   [&](long long) { on_worker = std::this_thread::get_id() != me; });
  const double sum = cn::parallel_reduce(
      cn::on(s), "sum", 2000, cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long i) { return v(i); });
  EXPECT_EQ(sum, 2000.0) << "a reduction on the stream waits for its work first";
  s.synchronize();
  if (cn::emulated_streams() != cn::EmulatedStreams::sync) {
    EXPECT_TRUE(on_worker);
  }
}

TEST_F(Threads, StreamsAreCurrentPerThreadAndPerBackend) {
  cn::Stream emulated(cn::Backend::emulated);
  auto scope = cn::use_stream(emulated);
  EXPECT_EQ(cn::current_stream(cn::Backend::emulated).native_handle(), emulated.native_handle());
  EXPECT_EQ(cn::current_stream(cn::Backend::cuda).native_handle(), nullptr)
      << "an emulated stream is no cuda stream";
  void* other_thread = emulated.native_handle();
  std::thread t([&] { other_thread = cn::current_stream(cn::Backend::emulated).native_handle(); });
  t.join();
  EXPECT_EQ(other_thread, nullptr) << "another thread is on the default stream";
  {
    cn::Stream host_stream(cn::Backend::host);
    auto inner = cn::use_stream(host_stream);
    EXPECT_EQ(cn::current_stream(cn::Backend::emulated).native_handle(), emulated.native_handle())
        << "an inner scope of another backend hides no outer emulated stream";
  }
}

TEST_F(Threads, HostStagingStagesAnArrayOfAnyBackendWhateverWasActiveAtConstruction) {
  cn::HostStaging<double> staging(cn::Shape{100});  // built on host
  auto a = cn::arange<double>(0, 100, 1, cn::Backend::emulated);
  const auto copy = staging.copy(a);
  const auto r = copy.result();
  ASSERT_EQ(r.size(), 100);
  for (long long i = 0; i < 100; ++i) EXPECT_EQ(r.data()[i], static_cast<double>(i));
  // And one of host arrays, copied at once.
  cn::HostStaging<double> on_host_arrays(cn::Shape{3});
  const auto h = on_host_arrays.copy(cn::ones<double>({3}, cn::Backend::host)).result();
  EXPECT_EQ(h.data()[2], 1.0);
}

TEST_F(Threads, DeviceMirrorKeepsTheDeviceItWasBuiltFor) {
  std::vector<double> data(10, 1.5);
  std::optional<cn::DeviceMirror<double>> mirror;
  {
    auto s = cn::use_backend(cn::Backend::emulated);
    mirror.emplace(data, cn::Shape{10});
  }
  EXPECT_EQ(mirror->backend(), cn::Backend::emulated);
  EXPECT_EQ(mirror->device().backend(), cn::Backend::emulated) << "host is active now";
  mirror->zero();
  mirror->to_host();
  EXPECT_EQ(data[3], 0.0);
  cn::DeviceMirror<double> explicit_host(data, cn::Shape{10}, cn::Backend::host);
  EXPECT_EQ(explicit_host.device().data(), data.data());
}

TEST_F(Threads, ACudaKernelLaunchesWhereItsArraysLive) {
  if (!have_host_compiler()) GTEST_SKIP() << "no host compiler for the emulator";
  cn::CudaKernel axpy(cunumpy_test::kAxpy, "axpy");
  auto x = cn::ones<double>({1000}, cn::Backend::emulated);
  auto y = cn::zeros<double>({1000}, cn::Backend::emulated);
  ASSERT_EQ(cn::get_backend(), cn::Backend::host);
  axpy(cn::threads(1000), 3.0, x, y, 1000LL);
  EXPECT_EQ(host_values(y), std::vector<double>(1000, 3.0));
  cn::Stream s(cn::Backend::emulated);
  axpy.launch_on(cn::on(s), cn::threads(1000), 1.0, x, y, 1000LL);
  s.synchronize();
  EXPECT_EQ(host_values(y), std::vector<double>(1000, 4.0));
  auto host_y = cn::zeros<double>({8});
  EXPECT_NE(message_of([&] {
              axpy(cn::threads(8), 1.0, cn::ones<double>({8}), host_y, 8LL);
            }).find("host data is never copied to the device implicitly"),
            std::string::npos);
}

// A kernel pair whose CUDA side is a callable taking the Target: with Dispatch::arrays it is
// told the arrays' device, and the active backend of the calling thread is left alone.
TEST_F(Threads, AKernelPairTellsItsCudaSideWhereTheCallRuns) {
  cn::Backend told = cn::Backend::host, active_inside = cn::Backend::emulated;
  auto host_scale = [](cn::Array<double> x, double f) {
    for (long long i = 0; i < x.size(); ++i) x.data()[i] *= f;
  };
  auto device_scale = [&](const cn::Target& t, const cn::Launch&, cn::Array<double> x, double f) {
    told = t.backend;
    active_inside = cn::get_backend();
    auto v = x.view<1>();
    cn::parallel_for(
        t, "scale", x.size(), CUNUMPY_LAMBDA(long long i) { v(i) *= f; });
  };
  cn::Kernel scale("scale", host_scale, std::optional(device_scale),
                   {.dispatch = cn::Dispatch::arrays});
  auto x = cn::ones<double>({16}, cn::Backend::emulated);
  scale(cn::threads(16), x, 3.0);
  EXPECT_EQ(told, cn::Backend::emulated);
  EXPECT_EQ(active_inside, cn::Backend::host);
  EXPECT_EQ(host_values(x), std::vector<double>(16, 3.0));
}

TEST_F(Threads, TransferCountersCountTheirThreadOrTheProcess) {
  auto mine = cn::count_transfers();
  auto all = cn::count_transfers(cn::CountScope::process);
  const auto d = cn::ones<double>({10}, cn::Backend::emulated);
  std::thread other([&] {
    auto theirs = cn::count_transfers();
    (void)cn::to_host(d);
    (void)cn::to_host(d);
    EXPECT_EQ(theirs.to_host(), 2);
  });
  other.join();
  (void)cn::to_host(d);
  EXPECT_EQ(mine.to_host(), 1) << mine.report();
  EXPECT_EQ(all.to_host(), 3) << all.report();
  EXPECT_EQ(mine.scope(), cn::CountScope::thread);
  // assert_no_transfers in a compute thread is not broken by an output thread's copies.
  std::atomic<bool> stop{false};
  std::thread output([&] {
    while (!stop.load()) (void)cn::to_host(d);
  });
  EXPECT_NO_THROW(cn::assert_no_transfers([&] {
    auto y = cn::zeros<double>({100}, cn::Backend::emulated);
    auto v = y.view<1>();
    for (int k = 0; k < 50; ++k)
      cn::parallel_for(
          cn::on(y), "step", 100, CUNUMPY_LAMBDA(long long i) { v(i) += 1.0; });
  }));
  stop = true;
  output.join();
  EXPECT_THROW(cn::assert_no_transfers([&] { (void)cn::to_host(d); }), cn::TransferAssertionError);
}

// Several threads, each on its own backend and its own stream, each running the public
// operations; every result is checked.  Under ThreadSanitizer this is the race test.
TEST_F(Threads, ManyThreadsEachOnItsOwnBackendAndStream) {
  const bool kernels = have_host_compiler();
  std::optional<cn::CudaKernel> axpy, block_sum;  // a block loop, and fibers at barriers
  if (kernels) {
    axpy.emplace(cunumpy_test::kAxpy, "axpy");
    block_sum.emplace(cunumpy_test::kBlockSum, "block_sum");
  }
  // The same (seed, stream) gives the same numbers on every backend.
  const std::vector<double> expected_random =
      host_values(cn::Generator(11, 5, cn::Backend::host).random({500}));
  in_threads(4, [&](int t) {
    const cn::Backend b = t % 2 == 0 ? cn::Backend::emulated : cn::Backend::host;
    auto scope = cn::use_backend(b);
    cn::Stream stream;  // of this thread's backend
    auto on_stream = cn::use_stream(stream);
    auto counter = cn::count_transfers();
    for (int round = 0; round < 5; ++round) {
      const long long n = 4000 + 100 * t;
      std::vector<std::int64_t> kv(static_cast<std::size_t>(n));
      for (long long i = 0; i < n; ++i) kv[static_cast<std::size_t>(i)] = (i * 31 + t) % 50;
      const auto keys = cn::from_host<std::int64_t>(kv, cn::Shape{n});
      const auto values = cn::ones<double>({n});
      if (keys.backend() != b) throw std::runtime_error("an array on the wrong backend");
      auto [sorted, order, v] = cn::sort_by_key(keys, values);
      const auto sums = host_values(cn::segment_sum(sorted, v, 50));
      if (std::accumulate(sums.begin(), sums.end(), 0.0) != static_cast<double>(n))
        throw std::runtime_error("segment_sum gave a wrong total");
      cn::Generator g(11, 5, b);
      if (host_values(g.random({500})) != expected_random)
        throw std::runtime_error("a generator's numbers differ between threads");
      if (b != cn::Backend::host && axpy) {
        auto x = cn::ones<double>({n});
        auto y = cn::zeros<double>({n});
        (*axpy)(cn::threads(n), 2.0, x, y, n);
        cn::HostStaging<double> staging(cn::Shape{n});
        const auto r = staging.copy(y).result();
        for (long long i = 0; i < n; ++i)
          if (r.data()[i] != 2.0) throw std::runtime_error("axpy gave a wrong value");
        const long long blocks = (n + 127) / 128;
        auto partial = cn::zeros<double>({blocks});
        (*block_sum)({.n_threads = n, .block = cn::Dim3(128), .shared_mem = 128 * 8}, y, partial,
                     static_cast<int>(n));
        const auto p = host_values(partial);
        if (std::accumulate(p.begin(), p.end(), 0.0) != 2.0 * static_cast<double>(n))
          throw std::runtime_error("block_sum gave a wrong total");
      }
    }
    stream.synchronize();
    if (b == cn::Backend::host && counter.total() != 0)
      throw std::runtime_error("a host thread counted another thread's transfers: " +
                               counter.report());
    if (b != cn::Backend::host && counter.to_host() == 0)
      throw std::runtime_error("a device thread counted none of its own transfers");
  });
}

// A halo exchange and a migration of emulated arrays, made and run while host is active, in
// two threads at once (each its own serial communicator): both work on their arrays' side.
TEST_F(Threads, HaloExchangeAndMigrationWorkOnTheirArraysWhateverIsActive) {
  in_threads(2, [&](int t) {
    const cn::Comm self = cn::Comm::serial();
    const cn::CartesianDecomposition d(0, 1, {8, 6}, {.periodic = {true, true, false}});
    cn::HaloExchange halo(self, d, {.guard = 1});
    auto field = cn::zeros<double>(halo.field_shape(), cn::Backend::emulated);
    {
      auto h = cn::to_host(field);
      for (long long i = 0; i < 8; ++i)
        for (long long j = 0; j < 6; ++j) h.data()[(i + 1) * 8 + (j + 1)] = 10.0 * i + j + t;
      cn::copy(field, h);
    }
    halo.fill(field);
    const auto after = cn::to_host(field);
    // Guard (0, 0) stands for cell (7, 5), guard (9, 7) for cell (0, 0).
    if (after.data()[0] != 75.0 + t || after.data()[9 * 8 + 7] != 0.0 + t)
      throw std::runtime_error("the periodic guards are wrong");
    cn::ParticleMigration migration(self, d, {0, 0, 0}, {1, 1, 1});
    std::vector<double> xs = {0.5, 1.25, -0.25}, ys = {0.5, 0.5, 2.5};
    auto x = cn::from_host<double>(xs, cn::Shape{3}, cn::Backend::emulated);
    auto y = cn::from_host<double>(ys, cn::Shape{3}, cn::Backend::emulated);
    auto id = cn::arange<std::int64_t>(0, 3, 1, cn::Backend::emulated);
    cn::ParticleColumns particles;
    particles.position(x).position(y).column(id);
    if (migration.migrate(particles, 3) != 3) throw std::runtime_error("particles were lost");
    const auto hx = cn::to_host(x);
    if (hx.data()[1] != 0.25 || hx.data()[2] != 0.75 || x.backend() != cn::Backend::emulated)
      throw std::runtime_error("the periodic wrap of the positions is wrong");
  });
}

TEST_F(Threads, DebugModeAndHostImplementationScopesArePerThread) {
  cn::set_cuda_debug(false);
  cn::set_kernel_implementation(std::nullopt);
  std::atomic<int> phase{0};
  bool other_debug = true;
  std::optional<std::string> other_impl = "set";
  std::thread other([&] {
    while (phase.load() != 1) std::this_thread::yield();
    other_debug = cn::get_cuda_debug();
    other_impl = cn::get_kernel_implementation();
    phase = 2;
  });
  {
    auto debug = cn::cuda_debug(true);
    auto impl = cn::use_kernel_implementation("reference");
    EXPECT_TRUE(cn::get_cuda_debug());
    EXPECT_EQ(cn::get_kernel_implementation(), std::optional<std::string>("reference"));
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
  }
  other.join();
  EXPECT_FALSE(other_debug) << "another thread keeps the process default";
  EXPECT_EQ(other_impl, std::nullopt);
  EXPECT_FALSE(cn::get_cuda_debug());
  {
    auto debug = cn::cuda_debug(false);
    cn::set_cuda_debug(true);  // the default and this scope
    EXPECT_TRUE(cn::get_cuda_debug());
  }
  EXPECT_TRUE(cn::get_cuda_debug());
  cn::set_cuda_debug(false);
}

TEST_F(Threads, AGeneratorSharedByThreadsHandsOutEachCounterOnce) {
  cn::Generator g(5, 9, cn::Backend::host);
  in_threads(4, [&](int) {
    for (int k = 0; k < 50; ++k) (void)g.random({10});
  });
  EXPECT_EQ(g.position(), 4u * 50u * 5u) << "every fill of 10 numbers takes 5 counters";
}

// A data race on purpose, run only by scripts/tsan_check.sh (CUNUMPY_TEST_PLANT_RACE=1), which
// expects ThreadSanitizer to report it: the job's silence elsewhere then means something.
TEST_F(Threads, APlantedRaceIsReportedUnderThreadSanitizer) {
  if (std::getenv("CUNUMPY_TEST_PLANT_RACE") == nullptr)
    GTEST_SKIP() << "runs under ThreadSanitizer with CUNUMPY_TEST_PLANT_RACE=1";
  long long unguarded = 0;
  in_threads(2, [&](int) {
    for (int k = 0; k < 1000; ++k) {
      auto v = unguarded;  // read, then write: no lock, no atomic
      unguarded = v + 1;
    }
  });
  EXPECT_GT(unguarded, 0);
}
