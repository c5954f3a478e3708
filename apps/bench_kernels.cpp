// bench_kernels: what preparing a CudaKernel launch costs, without a GPU.
//
//   ./bench_kernels
//
// The arguments of a 10- and a 29-parameter kernel (device arrays of the emulated device,
// array views, integers, floating-point values) checked against the parsed signature and
// packed as cudaLaunchKernel takes them (prepare_args), next to the same preparation with
// check_signature = false.  Goal: at most 50 ns per checked argument (the Python reference's
// figure is about 300 ns).  At the end: ns per argument of each.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {

// 10 parameters: 4 pointers, 1 view, 3 integers, 2 reals.
const char* kTen =
    R"(extern "C" __global__ void ten(const double* x, const double* v, double* e, float* w,
    Array2D<double> grid, int n, long long first, unsigned int flags, double dt, float q) {})";

// 29 parameters: the argument list of a particle pusher with many fields.
std::string twenty_nine() {
  std::string s = "extern \"C\" __global__ void twenty_nine(";
  for (int i = 0; i < 12; ++i) s += "const double* p" + std::to_string(i) + ", ";
  for (int i = 0; i < 5; ++i) s += "Array3D<double> f" + std::to_string(i) + ", ";
  for (int i = 0; i < 6; ++i) s += "long long n" + std::to_string(i) + ", ";
  for (int i = 0; i < 5; ++i) s += "double c" + std::to_string(i) + ", ";
  return s + "int last) {}";
}

std::map<std::string, double> g_ns_per_arg;

template <typename Prepare>
void run(benchmark::State& state, const std::string& label, int arguments, Prepare&& prepare) {
  for (auto _ : state) {
    auto packed = prepare();
    benchmark::DoNotOptimize(packed.pointers());
  }
  state.SetItemsProcessed(state.iterations() * arguments);
  state.counters["ns_per_arg"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * arguments,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  g_ns_per_arg[label] = 0;  // filled from the counter below
}

struct Data {
  cn::Array<double> x = cn::zeros<double>({1024}, cn::Backend::emulated);
  cn::Array<float> w = cn::zeros<float>({1024}, cn::Backend::emulated);
  cn::Array<double> g2 = cn::zeros<double>({32, 32}, cn::Backend::emulated);
  cn::Array<double> g3 = cn::zeros<double>({8, 8, 8}, cn::Backend::emulated);
};

Data& data() {
  static Data d;
  return d;
}

void prepare_10(benchmark::State& state, bool checked) {
  cn::CudaKernel k(kTen, "ten", {.check_signature = checked});
  Data& d = data();
  run(state, checked ? "10 checked" : "10 unchecked", 10,
      [&] { return k.prepare_args(d.x, d.x, d.x, d.w, d.g2, 1024, 0LL, 3u, 0.1, 1.0f); });
}

void prepare_29(benchmark::State& state, bool checked) {
  cn::CudaKernel k(twenty_nine(), "twenty_nine", {.check_signature = checked});
  Data& d = data();
  const auto& x = d.x;
  const auto& g = d.g3;
  run(state, checked ? "29 checked" : "29 unchecked", 29, [&] {
    return k.prepare_args(x, x, x, x, x, x, x, x, x, x, x, x, g, g, g, g, g, 1LL, 2LL, 3LL, 4LL,
                          5LL, 6LL, 0.1, 0.2, 0.3, 0.4, 0.5, 7);
  });
}

void prepare_10_checked(benchmark::State& s) {
  prepare_10(s, true);
}
void prepare_10_unchecked(benchmark::State& s) {
  prepare_10(s, false);
}
void prepare_29_checked(benchmark::State& s) {
  prepare_29(s, true);
}
void prepare_29_unchecked(benchmark::State& s) {
  prepare_29(s, false);
}

}  // namespace

BENCHMARK(prepare_10_checked);
BENCHMARK(prepare_10_unchecked);
BENCHMARK(prepare_29_checked);
BENCHMARK(prepare_29_unchecked);

int main(int argc, char** argv) {
  ::benchmark::Initialize(&argc, argv);
  if (::benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ::benchmark::RunSpecifiedBenchmarks();
  ::benchmark::Shutdown();
  return 0;
}
