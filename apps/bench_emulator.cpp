// bench_emulator: what the kernel emulator costs (CUNUMPY_BACKEND=emulated, no GPU needed).
//
//   ./bench_emulator            (then a table of the push family's ratios)
//   ./bench_emulator --benchmark_repetitions=5   (the table from the medians)
//
// Benchmarks:
//   barriers_256x9        one block of 256 threads through 9 __syncthreads
//   elementwise/<n>       a barrier-free axpy over n doubles through the emulator (2^20: in the
//                         caches; 2^24: from memory) ...
//   hand_loop/<n>         ... and the same loop written by hand on the host
//   module_axpy/<n>       the axpy of a module whose other kernel has barriers (searched kernel
//                         by kernel: a loop, as elementwise) ...
//   module_axpy_fibers/<n> ... and an axpy that names that kernel's barrier function (never
//                         called): fibers from its start
//   warp_reduce_1024      cunumpy_block_sum over one block of 1024 threads
//   push/<variant>        a ported code's particle push (PICKSC pic2's 2D CIC push, a
//                         particle a thread, 2^20 particles, blocks of 256, one host thread)
//                         with its kinetic energy summed in each of the ways a CUDA port
//                         writes it: none, cunumpy_block_sum_to, cunumpy_block_sum (a partial
//                         per block), a warp-shuffle loop with one atomicAdd per warp, an
//                         atomicAdd per thread; with 8 plain __syncthreads (the cost of
//                         one barrier per thread); and as fibers without reaching a barrier
//                         (a barrier on a branch never taken);
//   push/energy_stored    the push with its energy computed and stored, not summed (what
//                         the summing variants cost beyond computing it);
//   push/<variant>/fibers the variants with synchronisations run as fibers
//                         (-DCUNUMPY_EMULATOR_FIBERS) instead of split into regions;
//   push_host_loop        ... and the same push as a loop on the host (one core)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace cn = cunumpy;

namespace {

void barriers_256x9(benchmark::State& state) {
  auto e = cn::use_backend(cn::Backend::emulated);
  cn::CudaKernel k(R"(
    extern "C" __global__ void barriers(double* x) {
      __shared__ double s[256];
      s[threadIdx.x] = threadIdx.x;
      for (int r = 0; r < 9; ++r) {
        __syncthreads();
        s[threadIdx.x] += s[(threadIdx.x + 1) % 256];
      }
      x[threadIdx.x] = s[threadIdx.x];
    })",
                   "barriers", {.block_size = 256});
  auto x = cn::zeros<double>({256});
  k(cn::threads(256), x);  // compile and warm up
  for (auto _ : state) k(cn::threads(256), x);
}

const char* kAxpy = R"(
  extern "C" __global__ void axpy(double a, const double* x, double* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
  })";

void elementwise(benchmark::State& state) {
  auto e = cn::use_backend(cn::Backend::emulated);
  const long long n = state.range(0);
  cn::CudaKernel k(kAxpy, "axpy", {.block_size = 256});
  auto x = cn::ones<double>({n});
  auto y = cn::zeros<double>({n});
  k(cn::threads(n), 2.0, x, y, n);
  for (auto _ : state) k(cn::threads(n), 2.0, x, y, n);
  state.SetItemsProcessed(state.iterations() * n);
}

// A module: the axpy beside a kernel with a barrier; axpy_named names the barrier's function
// on a branch never taken.
const char* kModuleWithBarrier = R"(
  __device__ void stage(double* tile, double v) { tile[threadIdx.x] = v; __syncthreads(); }
  extern "C" __global__ void tiled(double* y) {
    __shared__ double tile[256];
    stage(tile, y[threadIdx.x]);
    y[threadIdx.x] = tile[(threadIdx.x + 1) % 256];
  }
  extern "C" __global__ void axpy(double a, const double* x, double* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
  }
  extern "C" __global__ void axpy_named(double a, const double* x, double* y, long long n) {
    __shared__ double tile[256];
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (n < 0) stage(tile, a);
    if (i < n) y[i] = a * x[i] + y[i];
  })";

