// The host's stable radix sort behind sort_by_key (host_sort.hpp).
//
// One pass over the most significant digit (up to 11 bits, from the highest bit that differs
// between keys; parallel and stable) scatters (key, original index) pairs into buckets small
// enough for the caches; each bucket is then sorted where it lies by one counting pass on the
// next ~log2(size) + 2 bits and an insertion sort of the small groups that pass leaves.  The
// rows of the arrays that travel with the keys are scattered to the buckets too and gathered
// within each bucket as it is written out: every read of the arrays is sequential or stays in
// the caches, instead of one random read of the whole array per row.  Everything is staged in
// the outputs themselves (keys, order, the arrays' outputs), which each bucket then overwrites
// with its sorted pairs: no scratch the size of the input but, when an array other than the
// first with 8-byte rows travels, the rows' bucketed positions (4 bytes a key).
#include "host_sort.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cunumpy/arithmetic.cuh>
#include <cunumpy/errors.hpp>
#include <cunumpy/memory_block.hpp>

#include "host_fast.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

#if defined(__GNUC__) && defined(__x86_64__)
#define CUNUMPY_SORT_AVX512 1
#define CUNUMPY_SORT_AVX512_TARGET __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*() (GCC
// bug 105593); the warning is about the header, not this file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#else
#define CUNUMPY_SORT_AVX512 0
#endif

namespace cunumpy::detail {
namespace {

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
// From this many keys on, the top digit's scatter is write-combined (LineScatter).
constexpr long long kLineScatterPairs = 1LL << 21;

void store_fence() {
#if defined(__x86_64__)
  _mm_sfence();  // streaming stores, before another thread reads what they wrote
#endif
}

// ---- the pieces of a bucket's sort, scalar and AVX-512 -----------------------------------------

// Moves pair i, which is below pair i - 1, back among the sorted pairs [0, i) to its stable
// place.
template <typename T>
inline void move_back(std::uint64_t* k, T* t, long long i) {
  const std::uint64_t key = k[i];
  const T v = t[i];
  long long j = i - 1;
  do {
    k[j + 1] = k[j];
    t[j + 1] = t[j];
    --j;
  } while (j >= 0 && k[j] > key);
  k[j + 1] = key;
  t[j + 1] = v;
}

// Moves pair i back among the sorted pairs [0, i) to its stable place.
template <typename T>
inline void insert_pair(std::uint64_t* k, T* t, long long i) {
  if (k[i] < k[i - 1]) move_back(k, t, i);
}

template <typename T>
void insertion_sort(std::uint64_t* k, T* t, long long n) {
  for (long long i = 1; i < n; ++i) insert_pair(k, t, i);
}

// count[0, digits) -> exclusive prefix sums; returns the largest count.
template <typename C>
std::uint32_t scan_counts_scalar(C* count, int digits) {
  std::uint32_t offset = 0, largest = 0;
  for (int d = 0; d < digits; ++d) {
    const std::uint32_t c = count[d];
    count[d] = static_cast<C>(offset);
    offset += c;
    largest = std::max(largest, c);
  }
  return largest;
}

#if CUNUMPY_SORT_AVX512
// Sixteen counts per vector: the in-vector inclusive scan in four shifted adds, the running
// total carried in a broadcast.  digits is a multiple of 16.
CUNUMPY_SORT_AVX512_TARGET std::uint32_t scan_counts_avx512(std::uint32_t* count, int digits) {
  const __m512i zero = _mm512_setzero_si512(), last = _mm512_set1_epi32(15);
  __m512i carry = zero, largest = zero;
  for (int d = 0; d < digits; d += 16) {
    const __m512i x = _mm512_loadu_si512(count + d);
    largest = _mm512_max_epu32(largest, x);
    __m512i s = _mm512_add_epi32(x, _mm512_alignr_epi32(x, zero, 15));  // lanes shifted up by 1
    s = _mm512_add_epi32(s, _mm512_alignr_epi32(s, zero, 14));          // by 2
    s = _mm512_add_epi32(s, _mm512_alignr_epi32(s, zero, 12));          // by 4
    s = _mm512_add_epi32(s, _mm512_alignr_epi32(s, zero, 8));           // by 8
    _mm512_storeu_si512(count + d, _mm512_add_epi32(carry, _mm512_sub_epi32(s, x)));
    carry = _mm512_add_epi32(carry, _mm512_permutexvar_epi32(last, s));
  }
  return _mm512_reduce_max_epu32(largest);
}

// The same for 16-bit counts (whose sums stay below 2^16), 32 per vector: the in-vector scan
// in five shifted adds (a shift by k counts: a permutation, the first k lanes zeroed).
CUNUMPY_SORT_AVX512_TARGET std::uint32_t scan_counts_avx512(std::uint16_t* count, int digits) {
  const __m512i lanes = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17,
                                         16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  __m512i from[5];
  __mmask32 keep[5];
  for (int b = 0; b < 5; ++b) {
    from[b] = _mm512_sub_epi16(lanes, _mm512_set1_epi16(static_cast<short>(1 << b)));
    keep[b] = static_cast<__mmask32>(~((std::uint64_t{1} << (1 << b)) - 1));
  }
  const __m512i last = _mm512_set1_epi16(31);
  __m512i carry = _mm512_setzero_si512(), largest = carry;
  for (int d = 0; d < digits; d += 32) {
    const __m512i x = _mm512_loadu_si512(count + d);
    largest = _mm512_max_epu16(largest, x);
    __m512i s = x;
    for (int b = 0; b < 5; ++b)
      s = _mm512_add_epi16(s, _mm512_maskz_permutexvar_epi16(keep[b], from[b], s));
    _mm512_storeu_si512(count + d, _mm512_add_epi16(carry, _mm512_sub_epi16(s, x)));
    carry = _mm512_add_epi16(carry, _mm512_permutexvar_epi16(last, s));
  }
  const __m512i wide =
      _mm512_max_epu32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(largest)),
                       _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(largest, 1)));
  return _mm512_reduce_max_epu32(wide);
}

