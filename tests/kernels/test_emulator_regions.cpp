// The kernel emulator's regions: kernels split at their barriers and warp operations run each
// piece between two as a loop over the block's threads.  Each kernel here runs split and, with
// -DCUNUMPY_EMULATOR_FIBERS, as fibers: the same bits both ways, and the values a GPU gives.
// Kernels the split cannot follow run as fibers; threads that diverge at a split kernel's
// synchronisation are reported.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>

#include "on_backend.hpp"

namespace cn = cunumpy;
using namespace cunumpy_test;

namespace {

class Regions : public OnEmulatedWithCompiler {};

// The kernel `name` of `source` split into regions and as fibers.
struct Both {
  cn::CudaKernel split, fibers;
  Both(const std::string& source, const std::string& name, cn::Dim3 block,
       std::vector<cn::TemplateArg> template_args = {})
      : split(source, name, {.block_size = block, .template_args = template_args}),
        fibers(source, name,
               {.block_size = block,
                .options = {"-DCUNUMPY_EMULATOR_FIBERS"},
                .template_args = template_args}) {}
};

// n values, not all integers: sums round.
cn::Array<double> values(long long n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (long long i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = 0.1 * i + 1.0 / (1 + i % 7);
  return cn::from_host<double>(v, {n}, cn::Backend::emulated);
}

template <typename T>
void expect_same(const cn::Array<T>& a, const cn::Array<T>& b, const char* what) {
  const auto ha = cn::to_host(a), hb = cn::to_host(b);
  ASSERT_EQ(ha.size(), hb.size());
  for (long long i = 0; i < ha.size(); ++i) ASSERT_EQ(ha(i), hb(i)) << what << " at " << i;
}

}  // namespace

TEST_F(Regions, ABlockSumAtTheEndIsSplitAndAgreesWithFibersAndTheHost) {
  Both k(R"(
    #include <cunumpy/reduce.cuh>
    extern "C" __global__ void energy(const double* v, double* e, double* partial, int n) {
      const int j = threadIdx.x + blockDim.x * blockIdx.x;
      double w = 0.0;
      if (j < n) {
        w = 0.5 * v[j] * v[j];
        e[j] = w;
      }
      const double s = cunumpy_block_sum(j < n ? w : 0.0);
      if (threadIdx.x == 0) partial[blockIdx.x] = s;
    })",
         "energy", 128);
  EXPECT_EQ(k.split.emulated_as(), "regions");
  EXPECT_EQ(k.fibers.emulated_as(), "fibers");
  const long long n = 1000, blocks = 8;
  const auto v = values(n);
  auto e1 = cn::zeros<double>({n}), e2 = cn::zeros<double>({n});
  auto p1 = cn::zeros<double>({blocks}), p2 = cn::zeros<double>({blocks});
  k.split(cn::threads(n), v, e1, p1, static_cast<int>(n));
  k.fibers(cn::threads(n), v, e2, p2, static_cast<int>(n));
  expect_same(p1, p2, "block sums");
  expect_same(e1, e2, "energies");
  const auto hv = cn::to_host(v);
  const auto hp = cn::to_host(p1);
  for (long long b = 0; b < blocks; ++b) {
    double want = 0.0;
    for (long long j = b * 128; j < std::min(n, (b + 1) * 128); ++j) want += 0.5 * hv(j) * hv(j);
    EXPECT_NEAR(hp(b), want, 1e-12 * std::abs(want)) << "block " << b;
  }
}