void module_axpy_as(benchmark::State& state, const char* kernel) {
  auto e = cn::use_backend(cn::Backend::emulated);
  const long long n = state.range(0);
  cn::CudaModule m(kModuleWithBarrier, {"tiled", "axpy", "axpy_named"}, {.block_size = 256});
  cn::CudaKernel k = m.kernel(kernel);
  auto x = cn::ones<double>({n});
  auto y = cn::zeros<double>({n});
  k(cn::threads(n), 2.0, x, y, n);
  for (auto _ : state) k(cn::threads(n), 2.0, x, y, n);
  state.SetItemsProcessed(state.iterations() * n);
}
void module_axpy(benchmark::State& state) {
  module_axpy_as(state, "axpy");
}
void module_axpy_fibers(benchmark::State& state) {
  module_axpy_as(state, "axpy_named");
}

void hand_loop(benchmark::State& state) {
  const long long n = state.range(0);
  auto x = cn::ones<double>({n}, cn::Backend::host);
  auto y = cn::zeros<double>({n}, cn::Backend::host);
  const double* xp = x.data();
  double* yp = y.data();
  for (auto _ : state) {
#pragma omp parallel for
    for (long long i = 0; i < n; ++i) yp[i] = 2.0 * xp[i] + yp[i];
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void warp_reduce_1024(benchmark::State& state) {
  auto e = cn::use_backend(cn::Backend::emulated);
  cn::CudaKernel k(R"(
    #include <cunumpy/reduce.cuh>
    extern "C" __global__ void reduce(const double* x, double* out) {
      const double s = cunumpy_block_sum(x[threadIdx.x]);
      if (threadIdx.x == 0) out[0] = s;
    })",
                   "reduce", {.block_size = 1024});
  auto x = cn::ones<double>({1024});
  auto out = cn::zeros<double>({1});
  k(cn::threads(1024), x, out);
  for (auto _ : state) k(cn::threads(1024), x, out);
}

// ---- a ported push, its energy reduced in several ways -------------------------------------

// PICKSC pic2's gpush2l written as a CUDA port writes it: particles as x, y, vx, vy in a
// float array (idimp = 4), the field's two components at each node of a grid with one guard
// column and row, periodic boundaries.  REDUCE is what is done with the kinetic energy (a
// source of its own for each, as a port has: the emulator searches the text for barriers).
const char* kPush = R"(
  #include <cunumpy/reduce.cuh>
  extern "C" __global__ void push(float* part, const float* fxy, float qbm, float dt, int nx,
                                  int ny, int nxv, int np, double* ek) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    double e = 0.0;
    if (j < np) {
      float* p = part + 4 * j;
      const float x = p[0], y = p[1];
      const int nn = static_cast<int>(x), mm = static_cast<int>(y);
      const float dxp = x - nn, dyp = y - mm, amx = 1.0f - dxp, amy = 1.0f - dyp;
      const int n0 = 2 * (nn + nxv * mm), n1 = n0 + 2 * nxv;
      const float dx = amy * (amx * fxy[n0] + dxp * fxy[n0 + 2]) +
                       dyp * (amx * fxy[n1] + dxp * fxy[n1 + 2]);
      const float dy = amy * (amx * fxy[n0 + 1] + dxp * fxy[n0 + 3]) +
                       dyp * (amx * fxy[n1 + 1] + dxp * fxy[n1 + 3]);
      const float vx = p[2], vy = p[3];
      const float nvx = vx + qbm * dx, nvy = vy + qbm * dy;
      e = (double)((vx + nvx) * (vx + nvx) + (vy + nvy) * (vy + nvy));
      float nx_ = x + nvx * dt, ny_ = y + nvy * dt;
      if (nx_ < 0.0f) nx_ += nx;
      if (nx_ >= nx) nx_ -= nx;
      if (ny_ < 0.0f) ny_ += ny;
      if (ny_ >= ny) ny_ -= ny;
      p[0] = nx_; p[1] = ny_; p[2] = nvx; p[3] = nvy;
    }
    REDUCE
  })";

constexpr int kNx = 256, kNy = 256, kNxv = kNx + 1;
constexpr long long kParticles = 1 << 20;
constexpr float kQbm = 0.01f, kDt = 0.1f;