// Eight tags: loaded, permuted by a permutation of 64-bit lanes (indices 8-15: the second
// table), stored, and lane 0 stored alone.
CUNUMPY_SORT_AVX512_TARGET inline __m256i load_tags(const std::uint32_t* t) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t));
}
CUNUMPY_SORT_AVX512_TARGET inline __m256i load_tags(const std::uint16_t* t) {
  return _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
}
CUNUMPY_SORT_AVX512_TARGET inline __m256i permute_tags(std::uint32_t*, __m256i a, __m512i source,
                                                       __m256i b) {
  return _mm256_permutex2var_epi32(a, _mm512_cvtepi64_epi32(source), b);
}
CUNUMPY_SORT_AVX512_TARGET inline __m256i permute_tags(std::uint16_t*, __m256i a, __m512i source,
                                                       __m256i b) {
  return _mm256_castsi128_si256(_mm_permutex2var_epi16(
      _mm256_castsi256_si128(a), _mm512_cvtepi64_epi16(source), _mm256_castsi256_si128(b)));
}
CUNUMPY_SORT_AVX512_TARGET inline void store_tags(std::uint32_t* t, __m256i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(t), v);
}
CUNUMPY_SORT_AVX512_TARGET inline void store_tags(std::uint16_t* t, __m256i v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(t), _mm256_castsi256_si128(v));
}
CUNUMPY_SORT_AVX512_TARGET inline void store_first_tag(std::uint32_t* t, __mmask8 m, __m256i v) {
  _mm_mask_storeu_epi32(t, m, _mm256_castsi256_si128(v));
}
CUNUMPY_SORT_AVX512_TARGET inline void store_first_tag(std::uint16_t* t, __mmask8 m, __m256i v) {
  _mm_mask_storeu_epi16(t, m, _mm256_castsi256_si128(v));
}

// Insertion sort of pairs that are in order but for small groups (what the counting pass
// leaves), eight pairs at a time without a branch per pair: each pair found below its left
// neighbour is swapped with it by one permutation of the eight, the first one with the
// settled pair before the block (which then takes its place in the block).  The swaps are
// worked out from the keys as they were read (no dependence from block to block) and checked
// against the settled ones; when they do not sort the block (pairs out of order side by side,
// or a key that must move further), the block goes through insert_pair instead.  A branch
// per pair, or per condition, would be mispredicted for a good share of the blocks.
template <typename T>
CUNUMPY_SORT_AVX512_TARGET void settle_avx512(std::uint64_t* k, T* t, long long n) {
  if (n < 2) return;
  const __m512i lanes = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), one = _mm512_set1_epi64(1);
  // `loaded`: the last block as it was read (lane 7: the key before this block); `settled`,
  // `settled_t`: as it was written (lanes 6 and 7: the two pairs before this block; lane 7
  // holds the largest key so far, never below lane 7 of `loaded`).
  __m512i loaded = _mm512_set1_epi64(static_cast<long long>(k[0])), settled = loaded;
  __m256i settled_t = sizeof(T) == 2 ? _mm256_set1_epi16(static_cast<short>(t[0]))
                                     : _mm256_set1_epi32(static_cast<int>(t[0]));
  long long i = 1;
  for (; i + 8 <= n; i += 8) {
    const __m512i here = _mm512_loadu_si512(k + i);
    const __m256i here_t = load_tags(t + i);
    const unsigned down = _mm512_cmplt_epu64_mask(here, _mm512_alignr_epi64(here, loaded, 7));
    loaded = here;
    // Lane l takes lane l + 1 when that one is down, lane l - 1 when l itself is down; lane 0
    // down takes index -1: lane 7 of the second table, the settled pair before the block.
    __m512i source = _mm512_mask_add_epi64(lanes, static_cast<__mmask8>(down >> 1), lanes, one);
    source = _mm512_mask_sub_epi64(source, static_cast<__mmask8>(down), source, one);
    const __m512i swapped = _mm512_permutex2var_epi64(here, source, settled);
    // Not this way: two neighbours down; lane 0 down but below the settled pair before the
    // one it trades places with; the block unsorted.  (Lane 0 down is strictly below the
    // settled pair it trades with, so equal keys keep their order: that pair's key is the
    // one read there, or a larger one moved there.)
    const auto s6 =
        static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm512_extracti64x2_epi64(settled, 3)));
    const auto h0 = static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm512_castsi512_si128(here)));
    unsigned bad = down & (down >> 1);
    bad |= down & 1 & static_cast<unsigned>(s6 > h0);
    bad |= _mm512_cmplt_epu64_mask(swapped, _mm512_alignr_epi64(swapped, settled, 7));
    if (bad == 0) [[likely]] {
      const __m256i swapped_t = permute_tags(t, here_t, source, settled_t);
      _mm512_storeu_si512(k + i, swapped);
      store_tags(t + i, swapped_t);
      const auto moved = static_cast<__mmask8>(down & 1);  // lane 0's pair to the slot before
      _mm_mask_storeu_epi64(k + i - 1, moved, _mm512_castsi512_si128(here));
      store_first_tag(t + i - 1, moved, here_t);
      settled = swapped;
      settled_t = swapped_t;
    } else {
      for (long long j = i; j < i + 8; ++j) insert_pair(k, t, j);
      settled = _mm512_loadu_si512(k + i);
      settled_t = load_tags(t + i);
    }
  }
  for (; i < n; ++i) insert_pair(k, t, i);
}
#endif

