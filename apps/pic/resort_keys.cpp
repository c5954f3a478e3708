// The re-sort's Morton keys on the host (resort_keys.hpp), compiled by Google Highway for each
// instruction set (foreach_target.h includes this file once per target) and chosen at run time,
// as host_step_simd.cpp's loops are.  Each lane computes the scalar formula's cell in double
// (the position, or the stored cell plus its offset, times 1 / dx, truncated) and its bits spread
// as cunumpy_morton_spread2/3 spread them; a lane whose scaled position lies outside [0, cells)
// (which the wrap would move, or NaN) is redone by the scalar formula.
#include <cunumpy/host_targets.hpp>  // first: the library's targets compiled

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "resort_keys.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "host_step_simd.hpp"
#include "resort_keys.hpp"

HWY_BEFORE_NAMESPACE();
namespace pic {
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
void KeysOf(const CellOf<R>& cell, long long begin, long long end,
            std::uint64_t* HWY_RESTRICT keys) {
  const hn::ScalableTag<double> dd;
  const hn::RebindToSigned<decltype(dd)> di;
  const hn::RebindToUnsigned<decltype(dd)> du;
  const hn::Rebind<R, decltype(dd)> dr;
  const hn::Rebind<std::int32_t, decltype(dd)> d32;
  const auto lanes = static_cast<long long>(hn::Lanes(dd));
  long long i = begin;
  for (; end - i >= lanes; i += lanes) {
    auto key = hn::Zero(du);
    auto inside = hn::FirstN(di, static_cast<size_t>(lanes));
    for (int a = 0; a < Dim; ++a) {
      auto t = AsDouble(dd, dr, cell.pos.p[a] + i);
      if constexpr (Cells)  // the cell plus its offset (pos.at), times 1
        t = hn::Add(hn::ConvertTo(dd, hn::PromoteTo(di, hn::LoadU(d32, cell.pos.cell[a] + i))), t);
      // node_of's truncation of a cell in [0, cells); a lane outside them (or NaN) converts a
      // zero instead (no conversion out of range: undefined on the scalar target) and is redone.
      const auto scaled = hn::Mul(t, hn::Set(dd, cell.inv[a]));
      const auto in_range =
          hn::And(hn::Ge(scaled, hn::Zero(dd)),
                  hn::Lt(scaled, hn::Set(dd, static_cast<double>(cell.cells[a]))));
      inside = hn::And(inside, hn::RebindMask(di, in_range));
      const auto j = hn::ConvertTo(di, hn::IfThenElseZero(in_range, scaled));
      const auto bits =
          Dim == 3 ? Spread3(du, hn::BitCast(du, j)) : Spread2(du, hn::BitCast(du, j));
      key = hn::Or(key, a == 0 ? bits : a == 1 ? hn::ShiftLeft<1>(bits) : hn::ShiftLeft<2>(bits));
    }
    hn::StoreU(key, du, keys + i);
    if (!hn::AllTrue(di, inside)) [[unlikely]]
      for (long long l = i; l < i + lanes; ++l) keys[l] = cell.key(Dim, l);
  }
  for (; i < end; ++i) keys[i] = cell.key(Dim, i);
}

template <typename R>
void Keys(const CellOf<R>& cell, int dim, long long begin, long long end, std::uint64_t* keys) {
  const bool cells = cell.pos.cell[0] != nullptr;
  if constexpr (std::is_same_v<R, float>)
    if (cells) {
      if (dim == 3) return KeysOf<3, R, true>(cell, begin, end, keys);
      if (dim == 2) return KeysOf<2, R, true>(cell, begin, end, keys);
      return KeysOf<1, R, true>(cell, begin, end, keys);
    }
  if (dim == 3) return KeysOf<3, R, false>(cell, begin, end, keys);
  if (dim == 2) return KeysOf<2, R, false>(cell, begin, end, keys);
  KeysOf<1, R, false>(cell, begin, end, keys);
}
void FloatKeys(const CellOf<float>& cell, int dim, long long begin, long long end,
               std::uint64_t* keys) {
  Keys(cell, dim, begin, end, keys);
}
void DoubleKeys(const CellOf<double>& cell, int dim, long long begin, long long end,
                std::uint64_t* keys) {
  Keys(cell, dim, begin, end, keys);
}

}  // namespace HWY_NAMESPACE
}  // namespace pic
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pic {

HWY_EXPORT(FloatKeys);
HWY_EXPORT(DoubleKeys);

namespace {
// Particles [0, n) in parts over the OpenMP threads, each on the chosen target (the baseline's
// with the portable choice, host_step::host_vectors).
template <typename R, typename Kernel>
void keys_in_parts(const CellOf<R>& cell, int dim, long long n, std::uint64_t* keys,
                   Kernel kernel) {
  constexpr long long kPart = 1 << 16;
#pragma omp parallel for schedule(static)
  for (long long part = 0; part < (n + kPart - 1) / kPart; ++part)
    kernel(cell, dim, part * kPart, std::min(n, (part + 1) * kPart), keys);
}
}  // namespace

void morton_keys(const CellOf<float>& cell, int dim, long long n, std::uint64_t* keys,
                 bool baseline) {
  if (host_step::host_vectors() && !baseline)
    keys_in_parts(cell, dim, n, keys, CUNUMPY_HOST_DISPATCH(FloatKeys));
  else
    keys_in_parts(cell, dim, n, keys, HWY_STATIC_DISPATCH(FloatKeys));
}
void morton_keys(const CellOf<double>& cell, int dim, long long n, std::uint64_t* keys,
                 bool baseline) {
  if (host_step::host_vectors() && !baseline)
    keys_in_parts(cell, dim, n, keys, CUNUMPY_HOST_DISPATCH(DoubleKeys));
  else
    keys_in_parts(cell, dim, n, keys, HWY_STATIC_DISPATCH(DoubleKeys));
}

}  // namespace pic
#endif  // HWY_ONCE
