// Morton keys, sort_by_key and segment_sum (algorithms.hpp).  Compiled as CUDA when the CUDA
// backend is built: the loops then run on the device, and the device sort is CUB's.
#include <cunumpy/algorithms.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>

#include <cunumpy/errors.hpp>
#include <cunumpy/morton.cuh>
#include <cunumpy/parallel.hpp>

#include "host_fast.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if CUNUMPY_CUDA_COMPILATION()
#include <cub/device/device_radix_sort.cuh>
#include <cunumpy/cuda_check.hpp>
#endif

namespace cunumpy {

int max_morton_levels(int ndim) {
  if (ndim == 2) return MAX_MORTON_LEVELS_2D;
  if (ndim == 3) return MAX_MORTON_LEVELS_3D;
  throw ValueError("Morton keys exist for 2 or 3 dimensions, got ndim=" + std::to_string(ndim));
}

namespace {
void check_levels(int ndim, int levels) {
  if (levels < 0 || levels > max_morton_levels(ndim))
    throw ValueError("Morton keys in " + std::to_string(ndim) + "D take 0.." + std::to_string(max_morton_levels(ndim)) +
                     " levels (bits per axis), got " + std::to_string(levels));
}
}  // namespace

std::vector<double> morton_scales(std::span<const double> lower, std::span<const double> upper, int levels) {
  if (lower.size() != upper.size() || (lower.size() != 2 && lower.size() != 3))
    throw ValueError("morton_scales: lower and upper need 2 or 3 values each, got " + std::to_string(lower.size()) +
                     " and " + std::to_string(upper.size()));
  check_levels(static_cast<int>(lower.size()), levels);
  std::vector<double> scales(lower.size());
  for (std::size_t d = 0; d < lower.size(); ++d) {
    if (!(upper[d] != lower[d]))
      throw ValueError("morton_scales: the box is empty along axis " + std::to_string(d) + " (lower == upper == " +
                       std::to_string(lower[d]) + ")");
    scales[d] = std::ldexp(1.0, levels) / (upper[d] - lower[d]);
  }
  return scales;
}

Array<std::uint64_t> morton_keys(const Array<double>& positions, std::span<const double> lower,
                                 std::span<const double> upper, int levels) {
  if (positions.ndim() != 2 || (positions.shape(1) != 2 && positions.shape(1) != 3))
    throw ValueError("morton_keys: positions of shape (n, 2) or (n, 3) are required, got " + positions.shape().str());
  const int ndim = static_cast<int>(positions.shape(1));
  if (static_cast<int>(lower.size()) != ndim)
    throw ValueError("morton_keys: positions have " + std::to_string(ndim) + " coordinates but lower has " +
                     std::to_string(lower.size()));
  const std::vector<double> s = morton_scales(lower, upper, levels);
  const double l0 = lower[0], l1 = lower[1], l2 = ndim == 3 ? lower[2] : 0.0;
  const double s0 = s[0], s1 = s[1], s2 = ndim == 3 ? s[2] : 0.0;
  auto guard = use_backend(positions.backend());
  Array<std::uint64_t> keys(Shape{positions.shape(0)}, positions.backend());
  const double* x = positions.data();
  std::uint64_t* k = keys.data();
  if (positions.backend() != Backend::cuda) {  // host memory: the vectorised host loop
    const double lows[3] = {l0, l1, l2};
    detail::host_fast::morton_keys(k, x, positions.shape(0), ndim, lows, s.data(), levels);
    return keys;
  }
  if (ndim == 2) {
    parallel_for("morton_keys_2d", positions.shape(0), CUNUMPY_LAMBDA(long long i) {
      k[i] = cunumpy_morton_key2(x[2 * i], x[2 * i + 1], l0, l1, s0, s1, levels);
    });
  } else {
    parallel_for("morton_keys_3d", positions.shape(0), CUNUMPY_LAMBDA(long long i) {
      k[i] = cunumpy_morton_key3(x[3 * i], x[3 * i + 1], x[3 * i + 2], l0, l1, l2, s0, s1, s2, levels);
    });
  }
  return keys;
}

Array<std::uint64_t> morton_encode(const Array<std::uint64_t>& cells) {
  if (cells.ndim() != 2 || (cells.shape(1) != 2 && cells.shape(1) != 3))
    throw ValueError("morton_encode: cells of shape (n, 2) or (n, 3) are required, got " + cells.shape().str());
  const bool three = cells.shape(1) == 3;
  auto guard = use_backend(cells.backend());
  Array<std::uint64_t> keys(Shape{cells.shape(0)}, cells.backend());
  const std::uint64_t* c = cells.data();
  std::uint64_t* k = keys.data();
  CUNUMPY_FOR("morton_encode", cells.shape(0), i,
    k[i] = three ? cunumpy_morton_encode3(c[3 * i], c[3 * i + 1], c[3 * i + 2]) : cunumpy_morton_encode2(c[2 * i], c[2 * i + 1]);
  );
  return keys;
}

Array<std::uint64_t> morton_decode(const Array<std::uint64_t>& keys, int ndim) {
  max_morton_levels(ndim);  // validates ndim
  if (keys.ndim() != 1) throw ValueError("morton_decode: 1D keys are required, got shape " + keys.shape().str());
  auto guard = use_backend(keys.backend());
  Array<std::uint64_t> cells(Shape{keys.shape(0), ndim}, keys.backend());
  const std::uint64_t* k = keys.data();
  std::uint64_t* c = cells.data();
  CUNUMPY_FOR("morton_decode", keys.shape(0), i,
    if (ndim == 2) {
      c[2 * i] = cunumpy_morton_compact2(k[i]);
      c[2 * i + 1] = cunumpy_morton_compact2(k[i] >> 1);
    } else {
      c[3 * i] = cunumpy_morton_compact3(k[i]);
      c[3 * i + 1] = cunumpy_morton_compact3(k[i] >> 1);
      c[3 * i + 2] = cunumpy_morton_compact3(k[i] >> 2);
    }
  );
  return cells;
}

namespace detail {

using Pos = std::uint32_t;  // a position in a host sort's bucketed layout (it sorts < 2^32 keys)

// The bucketed layout of a host sort.  The most significant digit scatters the pairs into
// buckets: pair i lands at position first[i].  Each bucket is then sorted where it lies: the
// pair that ends at sorted position j came from position source[j], in the same bucket.  An
// array is permuted the same way: rows scattered to their buckets (sequential reads), then
// gathered within each bucket (reads that stay in the caches), instead of one random read of
// the whole array per row.
struct HostPermutation {
  std::shared_ptr<Allocation> first_block, source_block;  // Pos[n] each
  const Pos* first() const { return static_cast<const Pos*>(first_block->ptr); }
  const Pos* source() const { return static_cast<const Pos*>(source_block->ptr); }
};

void check_rows(std::string_view what, long long n, const Shape& shape, Backend keys_backend, Backend backend) {
  if (shape.rank() < 1 || shape[0] != n)
    throw ValueError(std::string(what) + ": every array needs " + std::to_string(n) +
                     " rows (one per key) along axis 0, got shape " + shape.str());
  if (backend != keys_backend)
    throw TypeError(std::string(what) + ": the keys are on " + std::string(to_string(keys_backend)) +
                    " and an array on " + std::string(to_string(backend)) + "; move them to one side first");
}

namespace {
template <typename K>
Array<std::uint64_t> to_words(const Array<K>& keys) {
  auto guard = use_backend(keys.backend());
  Array<std::uint64_t> w(keys.shape(), keys.backend());
  const K* k = keys.data();
  std::uint64_t* o = w.data();
  // Signed keys: flipping the sign bit of the sign-extended value keeps the order.
  const std::uint64_t flip = std::is_signed_v<K> ? (std::uint64_t{1} << 63) : 0;
  CUNUMPY_FOR("sort_by_key words", keys.size(), i,
              o[i] = static_cast<std::uint64_t>(static_cast<std::int64_t>(k[i])) ^ flip;);
  return w;
}

// Stable insertion sort of (key, index) pairs: linear on ranges that are sorted but for
// small groups, which is what the digit pass below leaves.
template <typename Index>
void insertion_sort_pairs(std::uint64_t* k, Index* x, long long n) {
  for (long long i = 1; i < n; ++i) {
    const std::uint64_t key = k[i];
    if (key >= k[i - 1]) continue;
    const Index v = x[i];
    long long j = i - 1;
    do {
      k[j + 1] = k[j];
      x[j + 1] = x[j];
      --j;
    } while (j >= 0 && k[j] > key);
    k[j + 1] = key;
    x[j + 1] = v;
  }
}

constexpr long long kSmallGroup = 48;  // groups up to this size are left to insertion sort
constexpr int kMaxDigitBits = 14;
constexpr long long kStreamingPairs = 1LL << 21;  // outputs larger than the caches from here on

// Stores one 8-byte word: plainly, or streaming (the destination line is not read first: half
// the memory traffic for outputs larger than the caches).
template <bool Stream, typename T>
inline void put_word(T* dst, T value) {
  static_assert(sizeof(T) == 8);
#if defined(__x86_64__)
  if constexpr (Stream) {
    long long bits;
    std::memcpy(&bits, &value, 8);
    _mm_stream_si64(reinterpret_cast<long long*>(dst), bits);
    return;
  }
#endif
  *dst = value;
}

// What a pair carries through a bucket's sort: its original index (a Pos), or, when the
// layout is recorded, its position in the bucketed layout too: (position << 32) | index.
template <typename Tag>
constexpr bool kRecordsLayout = sizeof(Tag) == 8;

// Writes the sorted pairs of one bucket: keys, order (original indices) and, when the layout
// is recorded, the positions the pairs came from.
template <bool Stream, typename Tag>
void write_sorted(const std::uint64_t* k, const Tag* t, long long n, std::uint64_t* out_keys, Pos* out_source,
                  std::int64_t* out_order) {
  for (long long i = 0; i < n; ++i) {
    put_word<Stream>(out_keys + i, k[i]);
    if constexpr (kRecordsLayout<Tag>) {
      put_word<Stream>(out_order + i, static_cast<std::int64_t>(t[i] & 0xFFFFFFFFu));
      out_source[i] = static_cast<Pos>(t[i] >> 32);
    } else {
      put_word<Stream>(out_order + i, static_cast<std::int64_t>(t[i]));
    }
  }
}

// A thread's scratch for sort_bucket, reused bucket after bucket: it stays in the caches.
template <typename Tag>
struct BucketScratch {
  std::vector<std::uint64_t> keys;
  std::vector<Tag> tags;
  void reserve(long long n) {
    if (static_cast<long long>(keys.size()) < n) {
      keys.resize(static_cast<std::size_t>(n));
      tags.resize(static_cast<std::size_t>(n));
    }
  }
};

// Where the sorted pairs of a bucket go.
struct SortedOut {
  std::uint64_t* keys;
  Pos* source;  // null when no layout is recorded
  std::int64_t* order;
  SortedOut at(long long offset) const {
    return {keys + offset, source != nullptr ? source + offset : nullptr, order + offset};
  }
};

// Sorts n pairs stably by the bits below `top` (the bits at and above are all equal): keys
// ka[0, n) with tags ta[i], or, when ta is null, the tags of bucketed positions base + i whose
// original indices are ia[i].  One counting pass on the next ~log2(n) + 1 bits into the
// thread's scratch leaves groups of zero, one or two pairs (for keys that spread: Morton keys
// of particles do), which an insertion sort orders in the cache before the pairs are written
// out.  A group that stays large (clustered keys) is sorted the same way, recursively.  A
// digit that is the same for every pair costs one histogram and no move.
template <bool Stream, typename Tag>
void sort_bucket(const std::uint64_t* ka, const Tag* ta, const Pos* ia, Pos base, long long n, int top,
                 const SortedOut& out, BucketScratch<Tag>& scratch) {
  auto tag = [&](long long i) -> Tag {
    if (ta != nullptr) return ta[i];
    if constexpr (kRecordsLayout<Tag>)
      return (static_cast<std::uint64_t>(base + static_cast<Pos>(i)) << 32) | ia[i];
    else
      return ia[i];
  };
  if (n <= kSmallGroup || top <= 0) {
    scratch.reserve(n);
    for (long long i = 0; i < n; ++i) {
      scratch.keys[i] = ka[i];
      scratch.tags[i] = tag(i);
    }
    insertion_sort_pairs(scratch.keys.data(), scratch.tags.data(), n);
    write_sorted<Stream>(scratch.keys.data(), scratch.tags.data(), n, out.keys, out.source, out.order);
    return;
  }
  // About two digit values per pair: most groups then hold zero or one pair.
  const int bits = std::clamp(static_cast<int>(std::bit_width(static_cast<unsigned long long>(n))) + 1, 6, kMaxDigitBits);
  std::vector<std::uint32_t> count(std::size_t{1} << bits);
  for (;;) {
    const int shift = std::max(0, top - bits);
    const int width = top - shift;
    const std::uint64_t mask = (std::uint64_t{1} << width) - 1;
    const int digits = 1 << width;
    std::fill(count.begin(), count.begin() + digits, 0u);
    for (long long i = 0; i < n; ++i) ++count[(ka[i] >> shift) & mask];
    if (count[(ka[0] >> shift) & mask] == n) {  // one digit value: look further down
      top = shift;
      if (top == 0) return sort_bucket<Stream>(ka, ta, ia, base, n, 0, out, scratch);  // all keys equal
      continue;
    }
    std::uint32_t offset = 0, largest = 0;
    for (int d = 0; d < digits; ++d) {
      const std::uint32_t c = count[d];
      count[d] = offset;
      offset += c;
      largest = std::max(largest, c);
    }
    // The stable counting scatter by this digit (count[d] ends as the end of group d).
    auto scatter = [&](std::uint64_t* dk, Tag* dt) {
      for (long long i = 0; i < n; ++i) {
        const std::uint64_t key = ka[i];
        const std::uint32_t at = count[(key >> shift) & mask]++;
        dk[at] = key;
        dt[at] = tag(i);
      }
    };
    if (largest <= kSmallGroup) {  // the common case: scatter, insertion sort, write out
      scratch.reserve(n);
      std::uint64_t* tk = scratch.keys.data();
      Tag* tt = scratch.tags.data();
      scatter(tk, tt);
      insertion_sort_pairs(tk, tt, n);
      write_sorted<Stream>(tk, tt, n, out.keys, out.source, out.order);
      return;
    }
    // Large groups (clustered keys): scatter into memory of this level, then each group in
    // turn: large ones recursively, small ones (already in digit order) by the base case.
    std::vector<std::uint64_t> gk(static_cast<std::size_t>(n));
    std::vector<Tag> gt(static_cast<std::size_t>(n));
    scatter(gk.data(), gt.data());
    long long start = 0, run = 0;
    for (int d = 0; d <= digits; ++d) {
      const long long end = d < digits ? count[d] : n;
      if (d == digits || end - start > kSmallGroup) {
        if (start > run)  // the small groups before this one, sorted together
          sort_bucket<Stream>(gk.data() + run, gt.data() + run, nullptr, 0, start - run, 0, out.at(run), scratch);
        if (d < digits)
          sort_bucket<Stream>(gk.data() + start, gt.data() + start, nullptr, 0, end - start, shift, out.at(start),
                              scratch);
        run = end;
      }
      start = end;
    }
    return;
  }
}

// Scatter of the most significant digit through write-combining buffers: each bucket gathers
// one 64-byte line of keys and one of original indices in a small buffer, and full lines go
// to memory with streaming stores.  Lines are not read before they are written, and far fewer
// pages are touched at a time than with one store per pair: about twice as fast as plain
// stores for arrays larger than the caches.
class LineScatter {
 public:
  static constexpr unsigned kKeys = 64 / sizeof(std::uint64_t), kIndices = 64 / sizeof(Pos);
  explicit LineScatter(int buckets) : lines_(static_cast<std::size_t>(buckets)) {}