template <typename C>
std::uint32_t scan_counts(C* count, int digits) {
#if CUNUMPY_SORT_AVX512
  if (digits % (64 / sizeof(C)) == 0 && host_fast::cpu_has_avx512())
    return scan_counts_avx512(count, digits);
#endif
  return scan_counts_scalar(count, digits);
}

template <typename T>
void settle(std::uint64_t* k, T* t, long long n) {
#if CUNUMPY_SORT_AVX512
  if (host_fast::cpu_has_avx512()) return settle_avx512(k, t, n);
#endif
  insertion_sort(k, t, n);
}

// ---- writing sorted pairs out
// --------------------------------------------------------------------

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

// out row j = row t[j] of `taken`.
template <typename W, typename T>
void gather_taken(W* __restrict out, const W* __restrict taken, const T* t, long long n,
                  std::size_t per_row) {
  if (per_row == 1) {
    for (long long j = 0; j < n; ++j) out[j] = taken[t[j]];
    return;
  }
  for (long long j = 0; j < n; ++j)
    for (std::size_t c = 0; c < per_row; ++c)
      out[j * per_row + c] = taken[static_cast<std::size_t>(t[j]) * per_row + c];
}

#if CUNUMPY_SORT_AVX512
// Eight tags as 32-bit gather indices.
CUNUMPY_SORT_AVX512_TARGET inline __m256i tag_indices(const std::uint32_t* t) {
  return load_tags(t);
}
CUNUMPY_SORT_AVX512_TARGET inline __m256i tag_indices(const std::uint16_t* t) {
  return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t)));
}

// One output column of a bucket's sorted pairs, eight words per vector: the keys (Mode 0), the
// original indices, index[t[j]] (1), or the rows of an 8-byte array, row[t[j]] (2).
template <int Mode, typename T>
CUNUMPY_SORT_AVX512_TARGET void write_words_avx512(std::uint64_t* out, const std::uint64_t* k,
                                                   const T* t, const void* taken, long long n) {
  const auto* index = static_cast<const Pos*>(taken);
  const auto* row = static_cast<const std::uint64_t*>(taken);
  long long j = 0;
  for (; j + 8 <= n; j += 8) {
    __m512i v;
    if constexpr (Mode == 0) {
      v = _mm512_loadu_si512(k + j);
    } else {
      const __m256i at = tag_indices(t + j);
      if constexpr (Mode == 1)
        v = _mm512_cvtepu32_epi64(
            _mm256_i32gather_epi32(reinterpret_cast<const int*>(index), at, 4));
      else
        v = _mm512_i32gather_epi64(at, row, 8);
    }
    _mm512_storeu_si512(out + j, v);
  }
  for (; j < n; ++j) {
    if constexpr (Mode == 0) out[j] = k[j];
    if constexpr (Mode == 1) out[j] = index[t[j]];
    if constexpr (Mode == 2) out[j] = row[t[j]];
  }
}
#endif

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

