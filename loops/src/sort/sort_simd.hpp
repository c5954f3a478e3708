// loops/src/sort/sort_simd.hpp: the vector pieces of a bucket's sort (sort_simd.cpp: one
// Highway source, every target of cunumpy/host_targets.hpp).  Each has a plain version in
// bucket_sort.cpp, which runs under CUNUMPY_HOST_SIMD=portable.  Measured by
// apps/bench_algorithms sort_by_key (against std::stable_sort).
#pragma once

#include <cstdint>

namespace cunumpy::detail::sort_simd {

// count[0, digits) -> exclusive prefix sums; returns the largest count.  16-bit counts hold
// sums below 2^16.
std::uint32_t scan_counts(std::uint32_t* count, int digits);
std::uint32_t scan_counts(std::uint16_t* count, int digits);

// Insertion sort of n (key, tag) pairs that are in order but for small groups (what a counting
// pass leaves), a vector of pairs at a time without a branch per pair.
void settle(std::uint64_t* keys, std::uint16_t* tags, long long n);
void settle(std::uint64_t* keys, std::uint32_t* tags, long long n);

// out[j] = from[tags[j]] for j < n (a bucket's original indices, widened, or its rows of an
// array with 8-byte rows).
void gather_by_tag(std::uint64_t* out, const std::uint32_t* from, const std::uint16_t* tags,
                   long long n);
void gather_by_tag(std::uint64_t* out, const std::uint32_t* from, const std::uint32_t* tags,
                   long long n);
void gather_by_tag(std::uint64_t* out, const std::uint64_t* from, const std::uint16_t* tags,
                   long long n);
void gather_by_tag(std::uint64_t* out, const std::uint64_t* from, const std::uint32_t* tags,
                   long long n);

// The top digit's scatter of pairs larger than the caches, through write-combining buffers
// (line_scatter.cpp).  Pairs [begin, end) of `words` go to positions next[digit]++ of keys /
// indices (and ride_in's rows to the same positions of ride_stage, when not null), recorded in
// first[i] when first is not null; first_owned[d] is where this caller's part of bucket d
// starts (positions before it belong to other threads).
struct LineScatterJob {
  const std::uint64_t* words;
  long long begin, end;
  int shift;
  std::uint64_t mask;
  int buckets;
  std::uint32_t* next;
  const std::uint32_t* first_owned;
  std::uint64_t* keys;
  std::int64_t* indices;
  const std::uint64_t* ride_in;
  std::uint64_t* ride_stage;
  std::uint32_t* first;
};
void line_scatter(const LineScatterJob& job);

// Orders the streaming stores of line_scatter before another thread reads what they wrote.
void stream_fence();

}  // namespace cunumpy::detail::sort_simd
