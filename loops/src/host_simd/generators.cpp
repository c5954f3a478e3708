// The Philox fills, the Morton keys and the periodic cell keys as one Highway source, compiled for every target of
// cunumpy/host_targets.hpp (foreach_target.h includes this file once per target).  The same
// formulas as random.cuh and morton.cuh, lane by lane: the same bits on every target.
// Measured by apps/bench_algorithms (philox_uniform, morton_keys_3d, against the scalar
// Philox and the BMI2 pdep encoder built with -march=native).
#include <cunumpy/host_targets.hpp>  // first: the targets compiled

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "host_simd/generators.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include "host_simd/cell_keys.hpp"
#include "host_simd/generators.hpp"

HWY_BEFORE_NAMESPACE();
namespace cunumpy::detail::host_simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
using D64 = hn::ScalableTag<std::uint64_t>;
using V64 = hn::Vec<D64>;
using DF = hn::ScalableTag<double>;
using VF = hn::Vec<DF>;

// Philox4x32-10 of one counter per 64-bit lane: the 32-bit words in the low halves (what the
// high halves hold is ignored: MulEven reads the low halves, and the results are masked).  The
// round keys are scalars broadcast as they are used (vectors may not be array elements or
// members: SVE's are sizeless).
struct PhiloxKeys {
  std::uint32_t k0[10], k1[10];
  explicit PhiloxKeys(std::uint64_t seed) {
    const auto s0 = static_cast<std::uint32_t>(seed), s1 = static_cast<std::uint32_t>(seed >> 32);
    for (int r = 0; r < 10; ++r) {
      k0[r] = static_cast<std::uint32_t>(s0 + static_cast<std::uint32_t>(r) * 0x9E3779B9u);
      k1[r] = static_cast<std::uint32_t>(s1 + static_cast<std::uint32_t>(r) * 0xBB67AE85u);
    }
  }
};

// Rounds first..9 of the state (c0, c1, c2, c3).
HWY_INLINE void rounds(const PhiloxKeys& key, V64& c0, V64& c1, V64& c2, V64& c3, int first) {
  const D64 d;
  const hn::Repartition<std::uint32_t, D64> d32;
  const V64 m0 = hn::Set(d, 0xD2511F53u), m1 = hn::Set(d, 0xCD9E8D57u);
  for (int r = first; r < 10; ++r) {
    const V64 q0 = hn::MulEven(hn::BitCast(d32, c0), hn::BitCast(d32, m0));
    const V64 q1 = hn::MulEven(hn::BitCast(d32, c2), hn::BitCast(d32, m1));
    c0 = hn::Xor3(hn::ShiftRight<32>(q1), c1, hn::Set(d, key.k0[r]));
    c2 = hn::Xor3(hn::ShiftRight<32>(q0), c3, hn::Set(d, key.k1[r]));
    c1 = q1;
    c3 = q0;
  }
}

// bits_to_uniform(lo, hi) per lane: the 53-bit integer (hi << 21 | lo >> 11), exact as a
// double, times 2^-53.
HWY_INLINE VF uniform(V64 lo, V64 hi) {
  const D64 d;
  const DF df;
  const hn::RebindToSigned<D64> di;
  const V64 low21 = hn::And(hn::ShiftRight<11>(lo), hn::Set(d, (1u << 21) - 1));
  const V64 bits = hn::OrAnd(low21, hn::ShiftLeft<21>(hi), hn::Set(d, (1ull << 53) - 1));
  return hn::Mul(hn::ConvertTo(df, hn::BitCast(di, bits)), hn::Set(df, 1.0 / 9007199254740992.0));
}

