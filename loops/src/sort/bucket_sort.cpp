// A top bucket's sort (bucket_sort.hpp): one counting pass on the next ~log2(size) + 2 bits
// into the thread's scratch, an insertion sort ("settle") of the small groups it leaves, and
// the sorted pairs written out with their rows, every read and write in the core's caches.
// The vector pieces (scan, settle, gathers) are in sort_simd.cpp; the plain ones here run under
// CUNUMPY_HOST_SIMD=portable.  Measured by apps/bench_algorithms sort_by_key and
// sort_by_key_cells.
#include <cunumpy/host_targets.hpp>  // first: the targets compiled

#include "sort/bucket_sort.hpp"

#include <bit>

#include "host_simd/targets.hpp"
#include "sort/plain_steps.hpp"
#include "sort/sort_simd.hpp"

namespace cunumpy::detail::host_sort {
namespace {

template <typename C>
std::uint32_t scan_counts(C* count, int digits) {
  if (host_simd::vector_loops()) return sort_simd::scan_counts(count, digits);
  return scan_counts_scalar(count, digits);
}

template <typename T>
void settle(std::uint64_t* k, T* t, long long n) {
  if (host_simd::vector_loops()) return sort_simd::settle(k, t, n);
  insertion_sort(k, t, n);
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

}  // namespace

ThreadScratch& thread_scratch() {
  thread_local ThreadScratch scratch;
  return scratch;
}

template <typename T>
void Sink::write(const std::uint64_t* k, const T* t, long long n, long long at) const {
  std::memcpy(keys_ + at, k, static_cast<std::size_t>(n) * sizeof(std::uint64_t));
  const Pos* index = scratch_.index.data();
  if (host_simd::vector_loops()) {
    sort_simd::gather_by_tag(reinterpret_cast<std::uint64_t*>(order_ + at), index, t, n);
    for (std::size_t a = 0; a < rows_->size(); ++a)
      if ((*rows_)[a].row_bytes == 8)
        sort_simd::gather_by_tag(static_cast<std::uint64_t*>((*rows_)[a].out) + at,
                                 scratch_.taken[a].data(), t, n);
      else
        gather_rows(a, t, n, at);
    return;
  }
  std::int64_t* __restrict oo = order_ + at;
  for (long long j = 0; j < n; ++j) oo[j] = static_cast<std::int64_t>(index[t[j]]);
  for (std::size_t a = 0; a < rows_->size(); ++a) gather_rows(a, t, n, at);
}

template <typename T>
void Sink::gather_rows(std::size_t a, const T* t, long long n, long long at) const {
  const std::size_t b = (*rows_)[a].row_bytes;
  by_word(b, [&](auto word) {
    using W = decltype(word);
    gather_taken(static_cast<W*>((*rows_)[a].out) + static_cast<std::size_t>(at) * (b / sizeof(W)),
                 reinterpret_cast<const W*>(scratch_.taken[a].data()), t, n, b / sizeof(W));
  });
}

namespace {

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

}  // namespace

// A top bucket of n pairs: 16-bit tags and counts below 2^16 pairs.
template <typename Index>
void sort_top_bucket(const std::uint64_t* ka, long long n, int top, long long at, const Sink& sink,
                     ThreadScratch& scratch, BucketCopy<Index> copy, Lookahead ahead) {
  if (n < (1LL << 16))
    sort_bucket<std::uint16_t, Index>(ka, nullptr, n, top, at, sink, scratch, copy, ahead);
  else
    sort_bucket<std::uint32_t, Index>(ka, nullptr, n, top, at, sink, scratch, copy, ahead);
}

template void sort_top_bucket<std::int64_t>(const std::uint64_t*, long long, int, long long,
                                            const Sink&, ThreadScratch&, BucketCopy<std::int64_t>,
                                            Lookahead);
template void sort_top_bucket<Pos>(const std::uint64_t*, long long, int, long long, const Sink&,
                                   ThreadScratch&, BucketCopy<Pos>, Lookahead);

}  // namespace cunumpy::detail::host_sort
