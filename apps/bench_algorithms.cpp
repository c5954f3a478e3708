// bench_algorithms: the particle algorithms, with names fixed so runs can be compared.
//
//   OMP_NUM_THREADS=1 ./bench_algorithms          # the "one core" figures
//   CUNUMPY_BACKEND=cuda ./bench_algorithms       # on a GPU
//   CUNUMPY_HOST_SIMD=avx2 ./bench_algorithms     # another vector target (host_simd())
//
//   sort_by_key/<n>               u64 keys from morton_keys of uniform 3D points at 21 levels,
//                                 one int64 payload
//   std_stable_sort/<n>           std::stable_sort of (key, index) pairs of the same keys: the
//                                 baseline sort_by_key is compared with (goal: >= 8x faster)
//   philox_uniform/<n>            philox_uniform over n ids
//   baseline_philox/<n>           the same values from a scalar Philox4x32-10 (Random123's
//                                 rounds) built with -O3 -march=native (goal: >= 2x faster)
//   morton_keys_3d/<n>            keys of n 3D points (doubles) at 21 levels
//   baseline_morton_3d/<n>        the same keys by BMI2 pdep (libmorton's fastest host method),
//                                 -O3 -march=native (goal: within 1.1x)
//   baseline_*_avx2/<n>           the two baselines built with -march=x86-64-v3 (x86-64): the
//                                 peers of CUNUMPY_HOST_SIMD=avx2 on an AVX-512 machine
//   segment_sum/<n>/<n_segments>  float64 values; compared with NumPy's bincount of the same
//                                 keys and weights, timed by python3 after the runs (goal:
//                                 >= 3x faster; python3 or /usr/bin/python3 with NumPy, or
//                                 $CUNUMPY_PYTHON; skipped without one)
// After the runs, a table gives each ratio against its goal (host backend; with
// OMP_NUM_THREADS=1 for the one-core goals: the baselines are single-threaded).
//   sort_by_key_cells/<n>/<cells> u64 cell numbers of uniform points in [0, cells), one int64
//                                 payload: sorting particles by cell, many equal keys
// n = 2^20 and 2^24, n_segments = cells = 65536.  Every benchmark reports items_per_second.  Each
// makes two untimed calls first: the figures are those of a time loop's steady state, where
// scratch and outputs come from the allocator's caches.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "bench_baselines.hpp"
#if BENCH_BASELINE_AVX2
#undef BASELINE_NAMESPACE
#define BASELINE_NAMESPACE baseline_avx2
#include "bench_baselines.hpp"  // the same declarations in namespace baseline_avx2
#endif

namespace cn = cunumpy;

