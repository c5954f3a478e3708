// The Morton keys of particles' cells on a periodic grid (cunumpy::periodic_cell_keys) by whole
// vectors: one Highway source, compiled for every target of cunumpy/host_targets.hpp
// (foreach_target.h includes this file once per target).  Each lane computes
// cunumpy_periodic_cell's s in double (the position, or the stored cell plus its offset, times
// the inverse cell size), truncates it and spreads its bits as cunumpy_morton_spread2/3 do; a
// lane whose s lies outside [0, cells) (which the wrap would move, or NaN) is redone by the
// scalar formula, as are the last rows.
#include <cunumpy/host_targets.hpp>  // first: the targets compiled

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "host_simd/cell_keys.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <cstdint>

#include <cunumpy/morton.cuh>

#include "host_simd/cell_keys.hpp"

HWY_BEFORE_NAMESPACE();
namespace cunumpy::detail::host_simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Positions as doubles: float lanes promoted, double lanes as they are.
template <class DD, class DR>
HWY_INLINE hn::Vec<DD> AsDouble(DD dd, DR dr, const float* HWY_RESTRICT p) {
  return hn::PromoteTo(dd, hn::LoadU(dr, p));
}
template <class DD, class DR>
HWY_INLINE hn::Vec<DD> AsDouble(DD, DR dr, const double* HWY_RESTRICT p) {
  return hn::LoadU(dr, p);
}

// cunumpy_morton_spread2 and spread3, lane by lane.
template <class DU>
HWY_INLINE hn::Vec<DU> Spread2(DU du, hn::Vec<DU> v) {
  const auto mask = [&](std::uint64_t m) { return hn::Set(du, m); };
  v = hn::And(v, mask(0xFFFFFFFFull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<16>(v)), mask(0x0000FFFF0000FFFFull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<8>(v)), mask(0x00FF00FF00FF00FFull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<4>(v)), mask(0x0F0F0F0F0F0F0F0Full));
  v = hn::And(hn::Or(v, hn::ShiftLeft<2>(v)), mask(0x3333333333333333ull));
  return hn::And(hn::Or(v, hn::ShiftLeft<1>(v)), mask(0x5555555555555555ull));
}
template <class DU>
HWY_INLINE hn::Vec<DU> Spread3(DU du, hn::Vec<DU> v) {
  const auto mask = [&](std::uint64_t m) { return hn::Set(du, m); };
  v = hn::And(v, mask(0x1FFFFFull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<32>(v)), mask(0x001F00000000FFFFull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<16>(v)), mask(0x001F0000FF0000FFull));
  v = hn::And(hn::Or(v, hn::ShiftLeft<8>(v)), mask(0x100F00F00F00F00Full));
  v = hn::And(hn::Or(v, hn::ShiftLeft<4>(v)), mask(0x10C30C30C30C30C3ull));
  return hn::And(hn::Or(v, hn::ShiftLeft<2>(v)), mask(0x1249249249249249ull));
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
      const auto bits =
          Dim == 3 ? Spread3(du, hn::BitCast(du, j)) : Spread2(du, hn::BitCast(du, j));
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

}  // namespace HWY_NAMESPACE
}  // namespace cunumpy::detail::host_simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace cunumpy::detail::host_simd {

HWY_EXPORT(FloatKeys);
HWY_EXPORT(DoubleKeys);

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