TEST_F(Regions, WarpShuffleLoopsRunInOneExchangeAndRoundAsAGpu) {
  // The warp-shuffle reduction idiom in its usual forms: down and xor, a sum and a maximum, a
  // width, float and double; then lane 0's result, as every lane's.
  Both k(R"(
    extern "C" __global__ void warps(const double* v, double* sums, double* maxima,
                                     float* halves, double* ups, double* picks, int n) {
      const int j = threadIdx.x + blockDim.x * blockIdx.x;
      double s = j < n ? v[j] : 0.0;
      for (int offset = 16; offset > 0; offset >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, offset);
      double m = j < n ? v[j] : -1e300;
      for (int mask = 1; mask < warpSize; mask *= 2)
        m = fmax(m, __shfl_xor_sync(0xffffffffu, m, mask));
      float h = j < n ? (float)v[j] : 0.0f;
      for (unsigned o = 8; o >= 1; o /= 2) {
        h = h + __shfl_xor_sync(0xffffffffu, h, o, 16);
      }
      double u = j < n ? v[j] : 0.0;
      for (int o = 1; o < 32; o *= 2) u += __shfl_up_sync(0xffffffffu, u, o);
      double p = j < n ? v[j] : 0.0;
      for (int src = 3; src < 5; ++src) p = p * 0.5 + __shfl_sync(0xffffffffu, p, src);
      if (j < n) {
        maxima[j] = m;
        halves[j] = h;
        ups[j] = u;
        picks[j] = p;
      }
      if ((threadIdx.x & 31) == 0) sums[j / 32] = s;
    })",
         "warps", 64);
  EXPECT_EQ(k.split.emulated_as(), "regions");
  const long long n = 64 * 5;
  const auto v = values(n);
  auto s1 = cn::zeros<double>({n / 32}), s2 = cn::zeros<double>({n / 32});
  auto m1 = cn::zeros<double>({n}), m2 = cn::zeros<double>({n});
  auto h1 = cn::zeros<float>({n}), h2 = cn::zeros<float>({n});
  auto u1 = cn::zeros<double>({n}), u2 = cn::zeros<double>({n});
  auto p1 = cn::zeros<double>({n}), p2 = cn::zeros<double>({n});
  k.split(cn::threads(n), v, s1, m1, h1, u1, p1, static_cast<int>(n));
  k.fibers(cn::threads(n), v, s2, m2, h2, u2, p2, static_cast<int>(n));
  expect_same(s1, s2, "shuffle-down sums");
  expect_same(m1, m2, "xor maxima");
  expect_same(h1, h2, "xor sums over 16 lanes");
  expect_same(u1, u2, "shuffle-up sums");
  expect_same(p1, p2, "indexed shuffles");
  // The shuffle-down tree's order, as a GPU adds: lane l adds lane l + o at each step.
  const auto hv = cn::to_host(v);
  const auto hs = cn::to_host(s1);
  for (long long w = 0; w < n / 32; ++w) {
    double lane[32];
    for (int l = 0; l < 32; ++l) lane[l] = hv(w * 32 + l);
    for (int o = 16; o > 0; o >>= 1)
      for (int l = 0; l < 32; ++l) lane[l] += l + o < 32 ? lane[l + o] : lane[l];
    EXPECT_EQ(hs(w), lane[0]) << "warp " << w;
  }
  // The shuffle-up loop: lane l adds lane l - o, the lanes below o keep doubling their own.
  const auto hu = cn::to_host(u1);
  for (long long w = 0; w < n / 32; ++w) {
    double lane[32];
    for (int l = 0; l < 32; ++l) lane[l] = hv(w * 32 + l);
    for (int o = 1; o < 32; o *= 2)
      for (int l = 31; l >= 0; --l) lane[l] += l >= o ? lane[l - o] : lane[l];
    for (int l = 0; l < 32; ++l)
      EXPECT_EQ(hu(w * 32 + l), lane[l]) << "warp " << w << " lane " << l;
  }
}

TEST_F(Regions, SharedMemoryTreeWithBarriersInALoopAndValuesAcrossRegions) {
  // The classic shared-memory reduction (a barrier in a loop, a condition inside), with values
  // that live across the regions: an array, two declarators, a pointer, a const, a 2D block.
  Both k(R"(
    template <typename T>
    __global__ void tree(const T* v, T* out, int n) {
      __shared__ T tile[256];
      const int t = threadIdx.x + blockDim.x * threadIdx.y, threads = blockDim.x * blockDim.y;
      const int j = t + threads * blockIdx.x;
      T kept[2];
      kept[0] = j < n ? v[j] : T(0);
      kept[1] = 2 * kept[0];
      const int offsets[3] = {0, 1, 2};  // an array's initialiser, living across regions
      auto guard = [&](int k) { if (k < 0) return T(0); return T(k); };  // a lambda's return
      kept[1] += guard(-1);
      const T* base = v + threads * blockIdx.x;
      tile[t] = kept[0];
      __syncthreads();
      #pragma unroll 1
      for (int s = threads / 2; s > 0; s >>= 1) {
        if (t < s) tile[t] += tile[t + s];
        __syncthreads();
      }
      #pragma unroll
      for (int k = 0; k < 2; ++k) kept[k] += 0.0;
      if (j < n) out[j] = tile[0] + kept[1] - 2 * base[t] + T(offsets[2] - 2);
    })",
         "tree", cn::Dim3(16, 8, 1), {cn::DType::float64});
  EXPECT_EQ(k.split.emulated_as(), "regions");
  const long long n = 128 * 6 - 40;
  const auto v = values(n);
  auto o1 = cn::zeros<double>({n}), o2 = cn::zeros<double>({n});
  const cn::Launch launch{.grid = 6, .block = cn::Dim3(16, 8, 1)};
  k.split(launch, v, o1, static_cast<int>(n));
  k.fibers(launch, v, o2, static_cast<int>(n));
  expect_same(o1, o2, "tree sums");
  const auto hv = cn::to_host(v);
  const auto ho = cn::to_host(o1);
  double block0 = 0.0;
  for (int j = 0; j < 128; ++j) block0 += hv(j);
  EXPECT_NEAR(ho(5), block0, 1e-12 * block0);
}