long long UniformIds(double* HWY_RESTRICT out0, double* HWY_RESTRICT out1, std::uint64_t seed,
                     const std::uint64_t* HWY_RESTRICT stream, std::uint64_t counter,
                     long long begin, long long end) {
  const D64 d;
  const DF df;
  const hn::Repartition<std::uint32_t, D64> d32;
  const auto n = static_cast<long long>(hn::Lanes(d));
  const PhiloxKeys key(seed);
  // The counter is the same for every element: the first round's multiply of its word 0 is
  // done once.
  const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * static_cast<std::uint32_t>(counter);
  const V64 hi0 = hn::Set(d, static_cast<std::uint32_t>(p0 >> 32));
  const V64 lo0 = hn::Set(d, static_cast<std::uint32_t>(p0));
  const V64 c1k0 =
      hn::Set(d, static_cast<std::uint32_t>(counter >> 32) ^ static_cast<std::uint32_t>(seed));
  const V64 m1 = hn::Set(d, 0xCD9E8D57u);
  long long i = begin;
  for (; i + n <= end; i += n) {
    const V64 s = hn::LoadU(d, stream + i);  // counter words 2 (low half) and 3 (high half)
    const V64 q1 = hn::MulEven(hn::BitCast(d32, s), hn::BitCast(d32, m1));
    V64 c0 = hn::Xor(hn::ShiftRight<32>(q1), c1k0), c1 = q1,
        c2 = hn::Xor3(hi0, hn::ShiftRight<32>(s), hn::Set(d, key.k1[0])), c3 = lo0;
    rounds(key, c0, c1, c2, c3, 1);
    hn::StoreU(uniform(/*lo=*/c1, /*hi=*/c0), df, out0 + i);
    if (out1 != nullptr) hn::StoreU(uniform(/*lo=*/c3, /*hi=*/c2), df, out1 + i);
  }
  return i;
}

long long UniformPairs(double* HWY_RESTRICT out, std::uint64_t seed, std::uint64_t stream,
                       std::uint64_t base, double a, double b, long long begin, long long end) {
  const D64 d;
  const DF df;
  const auto n = static_cast<long long>(hn::Lanes(d));
  const PhiloxKeys key(seed);
  const V64 s2 = hn::Set(d, static_cast<std::uint32_t>(stream));
  const V64 s3 = hn::Set(d, static_cast<std::uint32_t>(stream >> 32));
  const VF va = hn::Set(df, a), vs = hn::Set(df, b - a);
  long long p = begin;
  for (; p + n <= end; p += n) {
    const V64 ctr = hn::Iota(d, base + static_cast<std::uint64_t>(p));
    V64 c0 = ctr, c1 = hn::ShiftRight<32>(ctr), c2 = s2, c3 = s3;
    rounds(key, c0, c1, c2, c3, 0);
    const VF x01 = hn::Add(va, hn::Mul(vs, uniform(/*lo=*/c1, /*hi=*/c0)));
    const VF x23 = hn::Add(va, hn::Mul(vs, uniform(/*lo=*/c3, /*hi=*/c2)));
    hn::StoreInterleaved2(x01, x23, df, out + 2 * p);
  }
  return p;
}

// cunumpy_morton_cell per lane: (x - lower) * scale, NaN and below the box to 0, above it to
// the last cell, truncated.  Up to 31 levels (kNarrow) the cell is converted to a 32-bit
// integer, which AVX2 does in one instruction (a 64-bit conversion takes a dozen there).
template <bool kNarrow>
HWY_INLINE V64 cell(VF x, VF lower, VF scale, VF top) {
  const DF df;
  const D64 d;
  VF c = hn::Mul(hn::Sub(x, lower), scale);
  c = hn::IfThenElseZero(hn::Gt(c, hn::Zero(df)), c);  // compares with NaN are false: 0
  c = hn::Min(c, top);
  if constexpr (kNarrow) {
    const hn::Rebind<std::int32_t, DF> di32;
    const hn::Rebind<std::uint32_t, DF> du32;
    return hn::PromoteTo(d, hn::BitCast(du32, hn::DemoteTo(di32, c)));
  } else {
    const hn::RebindToSigned<DF> di;
    return hn::BitCast(d, hn::ConvertTo(di, c));
  }
}