namespace {

cn::Array<double> uniform_points(long long n) {
  cn::RandomStreams streams;
  streams.seed(12345, 0);
  return streams.generator().random({n, 3});
}

cn::Array<std::uint64_t> morton_of(const cn::Array<double>& points) {
  const double lower[] = {0.0, 0.0, 0.0}, upper[] = {1.0, 1.0, 1.0};
  return cn::morton_keys(points, lower, upper, 21);
}

// Times sort_by_key(keys, one int64 array) in a steady state.
void time_sort_by_key(benchmark::State& state, const cn::Array<std::uint64_t>& keys) {
  const long long n = keys.shape(0);
  const auto payload = cn::arange<std::int64_t>(0, n, 1, keys.backend());
  for (int warm = 0; warm < 2; ++warm)
    (void)cn::sort_by_key(keys, payload);  // scratch and outputs cached
  for (auto _ : state) {
    auto result = cn::sort_by_key(keys, payload);
    cn::synchronize();
    benchmark::DoNotOptimize(std::get<1>(result).data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void sort_by_key(benchmark::State& state) {
  time_sort_by_key(state, morton_of(uniform_points(state.range(0))));
}

void sort_by_key_cells(benchmark::State& state) {
  const long long n = state.range(0), cells = state.range(1);
  const auto points = cn::to_host(uniform_points(n));
  std::vector<std::uint64_t> cell(static_cast<std::size_t>(n));
  for (long long i = 0; i < n; ++i)
    cell[static_cast<std::size_t>(i)] =
        static_cast<std::uint64_t>(points(i, 0) * static_cast<double>(cells));
  time_sort_by_key(state, cn::from_host<std::uint64_t>(cell));
}

void std_stable_sort(benchmark::State& state) {
  const long long n = state.range(0);
  const auto keys = cn::to_host(morton_of(uniform_points(n)));
  std::vector<std::pair<std::uint64_t, std::int64_t>> pairs(static_cast<std::size_t>(n));
  for (auto _ : state) {
    state.PauseTiming();
    for (long long i = 0; i < n; ++i) pairs[static_cast<std::size_t>(i)] = {keys(i), i};
    state.ResumeTiming();
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    benchmark::DoNotOptimize(pairs.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void philox_uniform(benchmark::State& state) {
  const long long n = state.range(0);
  const auto ids = cn::arange<std::uint64_t>(0, n, 1, cn::get_backend());
  std::uint64_t step = 0;
  for (int warm = 0; warm < 2; ++warm) (void)cn::philox_uniform(std::uint64_t{7}, ids, step++);
  for (auto _ : state) {
    auto u = cn::philox_uniform(std::uint64_t{7}, ids, step++);
    cn::synchronize();
    benchmark::DoNotOptimize(u.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * n * static_cast<long long>(sizeof(double)));
}

using PhiloxFill = void (*)(double*, std::uint64_t, const std::uint64_t*, std::uint64_t, long long);
using MortonFill = void (*)(std::uint64_t*, const double*, long long, const double*, const double*,
                            int);

void baseline_philox(benchmark::State& state, PhiloxFill fill) {
  const long long n = state.range(0);
  std::vector<std::uint64_t> ids(static_cast<std::size_t>(n));
  for (long long i = 0; i < n; ++i)
    ids[static_cast<std::size_t>(i)] = static_cast<std::uint64_t>(i);
  std::vector<double> out(static_cast<std::size_t>(n));
  std::uint64_t step = 0;
  fill(out.data(), 7, ids.data(), step++, n);
  // The same values as philox_uniform (checked once: a baseline that computed something else
  // would compare nothing).
  const auto ours = cn::to_host(
      cn::philox_uniform(std::uint64_t{7}, cn::from_host<std::uint64_t>(ids), std::uint64_t{0}));
  for (long long i = 0; i < n; i += 997)
    if (ours(i) != out[static_cast<std::size_t>(i)]) {
      state.SkipWithError("the baseline Philox differs from philox_uniform");
      return;
    }
  for (auto _ : state) {
    fill(out.data(), 7, ids.data(), step++, n);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetBytesProcessed(state.iterations() * n * static_cast<long long>(sizeof(double)));
}

void baseline_morton_3d(benchmark::State& state, MortonFill fill, const std::string& method) {
  const long long n = state.range(0);
  const auto points = cn::to_host(uniform_points(n));
  const double lower[] = {0.0, 0.0, 0.0}, upper[] = {1.0, 1.0, 1.0};
  const auto scale = cn::morton_scales(lower, upper, 21);
  std::vector<std::uint64_t> keys(static_cast<std::size_t>(n));
  fill(keys.data(), points.data(), n, lower, scale.data(), 21);
  const auto ours = cn::to_host(morton_of(cn::from_host<double>(
      std::span<const double>(points.data(), static_cast<std::size_t>(3 * n)), cn::Shape{n, 3})));
  for (long long i = 0; i < n; i += 997)
    if (ours(i) != keys[static_cast<std::size_t>(i)]) {
      state.SkipWithError("the baseline Morton keys differ from morton_keys");
      return;
    }
  state.SetLabel(method);
  for (auto _ : state) {
    fill(keys.data(), points.data(), n, lower, scale.data(), 21);
    benchmark::DoNotOptimize(keys.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void morton_keys_3d(benchmark::State& state) {
  const long long n = state.range(0);
  const auto points = uniform_points(n);
  for (int warm = 0; warm < 2; ++warm) (void)morton_of(points);
  for (auto _ : state) {
    auto k = morton_of(points);
    cn::synchronize();
    benchmark::DoNotOptimize(k.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void segment_sum(benchmark::State& state) {
  const long long n = state.range(0), segments = state.range(1);
  const auto u = cn::philox_uniform(
      std::uint64_t{3}, cn::arange<std::uint64_t>(0, n, 1, cn::get_backend()), std::uint64_t{0});
  // Keys: the cells of Morton-sorted particles, as in a deposit (mostly increasing).
  auto keys = cn::Array<std::int64_t>(cn::Shape{n}, cn::get_backend());
  {
    auto h = cn::Array<std::int64_t>(cn::Shape{n}, cn::Backend::host);
    for (long long i = 0; i < n; ++i)
      h.host_span()[static_cast<std::size_t>(i)] = (i * segments) / n;
    cn::copy(keys, h);
  }
  for (int warm = 0; warm < 2; ++warm) (void)cn::segment_sum(keys, u, segments);
  for (auto _ : state) {
    auto s = cn::segment_sum(keys, u, segments);
    cn::synchronize();
    benchmark::DoNotOptimize(s.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

// Flags as a particle migration sees them: `percent` of the rows set (1 in 100/percent,
// spread).
cn::Array<std::uint8_t> partition_flags(long long n, long long per_mille, cn::Backend b) {
  auto h = cn::Array<std::uint8_t>(cn::Shape{n}, cn::Backend::host);
  for (long long i = 0; i < n; ++i)
    h.host_span()[static_cast<std::size_t>(i)] =
        static_cast<std::uint8_t>((i * 2654435761LL) % 1000 < per_mille ? 1 : 0);
  return b == cn::Backend::host ? h : cn::to_device(h, b);
}

void stable_partition(benchmark::State& state) {
  const long long n = state.range(0);
  const auto flags = partition_flags(n, state.range(1), cn::get_backend());
  for (int warm = 0; warm < 2; ++warm) (void)cn::stable_partition(flags);
  for (auto _ : state) {
    auto p = cn::stable_partition(flags);
    cn::synchronize();
    benchmark::DoNotOptimize(p.order.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

// The peer: std::stable_partition of the indices by their flag (one thread).
void std_stable_partition(benchmark::State& state) {
  const long long n = state.range(0);
  const auto flags = partition_flags(n, state.range(1), cn::Backend::host);
  const std::uint8_t* f = flags.data();
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (auto _ : state) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_partition(order.begin(), order.end(), [f](std::int64_t i) { return f[i] != 0; });
    benchmark::DoNotOptimize(order.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void flatnonzero(benchmark::State& state) {
  const long long n = state.range(0);
  const auto flags = partition_flags(n, state.range(1), cn::get_backend());
  for (auto _ : state) {
    auto idx = cn::flatnonzero(flags);
    cn::synchronize();
    benchmark::DoNotOptimize(idx.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

}  // namespace

BENCHMARK(sort_by_key)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(sort_by_key_cells)
    ->Args({1 << 20, 65536})
    ->Args({1 << 24, 65536})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(std_stable_sort)
    ->Arg(1 << 20)
    ->Arg(1 << 24)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(philox_uniform)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(morton_keys_3d)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(segment_sum)
    ->Args({1 << 20, 65536})
    ->Args({1 << 24, 65536})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// Per mille of the rows selected: 1, 10 and 100 (0.1%, 1%, 10%: a migration's leavers).
BENCHMARK(stable_partition)
    ->ArgsProduct({{1 << 24}, {1, 10, 100}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(std_stable_partition)
    ->ArgsProduct({{1 << 24}, {1, 10, 100}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(flatnonzero)
    ->ArgsProduct({{1 << 24}, {1, 10, 100}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The console's report, keeping each run's seconds per iteration for the ratio table.
class Collect : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> seconds;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Iteration && r.iterations > 0 && !r.error_occurred)
        seconds[r.benchmark_name()] = r.real_accumulated_time / static_cast<double>(r.iterations);
    ConsoleReporter::ReportRuns(runs);
  }
};

// NumPy's bincount(keys, weights, minlength) on the segment_sum benchmark's data, seconds per
// call (best of 5), or a negative value when python3 or NumPy is missing.
double numpy_bincount_seconds(long long n, long long segments) {
  const std::string script =
      "import time, numpy as np\n"
      "n, s = " +
      std::to_string(n) + ", " + std::to_string(segments) +
      "\n"
      "k = (np.arange(n, dtype=np.int64) * s) // n\n"
      "w = np.random.default_rng(3).random(n)\n"
      "np.bincount(k, weights=w, minlength=s)\n"
      "best = 1e9\n"
      "for _ in range(5):\n"
      "    t = time.perf_counter(); np.bincount(k, weights=w, minlength=s)\n"
      "    best = min(best, time.perf_counter() - t)\n"
      "print(best)\n";
  // $CUNUMPY_PYTHON, else the first of python3 and /usr/bin/python3 that has NumPy.
  std::vector<std::string> pythons = {"python3", "/usr/bin/python3"};
  if (const char* env = std::getenv("CUNUMPY_PYTHON")) pythons.insert(pythons.begin(), env);
  for (const std::string& python : pythons) {
    FILE* p = popen((python + " -c '" + script + "' 2>/dev/null").c_str(), "r");
    if (p == nullptr) continue;
    double t = -1.0;
    if (std::fscanf(p, "%lf", &t) != 1) t = -1.0;
    if (pclose(p) == 0 && t > 0) return t;
  }
  return -1.0;
}

void print_ratios(const std::map<std::string, double>& s) {
  auto at = [&](const std::string& name) {
    const auto it = s.find(name + "/real_time");
    return it == s.end() ? -1.0 : it->second;
  };
  std::printf("\nratios (host vector loops: %s)\n", cn::host_simd().c_str());
  std::printf("%-36s %10s %8s  %s\n", "", "ratio", "goal", "");
  auto row = [](const std::string& what, double ratio, const char* goal, bool met) {
    if (ratio <= 0) return;
    std::printf("%-36s %9.2fx %8s  %s\n", what.c_str(), ratio, goal, met ? "met" : "MISSED");
  };
  // On an AVX-512 machine running the AVX2 target, the AVX2 build of the baselines is the peer.
  const bool avx2 =
      cn::host_simd().rfind("avx2", 0) == 0 && s.count("baseline_philox_avx2/1048576/real_time");
  const std::string b = avx2 ? "_avx2" : "";
  for (const char* n : {"1048576", "16777216"}) {
    const std::string sz = n;
    const double sort = at("sort_by_key/" + sz), ref = at("std_stable_sort/" + sz);
    if (sort > 0 && ref > 0)
      row("sort_by_key vs std::stable_sort " + sz, ref / sort, ">= 8x", ref / sort >= 8);
    const double ph = at("philox_uniform/" + sz), pb = at("baseline_philox" + b + "/" + sz);
    if (ph > 0 && pb > 0)
      row("philox_uniform vs scalar Philox " + sz, pb / ph, ">= 2x", pb / ph >= 2);
    const double mk = at("morton_keys_3d/" + sz), mb = at("baseline_morton_3d" + b + "/" + sz);
    if (mk > 0 && mb > 0)
      row("morton time / " + baseline::morton3_method() + " " + sz, mk / mb, "<= 1.1x",
          mk / mb <= 1.1);
    for (const char* pm : {"1", "10", "100"}) {
      const double sp = at("stable_partition/" + sz + "/" + pm);
      const double ref = at("std_stable_partition/" + sz + "/" + pm);
      if (sp > 0 && ref > 0)
        row(std::string("stable_partition vs std ") + sz + " " + pm + "/1000", ref / sp, ">= 1x",
            ref / sp >= 1);
    }
    const double ss = at("segment_sum/" + sz + "/65536");
    if (ss > 0) {
      const double np = numpy_bincount_seconds(std::stoll(sz), 65536);
      if (np > 0)
        row("segment_sum vs numpy.bincount " + sz, np / ss, ">= 3x", np / ss >= 3);
      else
        std::printf("%-36s (python3 with NumPy not found)\n",
                    ("segment_sum vs bincount " + sz).c_str());
    }
  }
}

int main(int argc, char** argv) {
  cn::Runtime runtime(argc, argv);
  std::printf("%s\n", runtime.summary().c_str());
  // The baselines, -march=native (and the AVX2 build on x86-64).
  auto add = [](const std::string& name, auto&&... f) {
    benchmark::RegisterBenchmark(name.c_str(), f...)
        ->Arg(1 << 20)
        ->Arg(1 << 24)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  };
  add("baseline_philox", baseline_philox, &baseline::philox_uniform);
  add("baseline_morton_3d", baseline_morton_3d, &baseline::morton3, baseline::morton3_method());
#if BENCH_BASELINE_AVX2
  add("baseline_philox_avx2", baseline_philox, &baseline_avx2::philox_uniform);
  add("baseline_morton_3d_avx2", baseline_morton_3d, &baseline_avx2::morton3,
      baseline_avx2::morton3_method());
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Collect report;
  benchmark::RunSpecifiedBenchmarks(&report);
  if (cn::get_backend() == cn::Backend::host) print_ratios(report.seconds);
  benchmark::Shutdown();
  return 0;
}