ThreadScratch& thread_scratch() {
  thread_local ThreadScratch scratch;
  return scratch;
}

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
  void write(const std::uint64_t* k, const T* t, long long n, long long at) const {
    const Pos* index = scratch_.index.data();
#if CUNUMPY_SORT_AVX512
    if (host_fast::cpu_has_avx512()) {
      write_words_avx512<0>(keys_ + at, k, t, nullptr, n);
      write_words_avx512<1>(reinterpret_cast<std::uint64_t*>(order_ + at), nullptr, t, index, n);
      for (std::size_t a = 0; a < rows_->size(); ++a)
        if ((*rows_)[a].row_bytes == 8)
          write_words_avx512<2>(static_cast<std::uint64_t*>((*rows_)[a].out) + at, nullptr, t,
                                scratch_.taken[a].data(), n);
        else
          gather_rows(a, t, n, at);
      return;
    }
#endif
    std::uint64_t* __restrict ok = keys_ + at;
    std::int64_t* __restrict oo = order_ + at;
    for (long long j = 0; j < n; ++j) {
      ok[j] = k[j];
      oo[j] = static_cast<std::int64_t>(index[t[j]]);
    }
    for (std::size_t a = 0; a < rows_->size(); ++a) gather_rows(a, t, n, at);
  }

 private:
  template <typename T>
  void gather_rows(std::size_t a, const T* t, long long n, long long at) const {
    const std::size_t b = (*rows_)[a].row_bytes;
    by_word(b, [&](auto word) {
      using W = decltype(word);
      gather_taken(
          static_cast<W*>((*rows_)[a].out) + static_cast<std::size_t>(at) * (b / sizeof(W)),
          reinterpret_cast<const W*>(scratch_.taken[a].data()), t, n, b / sizeof(W));
    });
  }

  std::uint64_t* keys_;
  std::int64_t* order_;
  const std::vector<CarriedOut>* rows_;
  ThreadScratch& scratch_;
  static constexpr std::size_t kNone = ~std::size_t{0};
  std::size_t fused_ = kNone;  // the array whose rows the counting pass takes aside
};

// ---- a bucket's sort -------------------------------------------------------------------------

// Sorts n pairs stably by the bits below `top` (the bits at and above are all equal) into
// output rows [at, at + n): keys ka[0, n) with tags ta[i], or, when ta is null, tags i (a top
// bucket as staged: ka may be the output rows themselves, read before anything is written).
// One counting pass on the next ~log2(n) + 2 bits into the thread's scratch leaves groups of
// zero, one or two pairs (for keys that spread: Morton keys of particles do), which an
// insertion sort orders in the cache before the pairs are written out.  A group that stays
// large (clustered keys) is sorted the same way, recursively.  A digit that is the same for
// every pair costs one histogram and no move.  `copy` (see BucketCopy) is made by the first
// counting pass, or first thing when there is none; `ahead` is fetched by the counting scatter.
// Counts of the tags' type: 16-bit ones below 2^16 pairs, half the lines of 32-bit ones to clear,
// scan and hit.
template <typename T, typename Index>
void sort_bucket(const std::uint64_t* ka, const T* ta, long long n, int top, long long at,
                 const Sink& sink, ThreadScratch& scratch, BucketCopy<Index> copy = {},
                 Lookahead ahead = {}) {
  auto tag = [&](long long i) -> T { return ta != nullptr ? ta[i] : static_cast<T>(i); };
  if (n <= kSmallGroup || top <= 0) {
    if (copy.index_from != nullptr) copy.all(n);
    scratch.reserve(n);
    auto* tt = static_cast<T*>(scratch.tags);
    for (long long i = 0; i < n; ++i) {
      scratch.keys[i] = ka[i];
      tt[i] = tag(i);
    }
    insertion_sort(scratch.keys, tt, n);
    sink.write(scratch.keys, tt, n, at);
    return;
  }
  // Three to six digit values per pair: most groups then hold zero or one pair, and the pairs
  // that share one are rarely out of order side by side (which sends a block of the settle
  // to its slow path; with two values per pair, 13 bits for 4095 pairs, one block in five).
  // 14 bits for the 4096-pair buckets of 2^20 keys, 15 for the 8192-pair ones of 2^24.
  const int bits =
      std::clamp(static_cast<int>(std::bit_width(static_cast<unsigned long long>(3 * n - 1))), 6,
                 kMaxDigitBits);
  scratch.reserve(n, std::size_t{1} << bits);  // no allocation per bucket
  auto* count = static_cast<T*>(scratch.count);
  for (;;) {
    const int shift = std::max(0, top - bits);
    const int width = top - shift;
    const std::uint64_t mask = (std::uint64_t{1} << width) - 1;
    const int digits = 1 << width;
    std::fill(count, count + digits, T{0});
    if (copy.index_from != nullptr) {
      constexpr long long kStep = 8;  // a line of keys and of rows a step
      long long i = 0;
      for (; i + kStep <= n; i += kStep) {
        copy.some(i, kStep);
        for (long long j = i; j < i + kStep; ++j) ++count[(ka[j] >> shift) & mask];
      }
      copy.some(i, n - i);
      for (; i < n; ++i) ++count[(ka[i] >> shift) & mask];
      copy = {};
    } else {
      for (long long i = 0; i < n; ++i) ++count[(ka[i] >> shift) & mask];
    }
    if (count[(ka[0] >> shift) & mask] == n) {  // one digit value: look further down
      top = shift;
      if (top == 0)
        return sort_bucket<T, Index>(ka, ta, n, 0, at, sink, scratch);  // all keys equal
      continue;
    }
    const std::uint32_t largest = scan_counts(count, digits);
    // The stable counting scatter by this digit (count[d] ends as the end of group d).
    auto scatter = [&](std::uint64_t* dk, T* dt) {
      auto place = [&](long long i) {
        const std::uint64_t key = ka[i];
        const std::uint32_t p = count[(key >> shift) & mask]++;  // below n: no wrap
        dk[p] = key;
        dt[p] = tag(i);
      };
      long long i = 0;
      for (const long long fetched = std::min(n, ahead.n) & ~7LL; i < fetched; i += 8) {
        ahead.fetch(i);
        for (long long j = i; j < i + 8; ++j) place(j);
      }
      for (; i < n; ++i) place(i);
    };
    // The common case: scatter, insertion sort, write out.  When the digit took the last bits
    // (keys of few bits: cell numbers), the scatter alone sorts: groups of equal keys.
    if (largest <= kSmallGroup || shift == 0) {
      std::uint64_t* tk = scratch.keys;
      auto* tt = static_cast<T*>(scratch.tags);
      scatter(tk, tt);
      if (shift > 0) settle(tk, tt, n);
      sink.write(tk, tt, n, at);
      return;
    }
    // Large groups (clustered keys): scatter into memory of this level, then each group in
    // turn: large ones recursively, small ones (already in digit order) by the base case.
    std::vector<std::uint64_t> gk(static_cast<std::size_t>(n));
    std::vector<T> gt(static_cast<std::size_t>(n));
    scatter(gk.data(), gt.data());
    const std::vector<std::uint32_t> ends(count, count + digits);  // the recursion reuses count
    long long start = 0, run = 0;
    for (int d = 0; d <= digits; ++d) {
      const long long end = d < digits ? ends[d] : n;
      if (d == digits || end - start > kSmallGroup) {
        if (start > run)  // the small groups before this one, sorted together
          sort_bucket<T, Index>(gk.data() + run, gt.data() + run, start - run, 0, at + run, sink,
                                scratch);
        if (d < digits)
          sort_bucket<T, Index>(gk.data() + start, gt.data() + start, end - start, shift,
                                at + start, sink, scratch);
        run = end;
      }
      start = end;
    }
    return;
  }
}