  // Pairs [begin, end) of `words` go to positions next[digit]++ of keys / indices, recorded in
  // first[i]; first_owned[d] is where this caller's part of bucket d starts (positions before
  // it belong to others).
  void run(const std::uint64_t* words, long long begin, long long end, int shift, std::uint64_t mask,
           std::uint32_t* next, const std::uint32_t* first_owned, std::uint64_t* keys, Pos* indices, Pos* first) {
    Line* lines = lines_.data();
    for (long long i = begin; i < end; ++i) {
      const std::uint64_t key = words[i];
      const std::uint64_t d = (key >> shift) & mask;
      const std::uint32_t pos = next[d]++;
      first[i] = pos;
      Line& line = lines[d];
      line.keys[pos % kKeys] = key;
      line.indices[pos % kIndices] = static_cast<Pos>(i);
      if (pos % kKeys == kKeys - 1) flush(keys, line.keys, pos - (kKeys - 1), pos + 1, first_owned[d]);
      if (pos % kIndices == kIndices - 1) flush(indices, line.indices, pos - (kIndices - 1), pos + 1, first_owned[d]);
    }
    for (std::size_t d = 0; d < lines_.size(); ++d) {  // the partly filled last lines
      const std::uint32_t e = next[d];
      flush(keys, lines[d].keys, e - e % kKeys, e, first_owned[d]);
      flush(indices, lines[d].indices, e - e % kIndices, e, first_owned[d]);
    }
  }

