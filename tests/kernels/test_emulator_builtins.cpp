// The CUDA device API the kernel emulator speaks (cunumpy/emulator_builtins.hpp): a kernel per
// family of the CUDA Programming Guide's lists, each result compared with the host's; what it
// refuses, refused by name.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>

#include "kernel_sources.hpp"
#include "on_backend.hpp"
#include "test_environment.hpp"

namespace cn = cunumpy;
using namespace cunumpy_test;

namespace {

class EmulatorBuiltins : public OnEmulatedWithCompiler {};

// Runs `body` (statements writing out[0..n)) as a one-thread kernel and returns out.
std::vector<double> one_thread(const std::string& name, const std::string& body, long long n) {
  cn::CudaKernel k("extern \"C\" __global__ void " + name + "(double* out) {\n" + body + "\n}",
                   name);
  auto out = cn::zeros<double>({n});
  k(cn::threads(1), out);
  const auto h = cn::to_host(out);
  return std::vector<double>(h.data(), h.data() + n);
}

}  // namespace

TEST_F(EmulatorBuiltins, VectorTypesHaveCudasLayoutAndMakers) {
  const auto out = one_thread("vectors", R"(
    double4 d = make_double4(1.0, 2.0, 3.0, 4.0);
    float2 f = make_float2(5.0f, 6.0f);
    int3 i = make_int3(7, 8, 9);
    uchar4 c = make_uchar4(10, 11, 12, 13);
    longlong2 l = make_longlong2(14, 15);
    uint3 u = make_uint3(16, 17, 18);
    out[0] = d.x + d.y + d.z + d.w; out[1] = f.x * f.y; out[2] = i.x + i.y + i.z;
    out[3] = c.x + c.w; out[4] = (double)(l.x * l.y); out[5] = u.x + u.z;
    out[6] = sizeof(double2) + 100 * alignof(double2);
    out[7] = sizeof(float4) + 100 * alignof(float4);
    out[8] = sizeof(int3) + 100 * alignof(int3);
    out[9] = sizeof(char2) + 100 * alignof(char2);
    out[10] = sizeof(short4) + 100 * alignof(short4);
    out[11] = sizeof(double4) + 100 * alignof(double4);)",
                              12);
  const std::vector<double> want = {10,        30,        24,       23,      210,     34,
                                    16 + 1600, 16 + 1600, 12 + 400, 2 + 200, 8 + 800, 32 + 1600};
  EXPECT_EQ(out, want);
}

TEST_F(EmulatorBuiltins, IntegerIntrinsicsEqualTheHost) {
  const auto out = one_thread("integers", R"(
    out[0] = __popc(0xf0f0u); out[1] = __popcll(0xffffffffffull);
    out[2] = __clz(1); out[3] = __clzll(1ll << 40); out[4] = __ffs(0x50); out[5] = __ffsll(0);
    out[6] = __brev(1u); out[7] = (double)__brevll(2ull);
    out[8] = __byte_perm(0x33221100u, 0x77665544u, 0x4150u);
    out[9] = __mulhi(0x40000000, 8); out[10] = __umulhi(0xffffffffu, 0xffffffffu);
    out[11] = (double)__umul64hi(1ull << 63, 4ull); out[12] = __mul24(-3, 5);
    out[13] = __sad(3, 10, 1u); out[14] = __uhadd(7u, 8u); out[15] = __urhadd(7u, 8u);
    out[16] = __funnelshift_l(0x80000000u, 1u, 1u); out[17] = __funnelshift_r(2u, 1u, 1u);
    out[18] = __hadd(-3, 0); out[19] = __rhadd(-3, 0);)",
                              20);
  const std::vector<double> want = {8,
                                    40,
                                    31,
                                    23,
                                    5,
                                    0,
                                    2147483648.0,
                                    static_cast<double>(1ull << 62),
                                    static_cast<double>(0x44115500u),
                                    2,
                                    static_cast<double>(0xfffffffeu),
                                    2,
                                    -15,
                                    8,
                                    7,
                                    8,
                                    3,
                                    static_cast<double>(0x80000001u),
                                    -2,
                                    -1};
  EXPECT_EQ(out, want);
}