// cunumpy_morton_spread3 / spread2 per lane.
HWY_INLINE V64 spread3(V64 v) {
  const D64 d;
  v = hn::And(v, hn::Set(d, 0x1FFFFFull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<32>(v)), hn::Set(d, 0x001F00000000FFFFull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<16>(v)), hn::Set(d, 0x001F0000FF0000FFull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<8>(v)), hn::Set(d, 0x100F00F00F00F00Full));
  v = hn::And(hn::Or(v, hn::ShiftLeft<4>(v)), hn::Set(d, 0x10C30C30C30C30C3ull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<2>(v)), hn::Set(d, 0x1249249249249249ull));
  return v;
}
HWY_INLINE V64 spread2(V64 v) {
  const D64 d;
  v = hn::And(v, hn::Set(d, 0xFFFFFFFFull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<16>(v)), hn::Set(d, 0x0000FFFF0000FFFFull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<8>(v)), hn::Set(d, 0x00FF00FF00FF00FFull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<4>(v)), hn::Set(d, 0x0F0F0F0F0F0F0F0Full));
  v = hn::And(hn::Or(v, hn::ShiftLeft<2>(v)), hn::Set(d, 0x3333333333333333ull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<1>(v)), hn::Set(d, 0x5555555555555555ull));
  return v;
}

// x - x is 0 for a finite x and NaN for inf and NaN: a sum of them stays 0 while every position
// is finite (two additions per coordinate, in the pass that computes the keys).
HWY_INLINE VF finite_check(VF acc, VF x) {
  return hn::Add(acc, hn::Sub(x, x));
}
HWY_INLINE bool all_finite(VF acc) {
  const DF df;
  return hn::AllTrue(df, hn::Eq(acc, hn::Zero(df)));
}

long long Morton3(std::uint64_t* HWY_RESTRICT keys, const double* HWY_RESTRICT x,
                  const double* lower, const double* scale, int levels, long long begin,
                  long long end, bool* non_finite) {
  const D64 d;
  const DF df;
  const auto n = static_cast<long long>(hn::Lanes(d));
  const VF l0 = hn::Set(df, lower[0]), l1 = hn::Set(df, lower[1]), l2 = hn::Set(df, lower[2]);
  const VF s0 = hn::Set(df, scale[0]), s1 = hn::Set(df, scale[1]), s2 = hn::Set(df, scale[2]);
  const VF top = hn::Set(df, static_cast<double>((1ull << levels) - 1ull));
  VF check = hn::Zero(df);
  long long i = begin;
  for (; i + n <= end; i += n) {
    VF px, py, pz;
    hn::LoadInterleaved3(df, x + 3 * i, px, py, pz);
    check = finite_check(finite_check(finite_check(check, px), py), pz);
    const V64 kx = spread3(cell<true>(px, l0, s0, top)), ky = spread3(cell<true>(py, l1, s1, top)),
              kz = spread3(cell<true>(pz, l2, s2, top));
    hn::StoreU(hn::Or3(kx, hn::ShiftLeft<1>(ky), hn::ShiftLeft<2>(kz)), d, keys + i);
  }
  if (!all_finite(check)) *non_finite = true;
  return i;
}

template <bool kNarrow>
long long morton2(std::uint64_t* HWY_RESTRICT keys, const double* HWY_RESTRICT x,
                  const double* lower, const double* scale, int levels, long long begin,
                  long long end, bool* non_finite) {
  const D64 d;
  const DF df;
  const auto n = static_cast<long long>(hn::Lanes(d));
  const VF l0 = hn::Set(df, lower[0]), l1 = hn::Set(df, lower[1]);
  const VF s0 = hn::Set(df, scale[0]), s1 = hn::Set(df, scale[1]);
  const VF top = hn::Set(df, static_cast<double>((1ull << levels) - 1ull));
  VF check = hn::Zero(df);
  long long i = begin;
  for (; i + n <= end; i += n) {
    VF px, py;
    hn::LoadInterleaved2(df, x + 2 * i, px, py);
    check = finite_check(finite_check(check, px), py);
    const V64 kx = spread2(cell<kNarrow>(px, l0, s0, top)),
              ky = spread2(cell<kNarrow>(py, l1, s1, top));
    hn::StoreU(hn::Or(kx, hn::ShiftLeft<1>(ky)), d, keys + i);
  }
  if (!all_finite(check)) *non_finite = true;
  return i;
}