 private:
  struct alignas(64) Line {
    std::uint64_t keys[kKeys];
    Pos indices[kIndices];
  };
  // Positions [from, to) of one line (from is a multiple of the line's length); positions
  // below `owned` are another caller's.
  template <typename T>
  static void flush(T* out, const T* line, std::uint32_t from, std::uint32_t to, std::uint32_t owned) {
    constexpr unsigned per_line = 64 / sizeof(T);
#if defined(__SSE2__)
    if (from >= owned && to - from == per_line && reinterpret_cast<std::uintptr_t>(out + from) % 64 == 0) {
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

void store_fence() {
#if defined(__SSE2__)
  _mm_sfence();  // streaming stores, before another thread reads what they wrote
#endif
}

// Stable sort of n words (n < 2^32) whose bits at and above `high` are equal: one
// most-significant-digit pass (up to 11 bits, parallel, stable; write-combined when the data
// is larger than the caches) splits the pairs into buckets small enough for the caches, then
// each bucket is sorted where it lies by sort_bucket.
std::shared_ptr<HostPermutation> host_sort_pairs(const std::uint64_t* words, long long n, int high,
                                                     std::uint64_t* out_keys, std::int64_t* out) {
  // Buckets of at least ~8192 pairs (cache-sized), at most 2048 of them.
  int msd_bits = 4;
  while (msd_bits < 11 && (n >> (msd_bits + 1)) >= 8192) ++msd_bits;
  msd_bits = std::min(msd_bits, high);
  const int buckets = 1 << msd_bits;
  const int msd_shift = high - msd_bits;
  const std::uint64_t mask = static_cast<std::uint64_t>(buckets - 1);
  const bool stream = n >= kStreamingPairs;
  // Scratch from the host allocator, whose cache of large blocks makes repeated sorts skip
  // the operating system's page faults.
  // Data larger than the caches also records its layout, through which the arrays are then
  // permuted (HostPermutation); in the caches, a plain gather by the order is as fast.
  const auto un = static_cast<std::size_t>(n);
  std::shared_ptr<HostPermutation> plan;
  Pos* first = nullptr;
  Pos* source = nullptr;
  if (stream) {
    plan = std::make_shared<HostPermutation>();
    plan->first_block = allocate(Backend::host, un * sizeof(Pos));
    plan->source_block = allocate(Backend::host, un * sizeof(Pos));
    first = static_cast<Pos*>(plan->first_block->ptr);
    source = static_cast<Pos*>(plan->source_block->ptr);
  }
  const auto keys_block = allocate(Backend::host, un * sizeof(std::uint64_t));
  const auto from_block = allocate(Backend::host, un * sizeof(Pos));
  auto* ka = static_cast<std::uint64_t*>(keys_block->ptr);
  auto* from = static_cast<Pos*>(from_block->ptr);  // original index of each bucketed position

  int threads = 1;
#if defined(_OPENMP)
  threads = static_cast<int>(std::min<long long>(omp_get_max_threads(), std::max<long long>(1, n / 65536)));
#endif
  std::vector<std::uint32_t> counts(static_cast<std::size_t>(threads) * buckets, 0);
  std::vector<long long> bucket_start(buckets + 1, 0);
#pragma omp parallel num_threads(threads)
  {
    int t = 0;
#if defined(_OPENMP)
    t = omp_get_thread_num();
#endif
    const long long begin = n * t / threads, end = n * (t + 1) / threads;
    std::uint32_t* c = counts.data() + static_cast<std::size_t>(t) * buckets;
    for (long long i = begin; i < end; ++i) ++c[(words[i] >> msd_shift) & mask];
#pragma omp barrier
#pragma omp single
    {
      std::uint32_t offset = 0;  // bucket-major, then thread: stable
      for (int b = 0; b < buckets; ++b) {
        bucket_start[b] = offset;
        for (int tt = 0; tt < threads; ++tt) {
          std::uint32_t& v = counts[static_cast<std::size_t>(tt) * buckets + b];
          const std::uint32_t cnt = v;
          v = offset;
          offset += cnt;
        }
      }
      bucket_start[buckets] = offset;
    }
    if (stream) {
      const std::vector<std::uint32_t> owned(c, c + buckets);
      LineScatter(buckets).run(words, begin, end, msd_shift, mask, c, owned.data(), ka, from, first);
    } else {  // the pairs fit in the caches: plain stores keep them there for the buckets
      for (long long i = begin; i < end; ++i) {
        const std::uint64_t k = words[i];
        const std::uint32_t pos = c[(k >> msd_shift) & mask]++;
        ka[pos] = k;
        from[pos] = static_cast<Pos>(i);
      }
    }
    store_fence();
#pragma omp barrier
    // Recording the layout, the pairs carry their bucketed positions too.
    const SortedOut whole{out_keys, source, out};
    BucketScratch<std::uint64_t> with_layout;
    BucketScratch<Pos> plain;
#pragma omp for schedule(dynamic, 16)
    for (int b = 0; b < buckets; ++b) {
      const long long s = bucket_start[b], e = bucket_start[b + 1];
      if (e == s) continue;
      if (stream)
        sort_bucket<true, std::uint64_t>(ka + s, nullptr, from + s, static_cast<Pos>(s), e - s, msd_shift, whole.at(s),
                                         with_layout);
      else
        sort_bucket<false, Pos>(ka + s, nullptr, from + s, 0, e - s, msd_shift, whole.at(s), plain);
    }
    store_fence();
  }
  return plan;
}

// Sorts `n` words of host-addressable memory into out_keys / out_order (host or the emulated
// device's arena: written in place, nothing is copied across).  Returns the bucketed layout
// when one was recorded (data larger than the caches), else null.
std::shared_ptr<HostPermutation> host_sort_words(const std::uint64_t* words, long long n, std::uint64_t* out_keys,
                                                     std::int64_t* out) {
  if (n == 0) return nullptr;
  if (n >= (1LL << 32))
    throw ValueError("sort_by_key on the host sorts fewer than 2^32 keys per call, got " + std::to_string(n) +
                     "; sort parts and merge them, or sort on the device");
  const std::uint64_t first = words[0];
  std::uint64_t diff = 0;
#pragma omp parallel for reduction(| : diff) schedule(static)
  for (long long i = 0; i < n; ++i) diff |= words[i] ^ first;
  if (diff == 0) {
    std::iota(out, out + n, std::int64_t{0});
    std::copy(words, words + n, out_keys);
    return nullptr;
  }
  return host_sort_pairs(words, n, 64 - std::countl_zero(diff), out_keys, out);
}

#if CUNUMPY_CUDA_COMPILATION()
SortedWords cuda_sort_words(const Array<std::uint64_t>& words) {
  const long long n = words.size();
  Array<std::int64_t> order(Shape{n}, Backend::cuda);
  Array<std::uint64_t> sorted(Shape{n}, Backend::cuda);
  if (n == 0) return {sorted, order};
  const std::uint64_t* w = words.data();
  const std::uint64_t top = parallel_reduce("sort_by_key max", n, ReduceOp::max, CUNUMPY_LAMBDA(long long i) { return w[i]; });
  const int end_bit = top == 0 ? 1 : 64 - std::countl_zero(top);
  Array<std::int64_t> index(Shape{n}, Backend::cuda);
  std::int64_t* idx = index.data();
  parallel_for("sort_by_key iota", n, CUNUMPY_LAMBDA(long long i) { idx[i] = i; });
  auto stream = static_cast<cudaStream_t>(current_stream());
  std::size_t temp_bytes = 0;
  CUNUMPY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, w, sorted.data(), idx, order.data(), n, 0,
                                                     end_bit, stream));
  auto temp = allocate(Backend::cuda, temp_bytes);
  CUNUMPY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp->ptr, temp_bytes, w, sorted.data(), idx, order.data(), n, 0,
                                                     end_bit, stream));
  return {sorted, order};
}
#endif
}  // namespace

Array<std::uint64_t> radix_words(const Array<std::uint64_t>& keys) { return keys; }
Array<std::uint64_t> radix_words(const Array<std::int64_t>& keys) { return to_words(keys); }
Array<std::uint64_t> radix_words(const Array<std::uint32_t>& keys) { return to_words(keys); }
Array<std::uint64_t> radix_words(const Array<std::int32_t>& keys) { return to_words(keys); }

SortedWords stable_sort_words(const Array<std::uint64_t>& words) {
  if (words.ndim() != 1) throw ValueError("sort_by_key: 1D keys are required, got shape " + words.shape().str());
  if (words.backend() == Backend::cuda) {
#if CUNUMPY_CUDA_COMPILATION()
    auto guard = use_backend(Backend::cuda);
    return cuda_sort_words(words);
#else
    throw BackendError("sort_by_key on cuda needs cunumpy built with CUDA");
#endif
  }
  // Host memory (host, or the emulated device's arena, sorted in place there).
  SortedWords out{Array<std::uint64_t>(words.shape(), words.backend()), Array<std::int64_t>(words.shape(), words.backend()),
                  nullptr};
  out.plan = host_sort_words(words.data(), words.size(), out.words.data(), out.order.data());
  return out;
}

namespace {
template <typename K>
Array<K> words_to(const Array<std::uint64_t>& words) {
  auto guard = use_backend(words.backend());
  Array<K> keys(words.shape(), words.backend());
  const std::uint64_t* w = words.data();
  K* k = keys.data();
  const std::uint64_t flip = std::is_signed_v<K> ? (std::uint64_t{1} << 63) : 0;
  CUNUMPY_FOR("sort_by_key keys", words.size(), i, k[i] = static_cast<K>(static_cast<std::int64_t>(w[i] ^ flip)););
  return keys;
}
}  // namespace

Array<std::uint64_t> from_words(const Array<std::uint64_t>& words, const Array<std::uint64_t>&) { return words; }
Array<std::int64_t> from_words(const Array<std::uint64_t>& words, const Array<std::int64_t>&) {
  return words_to<std::int64_t>(words);
}
Array<std::uint32_t> from_words(const Array<std::uint64_t>& words, const Array<std::uint32_t>&) {
  return words_to<std::uint32_t>(words);
}
Array<std::int32_t> from_words(const Array<std::uint64_t>& words, const Array<std::int32_t>&) {
  return words_to<std::int32_t>(words);
}

namespace {
template <typename W>
void gather_words(void* out, const void* in, const std::int64_t* order, long long n, std::size_t row_bytes) {
  const long long per_row = static_cast<long long>(row_bytes / sizeof(W));
  W* o = static_cast<W*>(out);
  const W* src = static_cast<const W*>(in);
  CUNUMPY_FOR("sort_by_key gather", n * per_row, k,
    const long long row = k / per_row, col = k % per_row;
    o[k] = src[order[row] * per_row + col];
  );
}

// Rows of a host sort's input, permuted through its bucketed layout (HostPermutation; only
// data larger than the caches has one, so the rows are written with streaming stores).
template <typename W>
void permute_words(void* out, const void* in, const HostPermutation& plan, long long n, std::size_t row_bytes) {
  const long long per_row = static_cast<long long>(row_bytes / sizeof(W));
  const auto stage_block = allocate(Backend::host, static_cast<std::size_t>(n) * row_bytes);
  W* stage = static_cast<W*>(stage_block->ptr);
  W* o = static_cast<W*>(out);
  const W* src = static_cast<const W*>(in);
  const Pos* first = plan.first();
  const Pos* source = plan.source();
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (long long i = 0; i < n; ++i)
      for (long long c = 0; c < per_row; ++c) stage[first[i] * per_row + c] = src[i * per_row + c];
#pragma omp for schedule(static)
    for (long long j = 0; j < n; ++j)
      for (long long c = 0; c < per_row; ++c) {
        if constexpr (sizeof(W) == 8)
          put_word<true>(o + j * per_row + c, stage[source[j] * per_row + c]);
        else
          o[j * per_row + c] = stage[source[j] * per_row + c];
      }
    store_fence();
  }
}

template <typename W>
void move_rows(void* out, const void* in, const SortedWords& sorted, long long n, std::size_t row_bytes) {
  if (sorted.plan != nullptr)
    permute_words<W>(out, in, *sorted.plan, n, row_bytes);
  else
    gather_words<W>(out, in, sorted.order.data(), n, row_bytes);
}
}  // namespace

