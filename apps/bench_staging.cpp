// bench_staging: what HostStaging costs.
//
//   CUNUMPY_BACKEND=cuda ./bench_staging        (the figures that matter, on a GPU)
//   CUNUMPY_BACKEND=emulated ./bench_staging    (the same code paths on the CPU)
//
// Benchmarks:
//   pinned_peak/<MiB>        one device->pinned-host copy, waited for: the bandwidth ceiling
//   staging_copy/<MiB>       HostStaging::copy + result(): snapshot and copy to a pinned buffer
//   loop_no_output/<MiB>     a compute loop (several passes over the array per step)
//   loop_staged/<MiB>        the same loop staging its array every step, results read when ready
// At the end: staging bandwidth as a share of the pinned peak (goal: >= 90% on a GPU) and the
// slowdown of the staged loop against the loop without output (goal: <= 5%).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {

constexpr int kComputePasses = 8;

long long elements_for(const benchmark::State& state) {
  return state.range(0) * (1 << 20) / 8;
}

void compute_step(const cn::Array<double>& a) {
  auto v = a.view<1>();
  cn::parallel_for(
      "compute", a.size(), CUNUMPY_LAMBDA(long long i) {
        double x = v(i);
        for (int k = 0; k < kComputePasses; ++k) x = x * 0.999999 + 1e-6;
        v(i) = x;
      });
}

void pinned_peak(benchmark::State& state) {
  const long long n = elements_for(state);
  auto a = cn::full<double>({n}, 1.0);
  auto host = cn::pinned_empty<double>(a.shape());
  for (auto _ : state) {
    cn::copy(host, a);
    benchmark::DoNotOptimize(host.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<long long>(a.nbytes()));
}

void staging_copy(benchmark::State& state) {
  const long long n = elements_for(state);
  auto a = cn::full<double>({n}, 1.0);
  cn::HostStaging<double> staging(a.shape(), 2);
  for (auto _ : state) {
    auto c = staging.copy(a);
    benchmark::DoNotOptimize(c.result().data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<long long>(a.nbytes()));
}

void loop_no_output(benchmark::State& state) {
  const long long n = elements_for(state);
  auto a = cn::full<double>({n}, 1.0);
  for (auto _ : state) compute_step(a);
  cn::synchronize();
  state.SetItemsProcessed(state.iterations() * n);
}

void loop_staged(benchmark::State& state) {
  const long long n = elements_for(state);
  auto a = cn::full<double>({n}, 1.0);
  cn::HostStaging<double> staging(a.shape(), 2);
  double checksum = 0.0;
  std::optional<cn::StagedCopy<double>> previous;
  for (auto _ : state) {
    compute_step(a);
    if (previous && previous->ready()) checksum += previous->result()(0);  // output, never waiting
    previous = staging.copy(a);
  }
  staging.synchronize();
  cn::synchronize();
  benchmark::DoNotOptimize(checksum);
  state.SetItemsProcessed(state.iterations() * n);
}

// Prints the benchmarks as usual, then the two ratios the goals are stated in.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      std::string name = r.benchmark_name();
      if (const auto suffix = name.find("/real_time"); suffix != std::string::npos)
        name.erase(suffix);
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      const double seconds = r.GetAdjustedRealTime() / 1e9;  // default unit: ns
      results_[name] = {seconds, r.counters.count("bytes_per_second")
                                     ? static_cast<double>(r.counters.at("bytes_per_second"))
                                     : 0.0};
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nbackend: %s (%s)\n", cn::to_string(cn::get_backend()).data(),
                cn::backend_reason().c_str());
    for (const auto& [name, value] : results_) {
      if (name.rfind("staging_copy/", 0) == 0) {
        const std::string size = name.substr(std::string("staging_copy/").size());
        auto peak = results_.find("pinned_peak/" + size);
        if (peak != results_.end() && peak->second.bytes_per_second > 0)
          std::printf(
              "staging bandwidth %s MiB: %.2f GB/s = %.1f%% of the pinned peak (%.2f GB/s)\n",
              size.c_str(), value.bytes_per_second / 1e9,
              100.0 * value.bytes_per_second / peak->second.bytes_per_second,
              peak->second.bytes_per_second / 1e9);
      }
      if (name.rfind("loop_staged/", 0) == 0) {
        const std::string size = name.substr(std::string("loop_staged/").size());
        auto plain = results_.find("loop_no_output/" + size);
        if (plain != results_.end())
          std::printf(
              "overlap %s MiB: a step takes %.3f ms staged vs %.3f ms without output: %+.1f%% "
              "slowdown\n",
              size.c_str(), 1e3 * value.seconds, 1e3 * plain->second.seconds,
              100.0 * (value.seconds / plain->second.seconds - 1.0));
      }
    }
  }

 private:
  struct Result {
    double seconds;
    double bytes_per_second;
  };
  std::map<std::string, Result> results_;
};

}  // namespace

BENCHMARK(pinned_peak)->Arg(8)->Arg(64)->UseRealTime();
BENCHMARK(staging_copy)->Arg(8)->Arg(64)->UseRealTime();
BENCHMARK(loop_no_output)->Arg(8)->Arg(64)->UseRealTime();
BENCHMARK(loop_staged)->Arg(8)->Arg(64)->UseRealTime();

int main(int argc, char** argv) {
  cn::Runtime runtime(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