long long Morton2(std::uint64_t* HWY_RESTRICT keys, const double* HWY_RESTRICT x,
                  const double* lower, const double* scale, int levels, long long begin,
                  long long end, bool* non_finite) {
  return levels <= 31 ? morton2<true>(keys, x, lower, scale, levels, begin, end, non_finite)
                      : morton2<false>(keys, x, lower, scale, levels, begin, end, non_finite);
}

// The periodic cell keys (cunumpy::periodic_cell_keys, cell_keys.hpp) of whole vectors: each
// lane computes cunumpy_periodic_cell's s in double (the position, or the stored cell plus its
// offset, times the inverse cell size), truncates it and spreads its bits; a lane whose s lies
// outside [0, cells) (which the wrap would move, or NaN) is redone by the scalar formula.
// Positions as doubles: float lanes promoted, double lanes as they are.
template <class DD, class DR>
HWY_INLINE hn::Vec<DD> AsDouble(DD dd, DR dr, const float* HWY_RESTRICT p) {
  return hn::PromoteTo(dd, hn::LoadU(dr, p));
}
template <class DD, class DR>
HWY_INLINE hn::Vec<DD> AsDouble(DD, DR dr, const double* HWY_RESTRICT p) {
  return hn::LoadU(dr, p);
}

template <int Dim, typename R, bool Cells>
long long KeysOf(const CellKeyColumns<R>& c, long long begin, long long end,
                 std::uint64_t* HWY_RESTRICT keys) {
  long long i = begin;
  const hn::ScalableTag<double> dd;
  const hn::RebindToSigned<decltype(dd)> di;
  const hn::RebindToUnsigned<decltype(dd)> du;
  const hn::Rebind<R, decltype(dd)> dr;
  const hn::Rebind<std::int32_t, decltype(dd)> d32;
  const auto lanes = static_cast<long long>(hn::Lanes(dd));
  for (; end - i >= lanes; i += lanes) {
    auto key = hn::Zero(du);
    auto inside = hn::FirstN(di, static_cast<size_t>(lanes));
    for (int a = 0; a < Dim; ++a) {
      auto t = AsDouble(dd, dr, c.x[a] + i);
      if constexpr (Cells)  // the cell plus its offset
        t = hn::Add(hn::ConvertTo(dd, hn::PromoteTo(di, hn::LoadU(d32, c.cell[a] + i))), t);
      // The truncation of an s in [0, cells); a lane outside them (or NaN) converts a zero
      // instead (no conversion out of range) and is redone.
      const auto scaled = hn::Mul(t, hn::Set(dd, c.inverse[a]));
      const auto in_range = hn::And(hn::Ge(scaled, hn::Zero(dd)),
                                    hn::Lt(scaled, hn::Set(dd, static_cast<double>(c.cells[a]))));
      inside = hn::And(inside, hn::RebindMask(di, in_range));
      const auto j = hn::ConvertTo(di, hn::IfThenElseZero(in_range, scaled));
      const auto bits = Dim == 3 ? spread3(hn::BitCast(du, j)) : spread2(hn::BitCast(du, j));
      key = hn::Or(key, a == 0 ? bits : a == 1 ? hn::ShiftLeft<1>(bits) : hn::ShiftLeft<2>(bits));
    }
    hn::StoreU(key, du, keys + i);
    if (!hn::AllTrue(di, inside)) [[unlikely]]
      for (long long l = i; l < i + lanes; ++l) keys[l] = cell_key(c, Dim, l);
  }
  return i;
}

