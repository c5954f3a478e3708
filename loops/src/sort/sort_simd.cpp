// The vector pieces of a bucket's sort (sort_simd.hpp) as one Highway source, compiled for
// every target of cunumpy/host_targets.hpp.  Vectors of any length (2 lanes of 64 bits on NEON and
// EMU128, 4 on AVX2, 8 on AVX-512, more on wide SVE).
#include <cunumpy/host_targets.hpp>  // first: the targets compiled

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "sort/sort_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <cstring>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "sort/plain_steps.hpp"
#include "sort/sort_simd.hpp"

HWY_BEFORE_NAMESPACE();
namespace cunumpy::detail::sort_simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using host_sort::insert_pair;

#if HWY_TARGET != HWY_SCALAR
using D64 = hn::ScalableTag<std::uint64_t>;
using V64 = hn::Vec<D64>;
using D32 = hn::ScalableTag<std::uint32_t>;
using V32 = hn::Vec<D32>;

// What TableLookupLanes takes for vectors of D.
template <class D>
using Indices = decltype(hn::IndicesFromVec(D(), hn::Zero(hn::RebindToSigned<D>())));

// Lane l of v moved to lane l + by (the first `by` lanes zero).
template <class D, class V>
HWY_INLINE V shift_up(D d, V v, Indices<D> idx, std::size_t by) {
  return hn::IfThenZeroElse(hn::FirstN(d, by), hn::TableLookupLanes(v, idx));
}

// Inclusive prefix sums within a vector of 32-bit counts, in log2(lanes) shifted adds.  (The
// shifts' indices are computed here, not kept in a table: vectors may not be array elements,
// SVE's being sizeless.)
HWY_INLINE V32 in_vector_scan(V32 x) {
  const D32 d;
  const hn::RebindToSigned<D32> di;
  const std::size_t n = hn::Lanes(d);
  for (std::size_t by = 1; by < n; by *= 2) {
    // lane l reads lane l - by (lanes below `by` are zeroed; they read lane 0)
    const auto from = hn::Sub(hn::Iota(di, 0), hn::Set(di, static_cast<std::int32_t>(by)));
    x = hn::Add(x, shift_up(d, x, hn::IndicesFromVec(d, hn::Max(from, hn::Zero(di))), by));
  }
  return x;
}

// The last lane, broadcast.
HWY_INLINE V32 last_lane(V32 x) {
  const D32 d;
  const hn::RebindToSigned<D32> di;
  return hn::TableLookupLanes(
      x, hn::IndicesFromVec(d, hn::Set(di, static_cast<std::int32_t>(hn::Lanes(d) - 1))));
}

std::uint32_t ScanCounts32(std::uint32_t* HWY_RESTRICT count, int digits) {
  const D32 d;
  const auto n = static_cast<int>(hn::Lanes(d));
  V32 carry = hn::Zero(d), largest = hn::Zero(d);
  int i = 0;
  for (; i + n <= digits; i += n) {
    const V32 x = hn::LoadU(d, count + i);
    largest = hn::Max(largest, x);
    const V32 s = in_vector_scan(x);
    hn::StoreU(hn::Add(carry, hn::Sub(s, x)), d, count + i);
    carry = hn::Add(carry, last_lane(s));
  }
  std::uint32_t offset = hn::GetLane(carry), top = hn::GetLane(hn::MaxOfLanes(d, largest));
  for (; i < digits; ++i) {
    const std::uint32_t c = count[i];
    count[i] = offset;
    offset += c;
    top = c > top ? c : top;
  }
  return top;
}

// 16-bit counts, widened to 32 bits for the scan.
std::uint32_t ScanCounts16(std::uint16_t* HWY_RESTRICT count, int digits) {
  const D32 d;
  const hn::Rebind<std::uint16_t, D32> d16;
  const auto n = static_cast<int>(hn::Lanes(d));
  V32 carry = hn::Zero(d), largest = hn::Zero(d);
  int i = 0;
  for (; i + n <= digits; i += n) {
    const V32 x = hn::PromoteTo(d, hn::LoadU(d16, count + i));
    largest = hn::Max(largest, x);
    const V32 s = in_vector_scan(x);
    hn::StoreU(hn::TruncateTo(d16, hn::Add(carry, hn::Sub(s, x))), d16, count + i);
    carry = hn::Add(carry, last_lane(s));
  }
  std::uint32_t offset = hn::GetLane(carry), top = hn::GetLane(hn::MaxOfLanes(d, largest));
  for (; i < digits; ++i) {
    const std::uint32_t c = count[i];
    count[i] = static_cast<std::uint16_t>(offset);
    offset += c;
    top = c > top ? c : top;
  }
  return top;
}

// A vector's worth of tags (one per 64-bit lane), as 32-bit and as 64-bit lanes.
template <typename T>
HWY_INLINE hn::Vec<hn::Rebind<std::uint32_t, D64>> load_tags32(const T* p) {
  const hn::Rebind<std::uint32_t, D64> d32;
  if constexpr (sizeof(T) == 4) {
    return hn::LoadU(d32, p);
  } else {
    const hn::Rebind<T, D64> dt;
    return hn::PromoteTo(d32, hn::LoadU(dt, p));
  }
}
template <typename T>
HWY_INLINE V64 load_tags64(const T* p) {
  return hn::PromoteTo(D64(), load_tags32(p));
}