TEST_F(EmulatorBuiltins, BitCastsAndRoundedConversionsEqualTheHost) {
  const auto out = one_thread("conversions", R"(
    out[0] = __float_as_int(1.0f); out[1] = __int_as_float(0x40400000);
    out[2] = (double)__double_as_longlong(2.0); out[3] = __longlong_as_double(0x3ff8000000000000ll);
    out[4] = __double2hiint(1.0); out[5] = __hiloint2double(0x40080000, 0);
    out[6] = __float2int_rn(2.5f); out[7] = __float2int_rn(3.5f); out[8] = __float2int_rz(-2.7f);
    out[9] = __float2int_ru(2.1f); out[10] = __float2int_rd(-2.1f);
    out[11] = __double2int_rn(1e300); out[12] = __double2int_rn(-1e300);
    out[13] = __double2uint_rn(-5.0); out[14] = __float2int_rz(__int_as_float(0x7fc00000));
    out[15] = __double2float_rz(1.0 + 1e-12) == 1.0f;
    out[16] = __double2float_ru(1.0 + 1e-12) > 1.0f;
    out[17] = __double2float_rd(-1.0 - 1e-12) < -1.0f;
    out[18] = __ll2float_rz(16777217ll); out[19] = __ll2float_ru(16777217ll);
    out[20] = __saturatef(1.5f) + 10 * __saturatef(-0.5f);
    out[21] = (double)__double2ll_rn(-7.5);)",
                              22);
  const std::vector<double> want = {static_cast<double>(std::bit_cast<int>(1.0f)),
                                    3.0,
                                    static_cast<double>(std::bit_cast<long long>(2.0)),
                                    1.5,
                                    static_cast<double>(0x3ff00000),
                                    3.0,
                                    2,
                                    4,
                                    -2,
                                    3,
                                    -3,
                                    2147483647.0,
                                    -2147483648.0,
                                    0,
                                    0,
                                    1,
                                    1,
                                    1,
                                    16777216.0,
                                    16777218.0,
                                    1.0,
                                    -8};
  EXPECT_EQ(out, want);
}

TEST_F(EmulatorBuiltins, FloatingIntrinsicsAndMathEqualTheHost) {
  const auto out = one_thread("math", R"(
    out[0] = __fadd_rn(0.1f, 0.2f); out[1] = __dmul_rn(0.1, 3.0); out[2] = __fma_rn(2.0, 3.0, 1.0);
    out[3] = __fsqrt_rn(2.0f); out[4] = __drcp_rn(4.0); out[5] = sinpi(0.5); out[6] = cospi(1.0);
    out[7] = rcbrt(8.0); out[8] = rhypot(3.0, 4.0); out[9] = norm3d(1.0, 2.0, 2.0);
    out[10] = normcdf(0.0); out[11] = exp10(2.0); out[12] = isnan(0.0 / 0.0);
    out[13] = copysign(2.0, -1.0); out[14] = erf(0.5); out[15] = log1p(1e-10);
    out[16] = tgamma(5.0); out[17] = fmod(7.5, 2.0);)",
                              18);
  const std::vector<double> want = {static_cast<double>(0.1f + 0.2f),
                                    0.1 * 3.0,
                                    7.0,
                                    static_cast<double>(std::sqrt(2.0f)),
                                    0.25,
                                    1.0,
                                    -1.0,
                                    0.5,
                                    0.2,
                                    std::hypot(1.0, 2.0, 2.0),
                                    0.5,
                                    100.0,
                                    1.0,
                                    -2.0,
                                    std::erf(0.5),
                                    std::log1p(1e-10),
                                    std::tgamma(5.0),
                                    1.5};
  EXPECT_EQ(out, want);
}

TEST_F(EmulatorBuiltins, BlockVotesCountAndCombineTheBlocksPredicates) {
  cn::CudaKernel votes(R"(
    extern "C" __global__ void votes(int* out) {
      int t = threadIdx.x;
      int count = __syncthreads_count(t % 3 == 0);
      int all = __syncthreads_and(t < 1000);
      int some = __syncthreads_or(t == 77);
      int none = __syncthreads_or(0);
      if (t == 5) { out[4 * blockIdx.x] = count; out[4 * blockIdx.x + 1] = all;
                    out[4 * blockIdx.x + 2] = some; out[4 * blockIdx.x + 3] = none; }
    })",
                       "votes", {.block_size = 100});
  auto out = cn::zeros<int>({8});
  votes(cn::threads(200), out);
  const auto h = cn::to_host(out);
  for (int b = 0; b < 2; ++b) {
    EXPECT_EQ(h(4 * b), 34) << b;  // 0, 3, ..., 99
    EXPECT_EQ(h(4 * b + 1), 1) << b;
    EXPECT_EQ(h(4 * b + 2), 1) << b;
    EXPECT_EQ(h(4 * b + 3), 0) << b;
  }
}

TEST_F(EmulatorBuiltins, WarpReductionsAndMatches) {
  cn::CudaKernel warp(R"(
    extern "C" __global__ void warp(unsigned* sum, int* low, unsigned* ors, unsigned* match,
                                    int* all) {
      int t = threadIdx.x, lane = t % 32;
      sum[t] = __reduce_add_sync(0xffffffffu, (unsigned)lane);
      low[t] = __reduce_min_sync(0xffffffffu, 100 - t);
      ors[t] = __reduce_or_sync(0xffffffffu, 1u << (lane % 8));
      match[t] = __match_any_sync(0xffffffffu, lane / 8);
      int pred = 0;
      (void)__match_all_sync(0xffffffffu, t / 32, &pred);
      all[t] = pred;
    })",
                      "warp", {.block_size = 64});
  auto sum = cn::zeros<unsigned>({64}), ors = cn::zeros<unsigned>({64}),
       match = cn::zeros<unsigned>({64});
  auto low = cn::zeros<int>({64}), all = cn::zeros<int>({64});
  warp(cn::threads(64), sum, low, ors, match, all);
  const auto hs = cn::to_host(sum), ho = cn::to_host(ors), hm = cn::to_host(match);
  const auto hl = cn::to_host(low), ha = cn::to_host(all);
  for (int t = 0; t < 64; ++t) {
    const int w = t / 32, lane = t % 32;
    EXPECT_EQ(hs(t), 31u * 32u / 2u) << t;
    EXPECT_EQ(hl(t), 100 - (32 * w + 31)) << t;
    EXPECT_EQ(ho(t), 0xffu) << t;
    EXPECT_EQ(hm(t), 0xffu << (8 * (lane / 8))) << t;
    EXPECT_EQ(ha(t), 1) << t;
  }
}

