// bench_algorithms: the particle algorithms, with names fixed so runs can be compared.
//
//   OMP_NUM_THREADS=1 ./bench_algorithms          # the "one core" figures
//   CUNUMPY_BACKEND=cuda ./bench_algorithms       # on a GPU
//
//   sort_by_key/<n>               u64 keys from morton_keys of uniform 3D points at 21 levels,
//                                 one int64 payload
//   std_stable_sort/<n>           std::stable_sort of (key, index) pairs of the same keys: the
//                                 reference sort_by_key is compared with (goal: >= 8x faster)
//   philox_uniform/<n>            philox_uniform over n ids (goal: >= 5 GB/s of output)
//   morton_keys_3d/<n>            (goal: <= 2 ns per key)
//   segment_sum/<n>/<n_segments>  float64 values (goal: >= 1 G values/s)
//   sort_by_key_cells/<n>/<cells> u64 cell numbers of uniform points in [0, cells), one int64
//                                 payload: sorting particles by cell, many equal keys
// n = 2^20 and 2^24, n_segments = cells = 65536.  Every benchmark reports items_per_second.  Each
// makes two untimed calls first: the figures are those of a time loop's steady state, where
// scratch and outputs come from the allocator's caches.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <cunumpy/cunumpy.hpp>

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

int main(int argc, char** argv) {
  cn::Runtime runtime(argc, argv);
  std::printf("%s\n", runtime.summary().c_str());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