// A top bucket of n pairs: 16-bit tags and counts below 2^16 pairs.
template <typename Index>
void sort_top_bucket(const std::uint64_t* ka, long long n, int top, long long at, const Sink& sink,
                     ThreadScratch& scratch, BucketCopy<Index> copy, Lookahead ahead) {
  if (n < (1LL << 16))
    sort_bucket<std::uint16_t, Index>(ka, nullptr, n, top, at, sink, scratch, copy, ahead);
  else
    sort_bucket<std::uint32_t, Index>(ka, nullptr, n, top, at, sink, scratch, copy, ahead);
}

// ---- the most significant digit ----------------------------------------------------------------

// The first carried array whose rows are 8 bytes rides along in the top digit's scatter: its
// rows reach their bucketed positions (in its output) with no second pass over the array.
// Other arrays are staged afterwards through the positions the scatter records.
struct RowRide {
  const std::uint64_t* in = nullptr;
  std::uint64_t* stage = nullptr;
};

// Scatter of the most significant digit through write-combining buffers: each bucket gathers
// one 64-byte line of keys, one of original indices (and one of riding rows) in a small
// buffer, and full lines go to memory with streaming stores.  The destinations are the
// outputs themselves (keys, order and the riding array's output), which each bucket then
// sorts in place.  Lines are not read before they are written, and far fewer pages are
// touched at a time than with one store per pair: about twice as fast as plain stores for
// arrays larger than the caches.
template <bool kRide>
class LineScatter {
 public:
  static constexpr unsigned kWords = 64 / sizeof(std::uint64_t);
  explicit LineScatter(int buckets) : lines_(static_cast<std::size_t>(buckets)) {}

