// The host vector loops (Highway) on a target chosen by CUNUMPY_HOST_SIMD, each result against
// the device formulas (random.cuh, morton.cuh) or a plain reference: Philox fills, Morton keys,
// periodic cell keys, the sort's scans, settle and gathers.  Built and run by
// scripts/arm_check.sh under qemu-user for NEON, SVE and SVE2 at several vector lengths; any
// host compiler builds it too.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cunumpy/morton.cuh>
#include <cunumpy/random.cuh>
#include <limits>
#include <numeric>
#include <random>
#include <vector>
#include "host_simd/cell_keys.hpp"
#include "host_simd/generators.hpp"
#include "host_simd/targets.hpp"
#include "sort/sort_simd.hpp"
using namespace cunumpy::detail;
static int failures = 0;
#define CHECK(c, ...)                              \
  do {                                             \
    if (!(c)) {                                    \
      ++failures;                                  \
      if (failures < 10) std::printf(__VA_ARGS__); \
    }                                              \
  } while (0)
int main() {
  std::printf("%s\n", host_simd::choice().report.c_str());
  if (!host_simd::vector_loops()) {
    std::printf("no vector loops\n");
    return 0;
  }
  const long long n = 1003;
  std::vector<std::uint64_t> ids(n);
  for (long long i = 0; i < n; ++i) ids[i] = 0x9E3779B97F4A7C15ull * i;
  std::vector<double> o0(n, -1), o1(n, -1);
  long long e = host_simd::uniform_ids(o0.data(), o1.data(), 42, ids.data(), 7, 0, n);
  for (long long i = 0; i < e; ++i) {
    double a, b;
    cunumpy_uniform2(42, ids[i], 7, &a, &b);
    CHECK(a == o0[i] && b == o1[i], "uniform_ids %lld\n", i);
  }
  std::vector<double> pr(2 * n, -1);
  e = host_simd::uniform_pairs(pr.data(), 9, 3, 100, -2.0, 5.0, 0, n);
  for (long long p = 0; p < e; ++p) {
    const auto w = cunumpy_philox_words(9, 3, 100 + p);
    CHECK(pr[2 * p] == scale_shift(-2.0, 7.0, words_to_uniform(w, 0)) &&
              pr[2 * p + 1] == scale_shift(-2.0, 7.0, words_to_uniform(w, 1)),
          "pairs %lld\n", p);
  }
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> u(-0.2, 1.2);
  std::vector<double> x(3 * n);
  for (auto& v : x) v = u(g);
  x[3 * 5] = std::numeric_limits<double>::quiet_NaN();
  const double lo[] = {0, 0, 0}, sc[] = {double(1 << 21), double(1 << 21), double(1 << 21)};
  std::vector<std::uint64_t> k(n);
  bool non_finite = false;
  e = host_simd::morton3(k.data(), x.data(), lo, sc, 21, 0, n, &non_finite);
  CHECK(e <= 5 || non_finite, "morton3: the NaN of row 5 is not reported\n");
  for (long long i = 0; i < e; ++i)
    CHECK(k[i] == cunumpy_morton_key3(x[3 * i], x[3 * i + 1], x[3 * i + 2], 0, 0, 0, sc[0], sc[1],
                                      sc[2], 21),
          "morton3 %lld\n", i);
  for (int levels : {16, 31, 32}) {
    const double s2[] = {std::ldexp(1.0, levels), std::ldexp(1.0, levels)};
    non_finite = false;
    e = host_simd::morton2(k.data(), x.data(), lo, s2, levels, 0, n, &non_finite);
    CHECK(e <= 7 || non_finite, "morton2: the NaN of row 7 is not reported\n");
    for (long long i = 0; i < e; ++i)
      CHECK(k[i] == cunumpy_morton_key2(x[2 * i], x[2 * i + 1], 0, 0, s2[0], s2[1], levels),
            "morton2 %d %lld\n", levels, i);
  }
  // scans
  for (int digits : {64, 1024, 16384}) {
    std::vector<std::uint32_t> c32(digits);
    std::vector<std::uint16_t> c16(digits);
    for (int d = 0; d < digits; ++d) {
      c32[d] = g() % 5;
      c16[d] = c32[d];
    }
    std::vector<std::uint32_t> r32 = c32;
    std::uint32_t off = 0, top = 0;
    for (int d = 0; d < digits; ++d) {
      const auto c = r32[d];
      r32[d] = off;
      off += c;
      top = std::max(top, c);
    }
    CHECK(sort_simd::scan_counts(c32.data(), digits) == top && c32 == r32, "scan32 %d\n", digits);
    CHECK(sort_simd::scan_counts(c16.data(), digits) == top &&
              std::equal(c16.begin(), c16.end(), r32.begin()),
          "scan16 %d\n", digits);
  }
  // settle: nearly sorted keys with small groups, against a stable sort
  for (int trial = 0; trial < 50; ++trial) {
    const long long m = 2000 + trial;
    std::vector<std::uint64_t> keys(m);
    std::vector<std::uint16_t> t16(m);
    std::vector<std::uint32_t> t32(m);
    for (long long i = 0; i < m; ++i) {
      keys[i] = (i / 3) * 4 + g() % 6;
      t16[i] = i;
      t32[i] = i;
    }
    std::vector<long long> ord(m);
    std::iota(ord.begin(), ord.end(), 0);
    std::stable_sort(ord.begin(), ord.end(),
                     [&](long long a, long long b) { return keys[a] < keys[b]; });
    auto k1 = keys, k2 = keys;
    sort_simd::settle(k1.data(), t16.data(), m);
    sort_simd::settle(k2.data(), t32.data(), m);
    for (long long i = 0; i < m; ++i)
      CHECK(k1[i] == keys[ord[i]] && t16[i] == ord[i] && k2[i] == keys[ord[i]] && t32[i] == ord[i],
            "settle %d %lld\n", trial, i);
  }
  // gathers
  std::vector<std::uint32_t> f32(4096);
  std::vector<std::uint64_t> f64(4096), out(3000);
  for (int i = 0; i < 4096; ++i) {
    f32[i] = g();
    f64[i] = g();
  }
  std::vector<std::uint16_t> tg16(3000);
  std::vector<std::uint32_t> tg32(3000);
  for (int i = 0; i < 3000; ++i) {
    tg16[i] = g() % 4096;
    tg32[i] = tg16[i];
  }
  sort_simd::gather_by_tag(out.data(), f32.data(), tg16.data(), 3000);
  for (int i = 0; i < 3000; ++i) CHECK(out[i] == f32[tg16[i]], "g32/16 %d\n", i);
  sort_simd::gather_by_tag(out.data(), f64.data(), tg32.data(), 3000);
  for (int i = 0; i < 3000; ++i) CHECK(out[i] == f64[tg32[i]], "g64/32 %d\n", i);
  // The periodic cell keys (a PIC re-sort's): float and double positions and cells with
  // offsets, some outside the box, against cell_key.
  {
    const long long n = 1003;
    std::vector<float> pf[3], off[3];
    std::vector<double> pd[3];
    std::vector<std::int32_t> c[3];
    unsigned state = 7;
    for (int a = 0; a < 3; ++a)
      for (long long i = 0; i < n; ++i) {
        state = state * 1664525u + 1013904223u;
        const double x = (static_cast<double>(state >> 8) / 16777216.0 * 1.2 - 0.1) * 40;
        pf[a].push_back(static_cast<float>(x));
        pd[a].push_back(x);
        c[a].push_back(static_cast<std::int32_t>(std::floor(x)));
        off[a].push_back(std::min(static_cast<float>(x - std::floor(x)), 0.99999994f));
      }
    const auto same = [&](const auto& columns, const char* what) {
      for (int dim = 1; dim <= 3; ++dim) {
        std::vector<std::uint64_t> keys(n);
        long long i = host_simd::cell_keys(columns, dim, 0, n, keys.data());
        CHECK(i > n / 2, "cell keys %s %dD: the vector loop stopped at %lld\n", what, dim, i);
        for (; i < n; ++i) keys[i] = host_simd::cell_key(columns, dim, i);
        for (long long k = 0; k < n; ++k)
          CHECK(keys[k] == host_simd::cell_key(columns, dim, k), "cell keys %s %dD row %lld\n",
                what, dim, k);
      }
    };
    const host_simd::CellKeyColumns<float> f{
        {pf[0].data(), pf[1].data(), pf[2].data()}, {}, {1.0, 1.0, 1.0}, {48, 40, 36}};
    const host_simd::CellKeyColumns<double> d{
        {pd[0].data(), pd[1].data(), pd[2].data()}, {}, {1.0, 1.0, 1.0}, {48, 40, 36}};
    const host_simd::CellKeyColumns<float> m{{off[0].data(), off[1].data(), off[2].data()},
                                             {c[0].data(), c[1].data(), c[2].data()},
                                             {1.0, 1.0, 1.0},
                                             {48, 40, 36}};
    same(f, "float");
    same(d, "double");
    same(m, "cells");
  }
  std::printf("%s\n", failures == 0 ? "all equal" : "FAILURES");
  return failures != 0;
}