void gather_rows(void* out, const void* in, const SortedWords& sorted, std::size_t row_bytes, Backend backend) {
  const long long n = sorted.order.size();
  if (n == 0 || row_bytes == 0) return;
  auto guard = use_backend(backend);
  if (row_bytes % 8 == 0)
    move_rows<std::uint64_t>(out, in, sorted, n, row_bytes);
  else if (row_bytes % 4 == 0)
    move_rows<std::uint32_t>(out, in, sorted, n, row_bytes);
  else if (row_bytes % 2 == 0)
    move_rows<std::uint16_t>(out, in, sorted, n, row_bytes);
  else
    move_rows<std::uint8_t>(out, in, sorted, n, row_bytes);
}

// ---- segment_sum ------------------------------------------------------------------------------

// Complex values are summed as pairs of their real type: the same additions, in the same order.
template <typename V>
struct Scalar {
  using type = V;
  static constexpr int parts = 1;
};
template <typename T>
struct Scalar<std::complex<T>> {
  using type = T;
  static constexpr int parts = 2;
};

namespace {

[[noreturn]] void throw_segment_key(long long key, long long n_segments) {
  throw ValueError("segment_sum: key " + std::to_string(key) + " is not below n_segments=" +
                   std::to_string(n_segments) + "; pass n_segments > the largest key (negative keys are dropped)");
}

template <SegmentKey K>
void check_segment_keys(const Array<K>& keys, long long n_segments) {
  auto guard = use_backend(keys.backend());
  const K* k = keys.data();
  const long long top = keys.size() == 0 ? -1
                                         : static_cast<long long>(parallel_reduce(
                                               "segment_sum max key", keys.size(), ReduceOp::max,
                                               CUNUMPY_LAMBDA(long long i) { return static_cast<long long>(k[i]); }));
  if (top >= n_segments) throw_segment_key(top, n_segments);
}


// Host memory (host or emulated), rows of `width` scalars: add in index order, one pass, keys
// checked on the way.  A run of equal keys is summed in registers that start from the
// segment's current values: the same additions in the same order as adding into out[key]
// one by one.
template <typename S, typename VS, typename K>
void host_segment_sum_rows(const K* k, const VS* v, long long n, long long n_segments, long long width, S* o) {
  long long i = 0;
  while (i < n) {
    const long long seg = static_cast<long long>(k[i]);
    long long end = i + 1;
    while (end < n && static_cast<long long>(k[end]) == seg) ++end;
    if (seg >= n_segments) throw_segment_key(seg, n_segments);
    if (seg >= 0) {
      S* row = o + seg * width;
      for (long long p = i; p < end; ++p)
        for (long long j = 0; j < width; ++j) row[j] += static_cast<S>(v[p * width + j]);
    }
    i = end;
  }
}

// One column (the common case: a charge per particle).  A single chain of additions runs at
// the adder's latency, so [0, n) is cut into three chunks at run boundaries, walked together:
// three independent chains.  Each chunk adds in index order; a segment whose values sit in one
// chunk therefore gets exactly the sequential sum.  A segment met by two chunks (keys that
// are not sorted) is marked and summed again afterwards, alone, in index order: the result
// is always the sequential one, bit for bit.
template <typename S, typename VS, typename K>
void host_segment_sum_column(const K* k, const VS* v, long long n, long long n_segments, S* o) {
  // Three chains: measured fastest on one core (four or more streams of keys and values start
  // to fight over the caches when the arrays are large).
  constexpr int kChunks = 3;
  if (n < 4096 || n_segments > 4 * n) {  // small inputs: the plain loop
    host_segment_sum_rows(k, v, n, n_segments, 1, o);
    return;
  }
  // owner[s]: the chunk that met segment s first; kShared once a second chunk meets it.
  constexpr std::int8_t kNone = -1, kShared = kChunks;
  std::vector<std::int8_t> owner(static_cast<std::size_t>(n_segments), kNone);
  bool shared = false;
  struct Cursor {
    long long i, end, seg;
    S acc;
  };
  Cursor c[kChunks];
  long long start = 0;
  for (int t = 0; t < kChunks; ++t) {
    long long end = t + 1 == kChunks ? n : std::max(start, n * (t + 1) / kChunks);
    while (end < n && end > 0 && k[end] == k[end - 1]) ++end;  // cut between runs
    c[t] = {start, end, -1, S(0)};
    start = end;
  }
  // Ends the current run of chunk t (storing its sum) and starts the one at its position.
  auto next_run = [&](Cursor& cur, int t) {
    if (cur.seg >= 0) o[cur.seg] = cur.acc;
    const long long seg = static_cast<long long>(k[cur.i]);
    if (seg >= n_segments) throw_segment_key(seg, n_segments);
    cur.seg = seg;
    if (seg >= 0) {
      std::int8_t& who = owner[static_cast<std::size_t>(seg)];
      if (who == kNone) {
        who = static_cast<std::int8_t>(t);
      } else if (who != t && who != kShared) {
        who = kShared;
        shared = true;
      }
      cur.acc = o[seg];
    }
  };
  // Values of negative keys are added to a sum that is never stored.
  auto step = [&](Cursor& cur, int t) {
    if (static_cast<long long>(k[cur.i]) != cur.seg) next_run(cur, t);
    cur.acc += static_cast<S>(v[cur.i]);
    ++cur.i;
  };
  for (;;) {  // stretches where no chunk runs out
    long long left = c[0].end - c[0].i;
    for (int t = 1; t < kChunks; ++t) left = std::min(left, c[t].end - c[t].i);
    if (left == 0) break;
    static_assert(kChunks == 3, "one step of each chunk per iteration");
    for (long long r = 0; r < left; ++r) {
      step(c[0], 0);
      step(c[1], 1);
      step(c[2], 2);
    }
  }
  for (int t = 0; t < kChunks; ++t) {
    while (c[t].i < c[t].end) step(c[t], t);
    if (c[t].seg >= 0) o[c[t].seg] = c[t].acc;
  }
  if (!shared) return;
  // Segments met by several chunks: again, from zero, in index order.
  for (long long s = 0; s < n_segments; ++s)
    if (owner[static_cast<std::size_t>(s)] == kShared) o[s] = S(0);
  for (long long i = 0; i < n; ++i) {
    const long long seg = static_cast<long long>(k[i]);
    if (seg >= 0 && owner[static_cast<std::size_t>(seg)] == kShared) o[seg] += static_cast<S>(v[i]);
  }
}

}  // namespace