// Particles in cell order (16 a cell, at random places in it; PIC codes keep them sorted so
// that the field they read is in the caches), random velocities, a smooth field.
struct PushData {
  std::vector<float> part, fxy;
  PushData() : part(4 * kParticles), fxy(2 * kNxv * (kNy + 1)) {
    std::mt19937 g(7);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (long long j = 0; j < kParticles; ++j) {
      const long long cell = j * kNx * kNy / kParticles;
      part[4 * j] = static_cast<float>(cell % kNx) + u(g);
      part[4 * j + 1] = static_cast<float>(cell / kNx) + u(g);
      part[4 * j + 2] = u(g) - 0.5f;
      part[4 * j + 3] = u(g) - 0.5f;
    }
    for (std::size_t i = 0; i < fxy.size(); ++i) fxy[i] = 0.5f * std::sin(0.01f * i);
  }
};
const PushData& push_data() {
  static const PushData d;
  return d;
}

// One host thread for the push family (the host loop's one core), as every kernel is
// emulated on the host threads OpenMP has.
struct OneHostThread {
#if defined(_OPENMP)
  int before = omp_get_max_threads();
  OneHostThread() {
    omp_set_num_threads(1);
  }
  ~OneHostThread() {
    omp_set_num_threads(before);
  }
#endif
};

const char* kReductions[] = {
    "",
    "cunumpy_block_sum_to(ek, e);",
    "const double s = cunumpy_block_sum(e);\n"
    "    if (threadIdx.x == 0) ek[1 + blockIdx.x] = s;",
    "for (int o = 16; o > 0; o >>= 1) e += __shfl_down_sync(0xffffffffu, e, o);\n"
    "    if ((threadIdx.x & 31) == 0) atomicAdd(ek, e);",
    "atomicAdd(ek, e);",
    "for (int b = 0; b < 8; ++b) __syncthreads();",
    "if (np < 0) __syncthreads();",
    "ek[1 + blockIdx.x] = e;"};

// How each push variant ran: loop, regions or fibers.
std::map<std::string, std::string>& modes() {
  static std::map<std::string, std::string> m;
  return m;
}

void push_kernel(benchmark::State& state, const char* name, int reduce, bool fibers) {
  auto e = cn::use_backend(cn::Backend::emulated);
  OneHostThread one;
  const PushData& d = push_data();
  std::string source = kPush;
  source.replace(source.find("REDUCE"), 6, kReductions[reduce]);
  std::vector<std::string> options;
  if (fibers) options.push_back("-DCUNUMPY_EMULATOR_FIBERS");
  cn::CudaKernel k(source, "push", {.block_size = 256, .options = options});
  modes()[name] = k.emulated_as();
  auto part = cn::from_host<float>(d.part, {4 * kParticles}, cn::Backend::emulated);
  auto fxy =
      cn::from_host<float>(d.fxy, {static_cast<long long>(d.fxy.size())}, cn::Backend::emulated);
  auto ek = cn::zeros<double>({1 + kParticles / 256});
  const int np = static_cast<int>(kParticles);
  k(cn::threads(kParticles), part, fxy, kQbm, kDt, kNx, kNy, kNxv, np, ek);
  for (auto _ : state) k(cn::threads(kParticles), part, fxy, kQbm, kDt, kNx, kNy, kNxv, np, ek);
  state.SetItemsProcessed(state.iterations() * kParticles);
}

void push_host_loop(benchmark::State& state) {
  const PushData& d = push_data();
  std::vector<float> part = d.part;
  const float* fxy = d.fxy.data();
  double ek = 0.0;
  for (auto _ : state) {
    double sum = 0.0;
    for (long long j = 0; j < kParticles; ++j) {
      float* p = part.data() + 4 * j;
      const float x = p[0], y = p[1];
      const int nn = static_cast<int>(x), mm = static_cast<int>(y);
      const float dxp = x - nn, dyp = y - mm, amx = 1.0f - dxp, amy = 1.0f - dyp;
      const int n0 = 2 * (nn + kNxv * mm), n1 = n0 + 2 * kNxv;
      const float dx =
          amy * (amx * fxy[n0] + dxp * fxy[n0 + 2]) + dyp * (amx * fxy[n1] + dxp * fxy[n1 + 2]);
      const float dy = amy * (amx * fxy[n0 + 1] + dxp * fxy[n0 + 3]) +
                       dyp * (amx * fxy[n1 + 1] + dxp * fxy[n1 + 3]);
      const float vx = p[2], vy = p[3];
      const float nvx = vx + kQbm * dx, nvy = vy + kQbm * dy;
      sum += static_cast<double>((vx + nvx) * (vx + nvx) + (vy + nvy) * (vy + nvy));
      float nx = x + nvx * kDt, ny = y + nvy * kDt;
      if (nx < 0.0f) nx += kNx;
      if (nx >= kNx) nx -= kNx;
      if (ny < 0.0f) ny += kNy;
      if (ny >= kNy) ny -= kNy;
      p[0] = nx;
      p[1] = ny;
      p[2] = nvx;
      p[3] = nvy;
    }
    ek += sum;
    benchmark::DoNotOptimize(ek);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kParticles);
}