// Insertion sort of pairs in order but for small groups, a vector of pairs at a time: each pair
// found below its left neighbour is swapped with it by one permutation of the block, the
// first one with the settled pair before the block (which then takes its place).  The swaps
// are worked out from the keys as they were read (no dependence from block to block) and
// checked against the settled ones; when they do not sort the block (two neighbours out of
// order side by side, or a key that must move further), the block goes through insert_pair.
// A branch per pair would be mispredicted for a good share of the blocks.
template <typename T>
void Settle(std::uint64_t* HWY_RESTRICT k, T* HWY_RESTRICT t, long long n) {
  const D64 d;
  const hn::Rebind<T, D64> dt;  // the tags, one per 64-bit lane
  const hn::RebindToSigned<D64> di;
  const auto lanes = static_cast<long long>(hn::Lanes(d));
  if (n < 2) return;
  const auto iota = hn::Iota(di, 0);
  const auto up = hn::IndicesFromVec(d, hn::Max(hn::Sub(iota, hn::Set(di, 1)), hn::Zero(di)));
  const auto down_idx =
      hn::IndicesFromVec(d, hn::Min(hn::Add(iota, hn::Set(di, 1)), hn::Set(di, lanes - 1)));
  const auto first = hn::FirstN(d, 1);
  const auto not_last = hn::FirstN(d, static_cast<std::size_t>(lanes - 1));
  // The key before this block as read; the two pairs before it as settled (keys s6, s7; tag of
  // s7).  s7 is the largest key so far, never below `read_last`.
  std::uint64_t read_last = k[0], s6 = k[0], s7 = k[0];
  std::uint64_t t7 = t[0];
  long long i = 1;
  for (; i + lanes <= n; i += lanes) {
    const V64 here = hn::LoadU(d, k + i);
    const V64 left = hn::IfThenElse(first, hn::Set(d, read_last), hn::TableLookupLanes(here, up));
    const auto down = hn::Lt(here, left);
    const V64 down_v = hn::VecFromMask(d, down);
    // lane l: whether lane l + 1 is down (the last lane: no)
    const auto next_down =
        hn::And(hn::MaskFromVec(hn::TableLookupLanes(down_v, down_idx)), not_last);
    const std::uint64_t h0 = hn::GetLane(here);
    read_last = hn::ExtractLane(here, static_cast<std::size_t>(lanes - 1));
    // Lane l takes lane l + 1 when that one is down, lane l - 1 when l itself is down (lane 0:
    // the settled pair before the block).
    const V64 before = hn::IfThenElse(first, hn::Set(d, s7), hn::TableLookupLanes(here, up));
    const V64 swapped = hn::IfThenElse(next_down, hn::TableLookupLanes(here, down_idx),
                                       hn::IfThenElse(down, before, here));
    const V64 swapped_left =
        hn::IfThenElse(first, hn::Set(d, s7), hn::TableLookupLanes(swapped, up));
    const bool down0 = h0 < hn::GetLane(left);
    // Not this way: two neighbours down; lane 0 down but below the settled pair before the one
    // it trades places with; the block still unsorted.  (Lane 0 down is strictly below the
    // pair it trades with, so equal keys keep their order.)
    const bool bad = !hn::AllFalse(d, hn::And(down, next_down)) || (down0 && s6 > h0) ||
                     !hn::AllFalse(d, hn::Lt(swapped, swapped_left));
    if (!bad) [[likely]] {
      const V64 tags = load_tags64(t + i);
      const std::uint64_t tag0 = hn::GetLane(tags);
      const V64 tags_before = hn::IfThenElse(first, hn::Set(d, t7), hn::TableLookupLanes(tags, up));
      const V64 swapped_t = hn::IfThenElse(next_down, hn::TableLookupLanes(tags, down_idx),
                                           hn::IfThenElse(down, tags_before, tags));
      hn::StoreU(swapped, d, k + i);
      hn::StoreU(hn::TruncateTo(dt, swapped_t), dt, t + i);
      if (down0) {  // lane 0's pair to the slot before the block
        k[i - 1] = h0;
        t[i - 1] = static_cast<T>(tag0);
      }
      s6 = hn::ExtractLane(swapped, static_cast<std::size_t>(lanes - 2));
      s7 = hn::ExtractLane(swapped, static_cast<std::size_t>(lanes - 1));
      t7 = hn::ExtractLane(swapped_t, static_cast<std::size_t>(lanes - 1));
    } else {
      for (long long j = i; j < i + lanes; ++j) insert_pair(k, t, j);
      s6 = k[i + lanes - 2];
      s7 = k[i + lanes - 1];
      t7 = t[i + lanes - 1];
    }
  }
  for (; i < n; ++i) insert_pair(k, t, i);
}