template <SegmentKey K, Element V>
Array<segment_sum_t<V>> segment_sum_impl(const Array<K>& keys, const Array<V>& values, long long n_segments) {
  using R = segment_sum_t<V>;
  using S = typename Scalar<R>::type;      // the real type that is added
  using VS = typename Scalar<V>::type;     // the real type that is read
  if (keys.ndim() != 1) throw ValueError("segment_sum: 1D keys are required, got shape " + keys.shape().str());
  if (values.ndim() < 1 || values.ndim() > 2 || values.shape(0) != keys.size())
    throw ValueError("segment_sum: values of shape (n,) or (n, m) with n = " + std::to_string(keys.size()) +
                     " keys are required, got " + values.shape().str());
  if (values.backend() != keys.backend())
    throw TypeError("segment_sum: keys on " + std::string(to_string(keys.backend())) + ", values on " +
                    std::string(to_string(values.backend())) + "; move them to one side first");
  if (n_segments < 0) throw ValueError("segment_sum: n_segments must be non-negative, got " + std::to_string(n_segments));
  if (keys.backend() == Backend::cuda) check_segment_keys(keys, n_segments);
  const long long n = keys.size();
  const long long m = values.ndim() == 2 ? values.shape(1) : 1;
  const long long width = m * Scalar<R>::parts;  // scalars per row
  const Shape out_shape = values.ndim() == 2 ? Shape{n_segments, m} : Shape{n_segments};
  auto guard = use_backend(keys.backend());
  Array<R> out = zeros<R>(out_shape, keys.backend());
  S* o = reinterpret_cast<S*>(out.data());
  const VS* v = reinterpret_cast<const VS*>(values.data());
  const K* k = keys.data();

  if (keys.backend() != Backend::cuda) {
    if (width == 1)
      host_segment_sum_column(k, v, n, n_segments, o);
    else
      host_segment_sum_rows(k, v, n, n_segments, width, o);
    return out;
  }
  // Device: a stable sort by key, then each (segment, column) sums its run in index order.
  const SortedWords by_key = stable_sort_words(radix_words(keys));
  const Array<K> sorted = from_words(by_key.words, keys);
  const Array<std::int64_t>& order = by_key.order;
  const K* sk = sorted.data();
  const std::int64_t* ord = order.data();
  parallel_for("segment_sum", n_segments * width, CUNUMPY_LAMBDA(long long t) {
    const long long seg = t / width, col = t % width;
    long long lo = 0, hi = n;  // first position with key >= seg
    while (lo < hi) {
      const long long mid = (lo + hi) / 2;
      if (static_cast<long long>(sk[mid]) < seg) lo = mid + 1; else hi = mid;
    }
    S acc = S(0);
    for (long long p = lo; p < n && static_cast<long long>(sk[p]) == seg; ++p) acc += static_cast<S>(v[ord[p] * width + col]);
    o[t] = acc;
  });
  return out;
}

#define CUNUMPY_SEGMENT_SUM(K, V) \
  template Array<segment_sum_t<V>> segment_sum_impl<K, V>(const Array<K>&, const Array<V>&, long long);
#define CUNUMPY_SEGMENT_SUM_VALUES(K)          \
  CUNUMPY_SEGMENT_SUM(K, float)                \
  CUNUMPY_SEGMENT_SUM(K, double)               \
  CUNUMPY_SEGMENT_SUM(K, std::complex<float>)  \
  CUNUMPY_SEGMENT_SUM(K, std::complex<double>) \
  CUNUMPY_SEGMENT_SUM(K, std::int32_t)         \
  CUNUMPY_SEGMENT_SUM(K, std::int64_t)
CUNUMPY_SEGMENT_SUM_VALUES(std::int32_t)
CUNUMPY_SEGMENT_SUM_VALUES(std::int64_t)
#undef CUNUMPY_SEGMENT_SUM_VALUES
#undef CUNUMPY_SEGMENT_SUM

}  // namespace detail
}  // namespace cunumpy
