// loops/src/sort/bucket_sort.hpp: a top bucket's sort, the second half of the host's
// stable radix sort (host_sort.cpp does the first: the top digit's scatter; bucket_sort.cpp
// this one; sort_simd.cpp its vector pieces).  The figures in its comments were measured with
// apps/bench_algorithms sort_by_key and sort_by_key_cells.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <cunumpy/arithmetic.cuh>
#include <cunumpy/errors.hpp>

namespace cunumpy::detail::host_sort {

// A position in the bucketed layout, or an original index (the sort takes fewer than 2^32 keys).
using Pos = std::uint32_t;
// What a pair carries through its top bucket's sort (the tag): its position in the bucket as
// staged, 0 for the bucket's first pair, in a T: 16 bits for buckets under 2^16 pairs, else
// 32.  The bucket's original indices and its rows of the carried arrays are taken aside in
// that order before the bucket is sorted; the sorted pairs' order and rows are gathered from
// there by the tag as the bucket is written out.  (The counting scatter stores 2 bytes a pair
// for a 16-bit tag where it stored 8 for an (index, position) word: 25% fewer cycles.)

constexpr long long kSmallGroup = 48;  // groups up to this size are left to insertion sort
constexpr int kMaxDigitBits = 15;

// An array travelling with the keys: the scatter of the top digit stages its rows in `out` at
// the pairs' bucketed positions; each bucket takes its rows aside and writes them back sorted.
struct CarriedOut {
  void* out;
  std::size_t row_bytes;
};

// Calls f(W{}) with the widest word type W (8, 4, 2 or 1 bytes) whose size divides row_bytes:
// rows are moved as whole words of that type.
template <typename F>
void by_word(std::size_t row_bytes, F&& f) {
  if (row_bytes % 8 == 0)
    f(std::uint64_t{});
  else if (row_bytes % 4 == 0)
    f(std::uint32_t{});
  else if (row_bytes % 2 == 0)
    f(std::uint16_t{});
  else
    f(std::uint8_t{});
}

// What a thread keeps from one sort to the next (160 KB at the 4096-pair buckets of 2^20
// keys, 320 KB at the 8192-pair ones of 2^24): allocated anew each call, its pages were
// faulted in and cleared each call, 2% of a sort of 2^20 keys.  OpenMP's threads persist, and
// so does their scratch.
//
// The keys and tags of a bucket's counting pass and the counts are one block, 64-byte aligned
// (the settle and the output loops move eight words per vector: an unaligned vector straddles
// two lines), the tags a few lines past a 4 KiB boundary from the keys (stores to one and
// loads from the other at the same offset modulo 4 KiB look alike to the core's memory
// disambiguation, and wait).
class ThreadScratch {
 public:
  std::uint64_t* keys = nullptr;
  void* tags = nullptr;                           // 2 or 4 bytes a pair
  void* count = nullptr;                          // 2 or 4 bytes a digit value
  std::vector<Pos> index;                         // a bucket's original indices, taken aside
  std::vector<std::vector<std::uint64_t>> taken;  // its rows of each carried array, taken aside

  // Room for n pairs and `digits` counts.
  void reserve(long long n, std::size_t digits = 0) {
    const auto pairs = static_cast<std::size_t>(n);
    if (pairs <= pairs_ && digits <= digits_) return;
    pairs_ = std::max(pairs_, pairs);
    digits_ = std::max(digits_, digits);
    const std::size_t stride = round_up(pairs_ * sizeof(std::uint64_t)) + kStagger;
    const std::size_t bytes = round_up(stride + round_up(pairs_ * sizeof(Pos)) + kStagger +
                                       digits_ * sizeof(std::uint32_t));
    block_.reset(static_cast<unsigned char*>(std::aligned_alloc(kPage, bytes)));
    if (!block_)
      throw ValueError("sort_by_key: " + std::to_string(bytes) +
                       " bytes of host scratch are not available; free memory or sort fewer keys");
    keys = reinterpret_cast<std::uint64_t*>(block_.get());
    tags = block_.get() + stride;
    count = block_.get() + stride + round_up(pairs_ * sizeof(Pos)) + kStagger;
  }

 private:
  static constexpr std::size_t kPage = 4096, kStagger = 5 * 64;
  static std::size_t round_up(std::size_t bytes) { return cunumpy::round_up(bytes, kPage); }
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, Free> block_;
  std::size_t pairs_ = 0, digits_ = 0;
};

// The calling thread's.
ThreadScratch& thread_scratch();

// What a top bucket's first counting pass copies aside as it reads the keys (the streams from
// memory then overlap): its staged original indices, as bytes (they share memory with the
// order's int64 words: no load of them may be moved past the order's stores), and the rows of
// the first array with 8-byte rows (see Sink::take).
template <typename Index>
struct BucketCopy {
  const Index* index_from = nullptr;  // none when null
  Pos* index_to = nullptr;
  const std::uint64_t* rows_from = nullptr;  // none when null
  std::uint64_t* rows_to = nullptr;

