// The top digit's scatter for pairs larger than the caches (sort_simd.hpp: line_scatter), as
// one Highway source compiled for every target of cunumpy/host_targets.hpp: the targets differ only
// in how a full line goes to memory (non-temporal vector stores where the target has them).
//
// Each bucket gathers one 64-byte line of keys, one of original indices (and one of riding
// rows) in a small buffer, and full lines go to memory with streaming stores.  The destinations
// are the outputs themselves (keys, order and the riding array's output), which each bucket
// then sorts in place.  Lines are not read before they are written, and far fewer pages are
// touched at a time than with one store per pair: about twice as fast as plain stores for
// arrays larger than the caches (apps/bench_algorithms sort_by_key/16777216).
#include <cunumpy/host_targets.hpp>  // first: the targets compiled

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "sort/line_scatter.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include <hwy/highway.h>

#include "sort/sort_simd.hpp"

HWY_BEFORE_NAMESPACE();
namespace cunumpy::detail::sort_simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr unsigned kWords = 64 / sizeof(std::uint64_t);

// One 64-byte line from `line` to `to` (both 64-byte aligned).
HWY_INLINE void stream_line(void* to, const void* line) {
#if HWY_TARGET == HWY_SCALAR
  std::memcpy(to, line, 64);
#else
  const hn::ScalableTag<std::uint8_t> d;
  const std::size_t lanes = hn::Lanes(d);
  auto* dst = static_cast<std::uint8_t*>(to);
  const auto* src = static_cast<const std::uint8_t*>(line);
  if (lanes > 64) {  // a vector wider than a line (SVE beyond 512 bits)
    std::memcpy(dst, src, 64);
    return;
  }
  for (std::size_t b = 0; b < 64; b += lanes) hn::Stream(hn::Load(d, src + b), d, dst + b);
#endif
}

// Positions [from, to) of one line (from is a multiple of the line's length); positions below
// `owned` are another thread's.
template <typename T>
HWY_INLINE void flush(T* out, const T* line, std::uint32_t from, std::uint32_t to,
                      std::uint32_t owned) {
  constexpr unsigned per_line = 64 / sizeof(T);
  if (from >= owned && to - from == per_line &&
      reinterpret_cast<std::uintptr_t>(out + from) % 64 == 0) {
    stream_line(out + from, line);
    return;
  }
  for (std::uint32_t p = std::max(from, owned); p < to; ++p) out[p] = line[p % per_line];
}

struct alignas(64) PairLine {
  std::uint64_t keys[kWords];
  std::int64_t indices[kWords];
};
struct alignas(64) RideLine : PairLine {
  std::uint64_t rows[kWords];
};

template <bool kRide>
void scatter(const LineScatterJob& job) {
  using Line = std::conditional_t<kRide, RideLine, PairLine>;
  std::vector<Line> lines(static_cast<std::size_t>(job.buckets));
  std::uint32_t* next = job.next;
  for (long long i = job.begin; i < job.end; ++i) {
    const std::uint64_t key = job.words[i];
    const std::uint64_t d = (key >> job.shift) & job.mask;
    const std::uint32_t pos = next[d]++;
    if (job.first != nullptr) job.first[i] = pos;
    Line& line = lines[d];
    line.keys[pos % kWords] = key;
    line.indices[pos % kWords] = i;
    if constexpr (kRide) line.rows[pos % kWords] = job.ride_in[i];
    if (pos % kWords == kWords - 1) {
      const std::uint32_t from = pos - (kWords - 1), owned = job.first_owned[d];
      flush(job.keys, line.keys, from, pos + 1, owned);
      flush(job.indices, line.indices, from, pos + 1, owned);
      if constexpr (kRide) flush(job.ride_stage, line.rows, from, pos + 1, owned);
    }
  }
  for (std::size_t d = 0; d < lines.size(); ++d) {  // the partly filled last lines
    const std::uint32_t e = next[d], from = e - e % kWords, owned = job.first_owned[d];
    flush(job.keys, lines[d].keys, from, e, owned);
    flush(job.indices, lines[d].indices, from, e, owned);
    if constexpr (kRide) flush(job.ride_stage, lines[d].rows, from, e, owned);
  }
}

void LineScatter(const LineScatterJob& job) {
  if (job.ride_in != nullptr)
    scatter<true>(job);
  else
    scatter<false>(job);
}

}  // namespace HWY_NAMESPACE
}  // namespace cunumpy::detail::sort_simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

namespace cunumpy::detail::sort_simd {

HWY_EXPORT(LineScatter);

void line_scatter(const LineScatterJob& job) {
  CUNUMPY_HOST_DISPATCH(LineScatter)(job);
}

}  // namespace cunumpy::detail::sort_simd
#endif  // HWY_ONCE