// out[j] = from[tags[j]]: gathers of 32-bit words (widened) or of 64-bit words.
template <typename W, typename T>
void GatherByTag(std::uint64_t* HWY_RESTRICT out, const W* HWY_RESTRICT from,
                 const T* HWY_RESTRICT tags, long long n) {
  const D64 d;
  const hn::Rebind<T, D64> dt;
  const auto lanes = static_cast<long long>(hn::Lanes(d));
  long long j = 0;
  for (; j + lanes <= n; j += lanes) {
    if constexpr (sizeof(W) == 4) {
      const hn::Rebind<std::int32_t, D64> di32;
      const hn::Rebind<std::uint32_t, D64> du32;
      const auto at = hn::BitCast(di32, load_tags32(tags + j));
      hn::StoreU(hn::PromoteTo(d, hn::GatherIndex(du32, from, at)), d, out + j);
    } else {
      const hn::RebindToSigned<D64> di;
      const auto at = hn::BitCast(di, load_tags64(tags + j));
      hn::StoreU(hn::GatherIndex(d, from, at), d, out + j);
    }
  }
  for (; j < n; ++j) out[j] = from[tags[j]];
}

#else
// Highway's one-lane fallback (HWY_SCALAR, GCC before 12.3): never chosen for these
// (targets.cpp), but the table needs an entry.
std::uint32_t ScanCounts32(std::uint32_t* count, int digits) {
  return host_sort::scan_counts_scalar(count, digits);
}
std::uint32_t ScanCounts16(std::uint16_t* count, int digits) {
  return host_sort::scan_counts_scalar(count, digits);
}
template <typename T>
void Settle(std::uint64_t* k, T* t, long long n) {
  host_sort::insertion_sort(k, t, n);
}
template <typename W, typename T>
void GatherByTag(std::uint64_t* out, const W* from, const T* tags, long long n) {
  for (long long j = 0; j < n; ++j) out[j] = from[tags[j]];
}
#endif  // HWY_TARGET != HWY_SCALAR

void Settle16(std::uint64_t* k, std::uint16_t* t, long long n) {
  Settle(k, t, n);
}
void Settle32(std::uint64_t* k, std::uint32_t* t, long long n) {
  Settle(k, t, n);
}

void Gather32By16(std::uint64_t* o, const std::uint32_t* f, const std::uint16_t* t, long long n) {
  GatherByTag(o, f, t, n);
}
void Gather32By32(std::uint64_t* o, const std::uint32_t* f, const std::uint32_t* t, long long n) {
  GatherByTag(o, f, t, n);
}
void Gather64By16(std::uint64_t* o, const std::uint64_t* f, const std::uint16_t* t, long long n) {
  GatherByTag(o, f, t, n);
}
void Gather64By32(std::uint64_t* o, const std::uint64_t* f, const std::uint32_t* t, long long n) {
  GatherByTag(o, f, t, n);
}

}  // namespace HWY_NAMESPACE
}  // namespace cunumpy::detail::sort_simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace cunumpy::detail::sort_simd {

HWY_EXPORT(ScanCounts32);
HWY_EXPORT(ScanCounts16);
HWY_EXPORT(Settle16);
HWY_EXPORT(Settle32);
HWY_EXPORT(Gather32By16);
HWY_EXPORT(Gather32By32);
HWY_EXPORT(Gather64By16);
HWY_EXPORT(Gather64By32);

std::uint32_t scan_counts(std::uint32_t* count, int digits) {
  return CUNUMPY_HOST_DISPATCH(ScanCounts32)(count, digits);
}
std::uint32_t scan_counts(std::uint16_t* count, int digits) {
  return CUNUMPY_HOST_DISPATCH(ScanCounts16)(count, digits);
}
void settle(std::uint64_t* keys, std::uint16_t* tags, long long n) {
  CUNUMPY_HOST_DISPATCH(Settle16)(keys, tags, n);
}
void settle(std::uint64_t* keys, std::uint32_t* tags, long long n) {
  CUNUMPY_HOST_DISPATCH(Settle32)(keys, tags, n);
}
void gather_by_tag(std::uint64_t* out, const std::uint32_t* from, const std::uint16_t* tags,
                   long long n) {
  CUNUMPY_HOST_DISPATCH(Gather32By16)(out, from, tags, n);
}
void gather_by_tag(std::uint64_t* out, const std::uint32_t* from, const std::uint32_t* tags,
                   long long n) {
  CUNUMPY_HOST_DISPATCH(Gather32By32)(out, from, tags, n);
}
void gather_by_tag(std::uint64_t* out, const std::uint64_t* from, const std::uint16_t* tags,
                   long long n) {
  CUNUMPY_HOST_DISPATCH(Gather64By16)(out, from, tags, n);
}
void gather_by_tag(std::uint64_t* out, const std::uint64_t* from, const std::uint32_t* tags,
                   long long n) {
  CUNUMPY_HOST_DISPATCH(Gather64By32)(out, from, tags, n);
}
void stream_fence() {
  hwy::FlushStream();
}

}  // namespace cunumpy::detail::sort_simd
#endif  // HWY_ONCE