  // Pairs [begin, end) of `words` go to positions next[digit]++ of keys / indices (and their
  // riding rows to the same positions of ride.stage), recorded in first[i] when first is not
  // null; first_owned[d] is where this caller's part of bucket d starts (positions before it
  // belong to others).
  void run(const std::uint64_t* words, long long begin, long long end, int shift,
           std::uint64_t mask, std::uint32_t* next, const std::uint32_t* first_owned,
           std::uint64_t* keys, std::int64_t* indices, RowRide ride, Pos* first) {
    Line* lines = lines_.data();
    for (long long i = begin; i < end; ++i) {
      const std::uint64_t key = words[i];
      const std::uint64_t d = (key >> shift) & mask;
      const std::uint32_t pos = next[d]++;
      if (first != nullptr) first[i] = pos;
      Line& line = lines[d];
      line.keys[pos % kWords] = key;
      line.indices[pos % kWords] = i;
      if constexpr (kRide) line.rows[pos % kWords] = ride.in[i];
      if (pos % kWords == kWords - 1) {
        flush(keys, line.keys, pos - (kWords - 1), pos + 1, first_owned[d]);
        flush(indices, line.indices, pos - (kWords - 1), pos + 1, first_owned[d]);
        if constexpr (kRide)
          flush(ride.stage, line.rows, pos - (kWords - 1), pos + 1, first_owned[d]);
      }
    }
    for (std::size_t d = 0; d < lines_.size(); ++d) {  // the partly filled last lines
      const std::uint32_t e = next[d];
      flush(keys, lines[d].keys, e - e % kWords, e, first_owned[d]);
      flush(indices, lines[d].indices, e - e % kWords, e, first_owned[d]);
      if constexpr (kRide) flush(ride.stage, lines[d].rows, e - e % kWords, e, first_owned[d]);
    }
  }

 private:
  struct alignas(64) PairLine {
    std::uint64_t keys[kWords];
    std::int64_t indices[kWords];
  };
  struct alignas(64) RideLine : PairLine {
    std::uint64_t rows[kWords];
  };
  using Line = std::conditional_t<kRide, RideLine, PairLine>;
  // Positions [from, to) of one line (from is a multiple of the line's length); positions
  // below `owned` are another caller's.
  template <typename T>
  static void flush(T* out, const T* line, std::uint32_t from, std::uint32_t to,
                    std::uint32_t owned) {
    constexpr unsigned per_line = 64 / sizeof(T);
#if defined(__x86_64__)
    if (from >= owned && to - from == per_line &&
        reinterpret_cast<std::uintptr_t>(out + from) % 64 == 0) {
      auto* dst = reinterpret_cast<__m128i*>(out + from);
      const auto* src = reinterpret_cast<const __m128i*>(line);
      for (int q = 0; q < 4; ++q) _mm_stream_si128(dst + q, _mm_load_si128(src + q));
      return;
    }
#endif
    for (std::uint32_t p = std::max(from, owned); p < to; ++p) out[p] = line[p % per_line];
  }
  std::vector<Line> lines_;
};

// The same scatter with plain stores, for pairs that fit in the caches (which keeps them there
// for the buckets).  The original indices are staged as 32-bit words, packed at the start of
// their bucket's region of the order: position p of the bucket that starts at s goes to
// 32-bit word s + p of the order (inside bytes [8s, 8e) of the bucket's own region).
template <bool kRide>
void scatter_in_cache(const std::uint64_t* words, long long begin, long long end, int shift,
                      std::uint64_t mask, std::uint32_t* next, const long long* bucket_first,
                      std::uint64_t* keys, Pos* indices, RowRide ride, Pos* first) {
  for (long long i = begin; i < end; ++i) {
    const std::uint64_t k = words[i];
    const std::uint64_t d = (k >> shift) & mask;
    const std::uint32_t pos = next[d]++;
    keys[pos] = k;
    const auto index = static_cast<Pos>(i);
    std::memcpy(indices + bucket_first[d] + pos, &index, sizeof index);  // bytes: see sort_bucket
    if constexpr (kRide) ride.stage[pos] = ride.in[i];
    if (first != nullptr) first[i] = pos;
  }
}

// Rows [begin, end) of `in` to their bucketed positions first[i] of `stage`.
template <typename W>
void stage_rows(W* __restrict stage, const W* __restrict in, const Pos* first, long long begin,
                long long end, std::size_t per_row) {
  if (per_row == 1) {
    for (long long i = begin; i < end; ++i) stage[first[i]] = in[i];
    return;
  }
  for (long long i = begin; i < end; ++i)
    for (std::size_t c = 0; c < per_row; ++c) stage[first[i] * per_row + c] = in[i * per_row + c];
}

void stage_rows_any(void* stage, const void* in, std::size_t row_bytes, const Pos* first,
                    long long begin, long long end) {
  by_word(row_bytes, [&](auto word) {
    using W = decltype(word);
    stage_rows(static_cast<W*>(stage), static_cast<const W*>(in), first, begin, end,
               row_bytes / sizeof(W));
  });
}

// The top digit: up to 11 bits below `high` (the highest bit in which keys differ), for
// buckets of at least ~4096 pairs: a bucket's pairs, counts and rows stay in the core's L2.
// (Smaller buckets need more bits: 512 scatter destinations at 2^20 keys measured 40% slower.)
constexpr int kMaxTopBits = 11;
int top_digit_bits(long long n, int high) {
  int bits = 4;
  while (bits < kMaxTopBits && (n >> (bits + 1)) >= 4096) ++bits;
  return std::min(bits, high);
}