  // Pairs [i, i + m).
  void some(long long i, long long m) const {
    if constexpr (sizeof(Index) == sizeof(Pos)) {
      std::memcpy(index_to + i, index_from + i, static_cast<std::size_t>(m) * sizeof(Pos));
    } else {
      for (long long j = i; j < i + m; ++j) {
        Index v;
        std::memcpy(&v, index_from + j, sizeof v);
        index_to[j] = static_cast<Pos>(v);
      }
    }
    if (rows_from != nullptr)
      std::memcpy(rows_to + i, rows_from + i, static_cast<std::size_t>(m) * sizeof(std::uint64_t));
  }
  void all(long long n) const { some(0, n); }
};

// A later top bucket's staged keys, indices and riding rows, fetched into the core's L2 while
// this bucket's counting scatter runs (a line of each every eight pairs): its counting pass
// then finds them there instead of waiting on memory.  Two buckets ahead: about 8% of a sort
// of 2^20 or 2^24 keys (one ahead: 6%).
constexpr int kAheadBuckets = 2;
struct Lookahead {
  const std::uint64_t* keys = nullptr;
  const unsigned char* index = nullptr;
  std::size_t index_bytes = 0;
  const std::uint64_t* rows = nullptr;  // none when null
  long long n = 0;                      // none when 0

  void fetch(long long i) const {
    __builtin_prefetch(keys + i, 0, 2);  // locality 2: into L2 (prefetcht1)
    __builtin_prefetch(index + static_cast<std::size_t>(i) * index_bytes, 0, 2);
    if (rows != nullptr) __builtin_prefetch(rows + i, 0, 2);
  }
};

// Where a thread's sorted pairs go: keys, order and the carried arrays' rows.  A top bucket's
// region of every output holds what the top digit's scatter staged there (keys, original
// indices, rows): its indices and rows are taken aside (take, and the bucket's first counting
// pass), its keys read by that pass, before anything is written, so that every output is
// written where it was just read: plain stores that hit the caches (streaming stores measured
// slower here).
class Sink {
 public:
  Sink(std::uint64_t* keys, std::int64_t* order, const std::vector<CarriedOut>& rows,
       ThreadScratch& scratch)
      : keys_(keys), order_(order), rows_(&rows), scratch_(scratch) {
    for (std::size_t a = 0; a < rows.size() && fused_ == kNone; ++a)
      if (rows[a].row_bytes == sizeof(std::uint64_t)) fused_ = a;
  }

  // Makes room for a bucket of n pairs at bucketed positions [first, first + n) whose staged
  // indices are ia[0, n), copies aside the rows of the arrays but the first with 8-byte rows,
  // and returns what is left to copy.
  template <typename Index>
  BucketCopy<Index> take(Pos first, long long n, const Index* ia) {
    const auto count = static_cast<std::size_t>(n);
    if (scratch_.index.size() < count) scratch_.index.resize(count);
    if (scratch_.taken.size() < rows_->size()) scratch_.taken.resize(rows_->size());
    BucketCopy<Index> left{ia, scratch_.index.data()};
    for (std::size_t a = 0; a < rows_->size(); ++a) {
      const CarriedOut& r = (*rows_)[a];
      const std::size_t bytes = count * r.row_bytes;
      std::vector<std::uint64_t>& taken = scratch_.taken[a];
      if (taken.size() * sizeof(std::uint64_t) < bytes)
        taken.resize(bytes / sizeof(std::uint64_t) + 1);
      if (a == fused_) {
        left.rows_from = static_cast<const std::uint64_t*>(r.out) + first;
        left.rows_to = taken.data();
        continue;
      }
      std::memcpy(taken.data(), static_cast<const unsigned char*>(r.out) + first * r.row_bytes,
                  bytes);
    }
    return left;
  }

  // The n sorted pairs (keys k, tags t) of output rows [at, at + n).
  template <typename T>
  void write(const std::uint64_t* k, const T* t, long long n, long long at) const;

 private:
  template <typename T>
  void gather_rows(std::size_t a, const T* t, long long n, long long at) const;

  std::uint64_t* keys_;
  std::int64_t* order_;
  const std::vector<CarriedOut>* rows_;
  ThreadScratch& scratch_;
  static constexpr std::size_t kNone = ~std::size_t{0};
  std::size_t fused_ = kNone;  // the array whose rows the counting pass takes aside
};

// Sorts a top bucket of n pairs (keys ka, staged in the outputs' rows [at, at + n), the bits at
// and above `top` all equal) into those rows.  `copy` is what is left to take aside (Sink::take);
// `ahead` is fetched while it runs.  Index: how the top digit staged the original indices
// (int64 words, or 32-bit ones packed at the start of the bucket's region).
template <typename Index>
void sort_top_bucket(const std::uint64_t* ka, long long n, int top, long long at, const Sink& sink,
                     ThreadScratch& scratch, BucketCopy<Index> copy, Lookahead ahead);

}  // namespace cunumpy::detail::host_sort
