// The host's stable radix sort behind sort_by_key (host_sort.hpp): the top digit.
//
// One pass over the most significant digit (up to 11 bits, from the highest bit that differs
// between keys; parallel and stable) scatters (key, original index) pairs into buckets small
// enough for the caches; each bucket is then sorted where it lies (bucket_sort.cpp).  The
// rows of the arrays that travel with the keys are scattered to the buckets too and gathered
// within each bucket as it is written out: every read of the arrays is sequential or stays in
// the caches, instead of one random read of the whole array per row.  Everything is staged in
// the outputs themselves (keys, order, the arrays' outputs), which each bucket then overwrites
// with its sorted pairs: no scratch the size of the input but, when an array other than the
// first with 8-byte rows travels, the rows' bucketed positions (4 bytes a key).
// Measured by apps/bench_algorithms sort_by_key and sort_by_key_cells.
#include <cunumpy/host_targets.hpp>  // first: the targets compiled

#include "sort/host_sort.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cunumpy/errors.hpp>
#include <cunumpy/memory_block.hpp>

#include "sort/bucket_sort.hpp"
#include "sort/sort_simd.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace cunumpy::detail {
namespace {

using namespace host_sort;

// From this many keys on, the top digit's scatter is write-combined (sort_simd::line_scatter).
constexpr long long kLineScatterPairs = 1LL << 21;

// The first carried array whose rows are 8 bytes rides along in the top digit's scatter: its
// rows reach their bucketed positions (in its output) with no second pass over the array.
// Other arrays are staged afterwards through the positions the scatter records.
struct RowRide {
  const std::uint64_t* in = nullptr;
  std::uint64_t* stage = nullptr;
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
// (Smaller buckets need more bits, and more scatter destinations cost more than they save.)
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
    const IndexRange part = split_range(n, t, team);     // (no structured binding: OpenMP
    const long long begin = part.begin, end = part.end;  // constructs below capture them)
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
          sort_simd::line_scatter({words, begin, end, msd_shift, mask, buckets, c, owned.data(),
                                   out_keys, out, ride.in, ride.stage, first});
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
      sort_simd::stream_fence();
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
      sort_simd::stream_fence();
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