// Stable sort of n words (0 < n < 2^32): the most-significant-digit pass (parallel, stable;
// write-combined when the data is larger than the caches), the rows staged at the pairs'
// bucketed positions, then each bucket sorted where it lies and written out with its rows.
// One parallel region, whose threads take their parts of the keys by the size of the team
// they got: called from inside a parallel region, the sort gets a team of one when nested
// regions are off, whatever it asked for.
void host_sort_pairs(const std::uint64_t* words, long long n, std::uint64_t* out_keys,
                     std::int64_t* out, std::span<const CarriedRows> rows) {
  // The highest bit in which keys differ, guessed from a sample: the pass that checks the
  // guess counts the top digit under it too, so the keys are read once before the scatter
  // (a wrong guess, possible for clustered keys, costs one more counting pass).
  const std::uint64_t first_key = words[0];
  std::uint64_t sample = 0;
  for (long long s = 1; s <= 64; ++s) sample |= words[(n - 1) * s / 64] ^ first_key;
  int high = 64 - std::countl_zero(sample);
  int msd_bits = top_digit_bits(n, high);
  int msd_shift = high - msd_bits;
  std::uint64_t mask = (std::uint64_t{1} << msd_bits) - 1;
  const bool line_scatter = n >= kLineScatterPairs;

  // The pairs and the rows are staged in the outputs; only arrays that do not ride in the
  // scatter need the positions recorded (host allocator: its cache of large blocks makes
  // repeated sorts skip the operating system's page faults).
  const auto un = static_cast<std::size_t>(n);
  std::vector<CarriedOut> carried;
  RowRide ride;
  std::vector<std::size_t> others;  // carried arrays staged through `first`
  for (std::size_t a = 0; a < rows.size(); ++a) {
    const CarriedRows& r = rows[a];
    if (r.row_bytes == 0) continue;
    carried.push_back({r.out, r.row_bytes});
    if (r.row_bytes == 8 && ride.in == nullptr)
      ride = {static_cast<const std::uint64_t*>(r.in), static_cast<std::uint64_t*>(r.out)};
    else
      others.push_back(a);
  }
  std::shared_ptr<MemoryBlock> first_block;
  Pos* first = nullptr;  // bucketed position of each original index, to stage the other arrays
  if (!others.empty()) {
    first_block = allocate_block(MemoryKind::host, un * sizeof(Pos));
    first = static_cast<Pos*>(first_block->data());
  }
  auto* packed =
      reinterpret_cast<Pos*>(out);  // indices staged in cache-sized sorts (scatter_in_cache)

  int threads = 1;  // asked for; the team may be smaller
#if defined(_OPENMP)
  threads = static_cast<int>(
      std::min<long long>(omp_get_max_threads(), std::max<long long>(1, n / 65536)));
#endif
  constexpr std::size_t kStride = std::size_t{1} << kMaxTopBits;  // counts per thread
  std::vector<std::uint32_t> counts(static_cast<std::size_t>(threads) * kStride, 0);
  std::vector<std::uint64_t> diffs(static_cast<std::size_t>(threads), 0);
  std::vector<long long> bucket_start(kStride + 1, 0);
  int team = 1;
  bool one_key = false, recount = false;
  // An exception may not leave the parallel region (memory for a bucket's scratch or for a
  // cluster of equal keys running out): the first one is kept, every thread skips the work
  // left (meeting the others at each barrier), and it is rethrown after the region, the
  // outputs then released by the caller.
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  auto guarded = [&](auto&& work) {
    if (failed.load(std::memory_order_relaxed)) return;
    try {
      work();
    } catch (...) {
#pragma omp critical(cunumpy_host_sort_failure)
      {
        if (!failure) failure = std::current_exception();
      }
      failed.store(true, std::memory_order_relaxed);
    }
  };
#pragma omp parallel num_threads(threads)
  {
    int t = 0;
#if defined(_OPENMP)
    t = omp_get_thread_num();
#pragma omp single
    team = omp_get_num_threads();
#endif
    const auto [begin, end] = split_range(n, t, team);
    std::uint32_t* c = counts.data() + static_cast<std::size_t>(t) * kStride;
    std::uint64_t my_diff = 0;
    for (long long i = begin; i < end; ++i) {
      const std::uint64_t w = words[i];
      my_diff |= w ^ first_key;
      ++c[(w >> msd_shift) & mask];
    }
    diffs[static_cast<std::size_t>(t)] = my_diff;
#pragma omp barrier
#pragma omp single
    {
      std::uint64_t diff = 0;
      for (int tt = 0; tt < team; ++tt) diff |= diffs[static_cast<std::size_t>(tt)];
      one_key = diff == 0;
      if (!one_key &&
          64 - std::countl_zero(diff) != high) {  // the sample missed the highest difference
        high = 64 - std::countl_zero(diff);
        msd_bits = top_digit_bits(n, high);
        msd_shift = high - msd_bits;
        mask = (std::uint64_t{1} << msd_bits) - 1;
        recount = true;
      }
    }
    if (one_key) {  // one key: the order is the identity
      for (long long i = begin; i < end; ++i) out[i] = i;
      std::memcpy(out_keys + begin, words + begin,
                  static_cast<std::size_t>(end - begin) * sizeof(std::uint64_t));
      for (const CarriedRows& r : rows)
        if (r.row_bytes != 0)
          std::memcpy(static_cast<unsigned char*>(r.out) + begin * r.row_bytes,
                      static_cast<const unsigned char*>(r.in) + begin * r.row_bytes,
                      static_cast<std::size_t>(end - begin) * r.row_bytes);
    } else {
      if (recount) {
        std::fill(c, c + kStride, 0u);
        for (long long i = begin; i < end; ++i) ++c[(words[i] >> msd_shift) & mask];
#pragma omp barrier
      }
      const int buckets = 1 << msd_bits;
#pragma omp single
      {  // bucket-major, then thread: stable
        std::uint32_t offset = 0;
        for (int b = 0; b < buckets; ++b) {
          bucket_start[static_cast<std::size_t>(b)] = offset;
          for (int tt = 0; tt < team; ++tt) {
            std::uint32_t& v =
                counts[static_cast<std::size_t>(tt) * kStride + static_cast<std::size_t>(b)];
            const std::uint32_t cnt = v;
            v = offset;
            offset += cnt;
          }
        }
        bucket_start[static_cast<std::size_t>(buckets)] = offset;
      }
      guarded([&] {
        if (line_scatter) {
          const std::vector<std::uint32_t> owned(c, c + buckets);
          if (ride.in != nullptr)
            LineScatter<true>(buckets).run(words, begin, end, msd_shift, mask, c, owned.data(),
                                           out_keys, out, ride, first);
          else
            LineScatter<false>(buckets).run(words, begin, end, msd_shift, mask, c, owned.data(),
                                            out_keys, out, ride, first);
        } else if (ride.in != nullptr) {
          scatter_in_cache<true>(words, begin, end, msd_shift, mask, c, bucket_start.data(),
                                 out_keys, packed, ride, first);
        } else {
          scatter_in_cache<false>(words, begin, end, msd_shift, mask, c, bucket_start.data(),
                                  out_keys, packed, ride, first);
        }
        // This thread's rows of the other arrays go where its pairs went.
        for (const std::size_t a : others)
          stage_rows_any(rows[a].out, rows[a].in, rows[a].row_bytes, first, begin, end);
      });
      store_fence();
#pragma omp barrier
      ThreadScratch& scratch = thread_scratch();
      Sink sink(out_keys, out, carried, scratch);
#pragma omp for schedule(dynamic, 16)
      for (int b = 0; b < buckets; ++b) {
        const long long s = bucket_start[static_cast<std::size_t>(b)],
                        e = bucket_start[static_cast<std::size_t>(b) + 1];
        if (e == s || failed.load(std::memory_order_relaxed)) continue;
        // The bucket after the next (this thread's but at the end of its chunk of buckets): the
        // next one is on its way already.
        Lookahead ahead;
        if (const int a = b + kAheadBuckets; a < buckets) {
          const long long as = bucket_start[static_cast<std::size_t>(a)];
          ahead.keys = out_keys + as;
          ahead.index = line_scatter ? reinterpret_cast<const unsigned char*>(out + as)
                                     : reinterpret_cast<const unsigned char*>(packed + 2 * as);
          ahead.index_bytes = line_scatter ? sizeof(std::int64_t) : sizeof(Pos);
          ahead.rows = ride.stage != nullptr ? ride.stage + as : nullptr;
          ahead.n = bucket_start[static_cast<std::size_t>(a) + 1] - as;
        }
        guarded([&] {
          if (line_scatter)
            sort_top_bucket(out_keys + s, e - s, msd_shift, s, sink, scratch,
                            sink.take(static_cast<Pos>(s), e - s, out + s), ahead);
          else
            sort_top_bucket(out_keys + s, e - s, msd_shift, s, sink, scratch,
                            sink.take(static_cast<Pos>(s), e - s, packed + 2 * s), ahead);
        });
      }
      store_fence();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

void host_sort_words(const std::uint64_t* words, long long n, std::uint64_t* out_keys,
                     std::int64_t* out_order, std::span<const CarriedRows> rows) {
  if (n == 0) return;
  if (n >= (1LL << 32))
    throw ValueError("sort_by_key on the host sorts fewer than 2^32 keys per call, got " +
                     std::to_string(n) + "; sort parts and merge them, or sort on the device");
  host_sort_pairs(words, n, out_keys, out_order, rows);
}

}  // namespace cunumpy::detail