template <typename R>
long long Keys(const CellKeyColumns<R>& c, int dim, long long begin, long long end,
               std::uint64_t* keys) {
  if (c.cell[0] != nullptr) {
    if (dim == 3) return KeysOf<3, R, true>(c, begin, end, keys);
    if (dim == 2) return KeysOf<2, R, true>(c, begin, end, keys);
    return KeysOf<1, R, true>(c, begin, end, keys);
  }
  if (dim == 3) return KeysOf<3, R, false>(c, begin, end, keys);
  if (dim == 2) return KeysOf<2, R, false>(c, begin, end, keys);
  return KeysOf<1, R, false>(c, begin, end, keys);
}
long long FloatKeys(const CellKeyColumns<float>& c, int dim, long long begin, long long end,
                    std::uint64_t* keys) {
  return Keys(c, dim, begin, end, keys);
}
long long DoubleKeys(const CellKeyColumns<double>& c, int dim, long long begin, long long end,
                     std::uint64_t* keys) {
  return Keys(c, dim, begin, end, keys);
}

#else
// Highway's one-lane fallback (HWY_SCALAR, GCC before 12.3): never chosen (targets.cpp); the
// plain loops do the work.
long long UniformIds(double*, double*, std::uint64_t, const std::uint64_t*, std::uint64_t,
                     long long begin, long long) {
  return begin;
}
long long UniformPairs(double*, std::uint64_t, std::uint64_t, std::uint64_t, double, double,
                       long long begin, long long) {
  return begin;
}
long long Morton3(std::uint64_t*, const double*, const double*, const double*, int, long long begin,
                  long long, bool*) {
  return begin;
}
long long Morton2(std::uint64_t*, const double*, const double*, const double*, int, long long begin,
                  long long, bool*) {
  return begin;
}
long long FloatKeys(const CellKeyColumns<float>&, int, long long begin, long long, std::uint64_t*) {
  return begin;
}
long long DoubleKeys(const CellKeyColumns<double>&, int, long long begin, long long,
                     std::uint64_t*) {
  return begin;
}
#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace cunumpy::detail::host_simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace cunumpy::detail::host_simd {

HWY_EXPORT(UniformIds);
HWY_EXPORT(UniformPairs);
HWY_EXPORT(Morton3);
HWY_EXPORT(Morton2);
HWY_EXPORT(FloatKeys);
HWY_EXPORT(DoubleKeys);

long long uniform_ids(double* out0, double* out1, std::uint64_t seed, const std::uint64_t* stream,
                      std::uint64_t counter, long long begin, long long end) {
  return CUNUMPY_HOST_DISPATCH(UniformIds)(out0, out1, seed, stream, counter, begin, end);
}
long long uniform_pairs(double* out, std::uint64_t seed, std::uint64_t stream, std::uint64_t base,
                        double a, double b, long long begin, long long end) {
  return CUNUMPY_HOST_DISPATCH(UniformPairs)(out, seed, stream, base, a, b, begin, end);
}
long long morton3(std::uint64_t* keys, const double* x, const double* lower, const double* scale,
                  int levels, long long begin, long long end, bool* non_finite) {
  return CUNUMPY_HOST_DISPATCH(Morton3)(keys, x, lower, scale, levels, begin, end, non_finite);
}
long long morton2(std::uint64_t* keys, const double* x, const double* lower, const double* scale,
                  int levels, long long begin, long long end, bool* non_finite) {
  return CUNUMPY_HOST_DISPATCH(Morton2)(keys, x, lower, scale, levels, begin, end, non_finite);
}
long long cell_keys(const CellKeyColumns<float>& c, int dim, long long begin, long long end,
                    std::uint64_t* keys) {
  return CUNUMPY_HOST_DISPATCH(FloatKeys)(c, dim, begin, end, keys);
}
long long cell_keys(const CellKeyColumns<double>& c, int dim, long long begin, long long end,
                    std::uint64_t* keys) {
  return CUNUMPY_HOST_DISPATCH(DoubleKeys)(c, dim, begin, end, keys);
}

}  // namespace cunumpy::detail::host_simd
#endif  // HWY_ONCE