TEST_F(EmulatorBuiltins, AtomicsOnEveryWidthAndScope) {
  cn::CudaKernel atomics(R"(
    extern "C" __global__ void atomics(unsigned* inc, unsigned* dec, unsigned long long* cas64,
                                       int* cas32, unsigned short* cas16, double* sum,
                                       float* fsum, int* hi) {
      atomicInc(inc, 9u);
      atomicDec(dec, 9u);
      unsigned long long old = *cas64, seen;
      while ((seen = atomicCAS(cas64, old, old + 3ull)) != old) old = seen;
      int o32 = *cas32, s32;
      while ((s32 = atomicCAS_block(cas32, o32, o32 + 1)) != o32) o32 = s32;
      unsigned short o16 = *cas16, s16;
      while ((s16 = atomicCAS(cas16, o16, (unsigned short)(o16 + 1))) != o16) o16 = s16;
      atomicAdd_system(sum, 0.5);
      atomicAdd(fsum, 0.25f);
      atomicMax_block(hi, (int)(blockIdx.x * blockDim.x + threadIdx.x));
    })",
                         "atomics", {.block_size = 64});
  const int n = 64 * 16;
  auto inc = cn::zeros<unsigned>({1}), dec = cn::zeros<unsigned>({1});
  auto cas64 = cn::zeros<unsigned long long>({1});
  auto cas32 = cn::zeros<int>({1});
  auto cas16 = cn::zeros<unsigned short>({1});
  auto sum = cn::zeros<double>({1});
  auto fsum = cn::zeros<float>({1});
  auto hi = cn::zeros<int>({1});
  atomics(cn::threads(n), inc, dec, cas64, cas32, cas16, sum, fsum, hi);
  EXPECT_EQ(cn::to_host(inc)(0), static_cast<unsigned>(n % 10)) << "wraps to 0 after 9";
  // dec: 0 -> 9, then down to 0 and around again: n decrements from 0 over a cycle of 10.
  EXPECT_EQ(cn::to_host(dec)(0), static_cast<unsigned>((10 - n % 10) % 10));
  EXPECT_EQ(cn::to_host(cas64)(0), 3ull * n);
  EXPECT_EQ(cn::to_host(cas32)(0), n);
  EXPECT_EQ(cn::to_host(cas16)(0), static_cast<unsigned short>(n));
  EXPECT_EQ(cn::to_host(sum)(0), 0.5 * n);
  EXPECT_EQ(cn::to_host(fsum)(0), 0.25f * n);
  EXPECT_EQ(cn::to_host(hi)(0), n - 1);
}

TEST_F(EmulatorBuiltins, WhatItCannotDoIsRefusedByName) {
  struct Case {
    const char* call;
    const char* expected;
  };
  const Case cases[] = {
      {"out[0] = __fadd_rz(1.0f, 2.0f);", "does not support __fadd_rz: directed-rounding"},
      {"out[0] = erfinv(0.5);", "does not support erfinv"},
      {"out[0] = __shfl(1.0, 0);", "does not support __shfl: the warp functions without _sync"},
      {"out[0] = tex1Dfetch(0, 1);", "does not support tex1Dfetch: texture objects"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string what =
        message_of([&] { (void)one_thread("refused" + std::to_string(i++), c.call, 1); });
    EXPECT_NE(what.find(c.expected), std::string::npos) << c.call << "\n" << what;
  }
  // extern __shared__ in an included header: said, with where to declare it instead.
  TempDir dir;
  dir.write("scratch.cuh",
            "__device__ inline double* scratch() {\n"
            "  extern __shared__ double buffer[];\n  return buffer;\n}\n");
  cn::CudaKernel k(R"(#include "scratch.cuh"
    extern "C" __global__ void use(double* x) { scratch()[threadIdx.x] = x[threadIdx.x]; })",
                   "use", {.include_dirs = {dir.path}});
  auto x = cn::zeros<double>({4});
  const std::string what = message_of([&] { k({.n_threads = 4, .shared_mem = 64}, x); });
  EXPECT_NE(what.find("scratch.cuh declares extern __shared__ memory"), std::string::npos) << what;
}