TEST_F(Regions, VotesWarpReductionsAndDynamicSharedMemory) {
  Both k(R"(
    #include <cunumpy/reduce.cuh>
    extern "C" __global__ void votes(const double* v, unsigned* ballots, int* counts,
                                     double* warp_max, int n) {
      extern __shared__ double staged[];
      const int j = threadIdx.x + blockDim.x * blockIdx.x;
      const double x = j < n ? v[j] : 0.0;
      staged[threadIdx.x] = x;
      const unsigned b = __ballot_sync(0xffffffffu, x > 2.0);
      const int c = __syncthreads_count(x > 3.0);
      const double m = cunumpy_warp_max(staged[threadIdx.x ^ 1]);
      const int any = __any_sync(0xffffffffu, x > 4.0);
      const int all = __all_sync(0xffffffffu, x > 0.5);
      if (j < n) {
        ballots[j] = b;
        counts[j] = c + 1000 * any + 100000 * all;
        warp_max[j] = m;
      }
    })",
         "votes", 64);
  EXPECT_EQ(k.split.emulated_as(), "regions");
  const long long n = 64 * 3;
  const auto v = values(n);
  auto b1 = cn::zeros<unsigned>({n}), b2 = cn::zeros<unsigned>({n});
  auto c1 = cn::zeros<int>({n}), c2 = cn::zeros<int>({n});
  auto m1 = cn::zeros<double>({n}), m2 = cn::zeros<double>({n});
  const cn::Launch launch{.grid = 3, .block = 64, .shared_mem = 64 * sizeof(double)};
  k.split(launch, v, b1, c1, m1, static_cast<int>(n));
  k.fibers(launch, v, b2, c2, m2, static_cast<int>(n));
  expect_same(b1, b2, "ballots");
  expect_same(c1, c2, "counts");
  expect_same(m1, m2, "warp maxima");
  const auto hv = cn::to_host(v);
  unsigned want = 0;
  for (int l = 0; l < 32; ++l) want |= (hv(l) > 2.0 ? 1u : 0u) << l;
  EXPECT_EQ(cn::to_host(b1)(3), want);
}

TEST_F(Regions, WhatTheSplitCannotFollowRunsAsFibers) {
  const char* kernels = R"(
    __device__ double own_sum(double x) {
      for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
      return x;
    }
    extern "C" __global__ void early_return(double* x, int n) {
      const int j = threadIdx.x + blockDim.x * blockIdx.x;
      if (j >= n) return;
      __syncthreads();
      x[j] += 1.0;
    }
    extern "C" __global__ void conditional(double* x, int n) {
      const int j = threadIdx.x + blockDim.x * blockIdx.x;
      if (n > 0) {
        __syncthreads();
      }
      if (j < n) x[j] += 1.0;
    }
    extern "C" __global__ void helper(double* x, int n) {
      const int j = threadIdx.x + blockDim.x * blockIdx.x;
      const double s = own_sum(j < n ? x[j] : 0.0);
      if (j < n) x[j] = s;
    }
    extern "C" __global__ void ternary(double* x, int n) {
      const int j = threadIdx.x + blockDim.x * blockIdx.x;
      const double y = n > 0 ? __shfl_down_sync(0xffffffffu, 1.0, 1) : 0.0;
      if (j < n) x[j] += y;
    }
    extern "C" __global__ void shared_in_loop(double* x, int n) {
      const int j = threadIdx.x + blockDim.x * blockIdx.x;
      for (int r = 0; r < 2; ++r) {
        __shared__ double tile[32];
        tile[threadIdx.x] = j < n ? x[j] : 0.0;
        __syncthreads();
        if (j < n) x[j] = tile[threadIdx.x ^ 1] + 1.0 - tile[threadIdx.x ^ 1];
        __syncthreads();
      }
    }
    extern "C" __global__ void plain(double* x, int n) {
      const int j = threadIdx.x + blockDim.x * blockIdx.x;
      if (j < n) x[j] += 1.0;
    })";
  for (const char* name : {"early_return", "conditional", "helper", "ternary", "shared_in_loop"}) {
    cn::CudaKernel k(kernels, name, {.block_size = 32});
    EXPECT_EQ(k.emulated_as(), "fibers") << name;
    auto x = cn::ones<double>({64});
    k(cn::threads(64), x, 64);
    const std::string n = name;
    EXPECT_EQ(cn::to_host(x)(0), n == "helper" ? 32.0 : n == "shared_in_loop" ? 1.0 : 2.0) << n;
  }
  EXPECT_EQ(cn::CudaKernel(kernels, "plain", {.block_size = 32}).emulated_as(), "loop");
}

TEST_F(Regions, ThreadsThatDivergeAtASplitKernelsBarrierAreReported) {
  cn::CudaKernel k(R"(
    extern "C" __global__ void uneven(double* x) {
      for (int i = 0; i < (int)threadIdx.x % 3; ++i) __syncthreads();
      x[threadIdx.x] = 1.0;
    })",
                   "uneven", {.block_size = 32});
  EXPECT_EQ(k.emulated_as(), "regions");
  auto x = cn::zeros<double>({32});
  try {
    k(cn::threads(32), x);
    FAIL() << "expected an error";
  } catch (const cn::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("uneven"), std::string::npos) << what;
    EXPECT_NE(what.find("__syncthreads"), std::string::npos) << what;
    EXPECT_NE(what.find("the others returned"), std::string::npos) << what;
  }
}