// The push family's times per particle, kept for the closing table.
class Table : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      const double ns = r.GetAdjustedRealTime() * 1e3 / kParticles;  // us -> ns
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median") median_[r.run_name.str()] = ns;
      } else if (r.iterations > 0) {
        ns_[r.benchmark_name()] = ns;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void print() const {
    auto at = [&](const std::string& n) {  // the median of repetitions where there are some
      if (const auto m = median_.find(n); m != median_.end()) return m->second;
      const auto it = ns_.find(n);
      return it == ns_.end() ? 0.0 : it->second;
    };
    const double plain = at("push/none"), host = at("push_host_loop");
    if (plain <= 0.0 || host <= 0.0) return;
    std::printf("\nthe push family, ns a particle (one host thread), and its ratios:\n");
    std::printf("  %-34s %-8s %8s %10s %10s\n", "kernel", "runs as", "ns", "/ plain", "/ host");
    for (const char* n : {"push_host_loop", "push/none", "push/energy_stored", "push/block_sum_to",
                          "push/block_sum", "push/warp_shuffle", "push/atomic_per_thread",
                          "push/barriers_x8", "push/block_sum/fibers", "push/warp_shuffle/fibers",
                          "push/barriers_x8/fibers", "push/as_fibers"}) {
      const double t = at(n);
      const auto mode = modes().find(n);
      if (t > 0.0)
        std::printf("  %-34s %-8s %8.2f %10.2f %10.2f\n", n,
                    mode == modes().end() ? "host" : mode->second.c_str(), t, t / plain, t / host);
    }
    const double b = at("push/barriers_x8"), bf = at("push/barriers_x8/fibers"),
                 f = at("push/as_fibers");
    if (b > 0.0)
      std::printf("  one __syncthreads, per thread: %.2f ns in regions (beside the plain push)\n",
                  (b - plain) / 8.0);
    if (bf > 0.0 && f > 0.0)
      std::printf(
          "  one __syncthreads, per thread: %.2f ns as fibers (beside the push as fibers)\n",
          (bf - f) / 8.0);
  }

 private:
  std::map<std::string, double> ns_, median_;
};

}  // namespace

BENCHMARK(barriers_256x9)->Unit(benchmark::kMicrosecond);
BENCHMARK(elementwise)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMicrosecond);
BENCHMARK(hand_loop)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMicrosecond);
BENCHMARK(module_axpy)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(module_axpy_fibers)->Arg(1 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(warp_reduce_1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(push_host_loop)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(push_kernel, none, "push/none", 0, false)
    ->Name("push/none")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(push_kernel, energy_stored, "push/energy_stored", 7, false)
    ->Name("push/energy_stored")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(push_kernel, block_sum_to, "push/block_sum_to", 1, false)
    ->Name("push/block_sum_to")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(push_kernel, block_sum, "push/block_sum", 2, false)
    ->Name("push/block_sum")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(push_kernel, warp_shuffle, "push/warp_shuffle", 3, false)
    ->Name("push/warp_shuffle")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(push_kernel, atomic_per_thread, "push/atomic_per_thread", 4, false)
    ->Name("push/atomic_per_thread")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(push_kernel, barriers_x8, "push/barriers_x8", 5, false)
    ->Name("push/barriers_x8")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(push_kernel, block_sum_fibers, "push/block_sum/fibers", 2, true)
    ->Name("push/block_sum/fibers")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(push_kernel, warp_shuffle_fibers, "push/warp_shuffle/fibers", 3, true)
    ->Name("push/warp_shuffle/fibers")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(push_kernel, barriers_x8_fibers, "push/barriers_x8/fibers", 5, true)
    ->Name("push/barriers_x8/fibers")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(push_kernel, as_fibers, "push/as_fibers", 6, false)
    ->Name("push/as_fibers")
    ->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Table table;
  benchmark::RunSpecifiedBenchmarks(&table);
  table.print();
  benchmark::Shutdown();
  return 0;
}
