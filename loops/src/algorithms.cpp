// Morton keys, sort_by_key and segment_sum (algorithms.hpp).  Compiled as CUDA when the CUDA
// backend is built: the loops then run on the device, and the device sort is CUB's.
#include <cunumpy/algorithms.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <sstream>
#include <string>

#include <cunumpy/errors.hpp>
#include <cunumpy/morton.cuh>
#include <cunumpy/parallel.hpp>
#include <cunumpy/transfer.hpp>

#include "host_fast.hpp"
#include "host_simd/targets.hpp"
#include "sort/host_sort.hpp"

#if CUNUMPY_CUDA_COMPILATION()
#include <cub/device/device_radix_sort.cuh>
#include <cunumpy/cuda_check.hpp>
#endif

namespace cunumpy {

std::string host_simd() {
  return detail::host_simd::choice().report;
}

int max_morton_levels(int ndim) {
  if (ndim == 2) return MAX_MORTON_LEVELS_2D;
  if (ndim == 3) return MAX_MORTON_LEVELS_3D;
  throw ValueError("Morton keys exist for 2 or 3 dimensions, got ndim=" + std::to_string(ndim));
}

namespace {
void check_levels(int ndim, int levels) {
  if (levels < 1 || levels > max_morton_levels(ndim))
    throw ValueError("Morton keys in " + std::to_string(ndim) + "D take 1.." +
                     std::to_string(max_morton_levels(ndim)) + " levels (bits per axis), got " +
                     std::to_string(levels));
}
}  // namespace

std::vector<double> morton_scales(std::span<const double> lower, std::span<const double> upper,
                                  int levels) {
  if (lower.size() != upper.size() || (lower.size() != 2 && lower.size() != 3))
    throw ValueError("morton_scales: lower and upper need 2 or 3 values each, got " +
                     std::to_string(lower.size()) + " and " + std::to_string(upper.size()));
  check_levels(static_cast<int>(lower.size()), levels);
  std::vector<double> scales(lower.size());
  for (std::size_t d = 0; d < lower.size(); ++d) {
    if (!std::isfinite(lower[d]) || !std::isfinite(upper[d]))
      throw ValueError("morton_scales: the box must be finite, got lower " +
                       std::to_string(lower[d]) + " and upper " + std::to_string(upper[d]) +
                       " along axis " + std::to_string(d));
    if (!(upper[d] != lower[d]))
      throw ValueError("morton_scales: the box is empty along axis " + std::to_string(d) +
                       " (lower == upper == " + std::to_string(lower[d]) + ")");
    scales[d] = std::ldexp(1.0, levels) / (upper[d] - lower[d]);
  }
  return scales;
}

namespace {
// The error for positions with a NaN or infinite coordinate: names the first such particle
// (found now, on the error path) and how many there are.
[[noreturn]] void throw_non_finite_position(const Array<double>& positions) {
  const Array<double> h = to_host(positions);  // the error path only
  const long long n = h.shape(0), nd = h.shape(1);
  long long first = -1, count = 0;
  for (long long i = 0; i < n; ++i) {
    bool bad = false;
    for (long long a = 0; a < nd; ++a) bad = bad || !std::isfinite(h.data()[i * nd + a]);
    if (bad && first < 0) first = i;
    count += bad ? 1 : 0;
  }
  std::ostringstream m;
  m.precision(17);
  m << "morton_keys: particle " << first << " has a non-finite position (";
  for (long long a = 0; a < nd; ++a) m << (a > 0 ? ", " : "") << h.data()[first * nd + a];
  m << ")";
  if (count > 1) m << ", and " << count - 1 << " more particle(s) do";
  m << "; Morton keys need finite positions (positions outside the box, but finite, go to "
       "its edge cells): look for the step that made them (a time step too large for the "
       "fields?)";
  throw ValueError(m.str());
}
}  // namespace

Array<std::uint64_t> morton_keys(const Array<double>& positions, std::span<const double> lower,
                                 std::span<const double> upper, int levels) {
  if (positions.ndim() != 2 || (positions.shape(1) != 2 && positions.shape(1) != 3))
    throw ValueError("morton_keys: positions of shape (n, 2) or (n, 3) are required, got " +
                     positions.shape().str());
  const int ndim = static_cast<int>(positions.shape(1));
  if (static_cast<int>(lower.size()) != ndim)
    throw ValueError("morton_keys: positions have " + std::to_string(ndim) +
                     " coordinates but lower has " + std::to_string(lower.size()));
  const std::vector<double> s = morton_scales(lower, upper, levels);
  const double l0 = lower[0], l1 = lower[1], l2 = ndim == 3 ? lower[2] : 0.0;
  const double s0 = s[0], s1 = s[1], s2 = ndim == 3 ? s[2] : 0.0;
  const Target t = on(positions);
  Array<std::uint64_t> keys(Shape{positions.shape(0)}, positions.backend());
  const double* x = positions.data();
  std::uint64_t* k = keys.data();
  const long long n = positions.shape(0);
  if (positions.backend() != Backend::cuda) {  // host memory: the vectorised host loop
    detail::emulated_order(t);
    const double lows[3] = {l0, l1, l2};
    if (detail::host_fast::morton_keys(k, x, n, ndim, lows, s.data(), levels))
      throw_non_finite_position(positions);
    return keys;
  }
  // The device: the keys and a count of non-finite coordinates (x - x is NaN for them) in one
  // pass.
  const long long bad =
      ndim == 2 ? parallel_reduce(
                      t, "morton_keys_2d", n, ReduceOp::sum,
                      CUNUMPY_LAMBDA(long long i) {
                        const double px = x[2 * i], py = x[2 * i + 1];
                        k[i] = cunumpy_morton_key2(px, py, l0, l1, s0, s1, levels);
                        return (px - px == 0.0 && py - py == 0.0) ? 0LL : 1LL;
                      })
                : parallel_reduce(
                      t, "morton_keys_3d", n, ReduceOp::sum, CUNUMPY_LAMBDA(long long i) {
                        const double px = x[3 * i], py = x[3 * i + 1], pz = x[3 * i + 2];
                        k[i] = cunumpy_morton_key3(px, py, pz, l0, l1, l2, s0, s1, s2, levels);
                        return (px - px == 0.0 && py - py == 0.0 && pz - pz == 0.0) ? 0LL : 1LL;
                      });
  if (bad > 0) throw_non_finite_position(positions);
  return keys;
}

Array<std::uint64_t> morton_encode(const Array<std::uint64_t>& cells) {
  if (cells.ndim() != 2 || (cells.shape(1) != 2 && cells.shape(1) != 3))
    throw ValueError("morton_encode: cells of shape (n, 2) or (n, 3) are required, got " +
                     cells.shape().str());
  const bool three = cells.shape(1) == 3;
  Array<std::uint64_t> keys(Shape{cells.shape(0)}, cells.backend());
  const std::uint64_t* c = cells.data();
  std::uint64_t* k = keys.data();
  CUNUMPY_FOR_ON(on(cells), "morton_encode", cells.shape(0), i,
                 k[i] = three ? cunumpy_morton_encode3(c[3 * i], c[3 * i + 1], c[3 * i + 2])
                              : cunumpy_morton_encode2(c[2 * i], c[2 * i + 1]););
  return keys;
}

Array<std::uint64_t> morton_decode(const Array<std::uint64_t>& keys, int ndim) {
  max_morton_levels(ndim);  // validates ndim
  if (keys.ndim() != 1)
    throw ValueError("morton_decode: 1D keys are required, got shape " + keys.shape().str());
  Array<std::uint64_t> cells(Shape{keys.shape(0), ndim}, keys.backend());
  const std::uint64_t* k = keys.data();
  std::uint64_t* c = cells.data();
  CUNUMPY_FOR_ON(
      on(keys), "morton_decode", keys.shape(0), i,
      if (ndim == 2) {
        c[2 * i] = cunumpy_morton_compact2(k[i]);
        c[2 * i + 1] = cunumpy_morton_compact2(k[i] >> 1);
      } else {
        c[3 * i] = cunumpy_morton_compact3(k[i]);
        c[3 * i + 1] = cunumpy_morton_compact3(k[i] >> 1);
        c[3 * i + 2] = cunumpy_morton_compact3(k[i] >> 2);
      });
  return cells;
}

namespace {
template <typename R>
Array<std::uint64_t> periodic_cell_keys_of(const PeriodicCells& grid, std::span<const Array<R>> x,
                                           long long n,
                                           std::span<const Array<std::int32_t>> cells) {
  const int nd = grid.ndim;
  if (nd < 1 || nd > 3)
    throw ValueError("periodic_cell_keys: ndim must be 1, 2 or 3, got " + std::to_string(nd));
  if (static_cast<int>(x.size()) != nd || (!cells.empty() && static_cast<int>(cells.size()) != nd))
    throw ValueError("periodic_cell_keys: one position column a axis (" + std::to_string(nd) +
                     ") and as many cell columns or none are required, got " +
                     std::to_string(x.size()) + " and " + std::to_string(cells.size()));
  const int most = nd == 3 ? 21 : 32;
  for (int a = 0; a < nd; ++a)
    if (grid.cells[a] < 1 || grid.cells[a] > (1LL << most))
      throw ValueError("periodic_cell_keys: axis " + std::to_string(a) + " has " +
                       std::to_string(grid.cells[a]) + " cells; a key holds 1 to 2^" +
                       std::to_string(most) + " cells an axis in " + std::to_string(nd) + "D");
  if (n < 0) throw ValueError("periodic_cell_keys: n must be at least 0, got " + std::to_string(n));
  const Backend b = x[0].backend();
  detail::host_simd::CellKeyColumns<R> c{};
  const auto check = [&](const auto& column, const char* what, int a) {
    if (column.ndim() != 1 || column.shape(0) < n)
      throw ValueError(std::string("periodic_cell_keys: ") + what + " column " + std::to_string(a) +
                       " has shape " + column.shape().str() + ", not (>= " + std::to_string(n) +
                       ",)");
    if (column.backend() != b)
      throw ValueError(std::string("periodic_cell_keys: ") + what + " column " + std::to_string(a) +
                       " is on the " + std::string(to_string(column.backend())) +
                       " backend, column 0 on the " + std::string(to_string(b)));
  };
  for (int a = 0; a < 3; ++a) {
    const int from = a < nd ? a : 0;  // axes past ndim: unread
    check(x[from], "position", from);
    c.x[a] = x[from].data();
    c.cell[a] = nullptr;
    if (!cells.empty()) {
      check(cells[from], "cell", from);
      c.cell[a] = cells[from].data();
    }
    c.inverse[a] = grid.inverse_cell_size[from];
    c.cells[a] = grid.cells[from];
  }
  Array<std::uint64_t> keys(Shape{n}, b);
  std::uint64_t* k = keys.data();
  if (b != Backend::cuda) {  // host memory: vectors over the OpenMP threads
    detail::emulated_order(on(b));
    detail::host_fast::cell_keys(c, nd, n, k);
    return keys;
  }
  CUNUMPY_FOR_ON(on(b), "periodic_cell_keys", n, i, k[i] = detail::host_simd::cell_key(c, nd, i););
  return keys;
}
}  // namespace

Array<std::uint64_t> periodic_cell_keys(const PeriodicCells& grid, std::span<const Array<double>> x,
                                        long long n, std::span<const Array<std::int32_t>> cells) {
  return periodic_cell_keys_of(grid, x, n, cells);
}
Array<std::uint64_t> periodic_cell_keys(const PeriodicCells& grid, std::span<const Array<float>> x,
                                        long long n, std::span<const Array<std::int32_t>> cells) {
  return periodic_cell_keys_of(grid, x, n, cells);
}

namespace detail {

void check_rows(std::string_view what, long long n, const Shape& shape, Backend keys_backend,
                Backend backend) {
  if (shape.rank() < 1 || shape[0] != n)
    throw ValueError(std::string(what) + ": every array needs " + std::to_string(n) +
                     " rows (one per key) along axis 0, got shape " + shape.str());
  if (backend != keys_backend)
    throw TypeError(std::string(what) + ": the keys are on " +
                    std::string(to_string(keys_backend)) + " and an array on " +
                    std::string(to_string(backend)) + "; move them to one side first");
}

namespace {
template <typename K>
Array<std::uint64_t> to_words(const Array<K>& keys) {
  Array<std::uint64_t> w(keys.shape(), keys.backend());
  const K* k = keys.data();
  std::uint64_t* o = w.data();
  // Signed keys: flipping the sign bit of the sign-extended value keeps the order.
  const std::uint64_t flip = std::is_signed_v<K> ? (std::uint64_t{1} << 63) : 0;
  CUNUMPY_FOR_ON(on(keys), "sort_by_key words", keys.size(), i,
                 o[i] = static_cast<std::uint64_t>(static_cast<std::int64_t>(k[i])) ^ flip;);
  return w;
}

#if CUNUMPY_CUDA_COMPILATION()
template <typename W>
void gather_words(const Target& t, void* out, const void* in, const std::int64_t* order,
                  long long n, std::size_t row_bytes) {
  const long long per_row = static_cast<long long>(row_bytes / sizeof(W));
  W* o = static_cast<W*>(out);
  const W* src = static_cast<const W*>(in);
  parallel_for(
      t, "sort_by_key gather", n * per_row, CUNUMPY_LAMBDA(long long k) {
        const long long row = k / per_row, col = k % per_row;
        o[k] = src[order[row] * per_row + col];
      });
}

// out row i = in row order[i], rows of row_bytes bytes, on the device of `t`.
void gather_rows(const Target& t, void* out, const void* in, const std::int64_t* order, long long n,
                 std::size_t row_bytes) {
  if (n == 0 || row_bytes == 0) return;
  if (row_bytes % 8 == 0)
    gather_words<std::uint64_t>(t, out, in, order, n, row_bytes);
  else if (row_bytes % 4 == 0)
    gather_words<std::uint32_t>(t, out, in, order, n, row_bytes);
  else if (row_bytes % 2 == 0)
    gather_words<std::uint16_t>(t, out, in, order, n, row_bytes);
  else
    gather_words<std::uint8_t>(t, out, in, order, n, row_bytes);
}

SortedWords cuda_sort_words(const Target& t, const Array<std::uint64_t>& words) {
  const long long n = words.size();
  Array<std::int64_t> order(Shape{n}, Backend::cuda);
  Array<std::uint64_t> sorted(Shape{n}, Backend::cuda);
  if (n == 0) return {sorted, order};
  const std::uint64_t* w = words.data();
  const std::uint64_t top = parallel_reduce(
      t, "sort_by_key max", n, ReduceOp::max, CUNUMPY_LAMBDA(long long i) { return w[i]; });
  const int end_bit = top == 0 ? 1 : 64 - std::countl_zero(top);
  Array<std::int64_t> index(Shape{n}, Backend::cuda);
  std::int64_t* idx = index.data();
  parallel_for(
      t, "sort_by_key iota", n, CUNUMPY_LAMBDA(long long i) { idx[i] = i; });
  const StreamScope scope(t.stream);  // the temporary storage in the stream's order
  auto stream = static_cast<cudaStream_t>(t.stream.native_handle());
  std::size_t temp_bytes = 0;
  CUNUMPY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, w, sorted.data(), idx,
                                                     order.data(), n, 0, end_bit, stream));
  auto temp = allocate_block(MemoryKind::cuda, temp_bytes);
  CUNUMPY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp->data(), temp_bytes, w, sorted.data(),
                                                     idx, order.data(), n, 0, end_bit, stream));
  return {sorted, order};
}
#endif
}  // namespace

Array<std::uint64_t> radix_words(const Array<std::uint64_t>& keys) {
  return keys;
}
Array<std::uint64_t> radix_words(const Array<std::int64_t>& keys) {
  return to_words(keys);
}
Array<std::uint64_t> radix_words(const Array<std::uint32_t>& keys) {
  return to_words(keys);
}
Array<std::uint64_t> radix_words(const Array<std::int32_t>& keys) {
  return to_words(keys);
}

void check_sort_keys(const Shape& shape) {
  if (shape.rank() != 1)
    throw ValueError("sort_by_key: 1D keys are required, got shape " + shape.str());
}

SortedWords stable_sort_words(const Array<std::uint64_t>& words,
                              std::span<const CarriedRows> rows) {
  check_sort_keys(words.shape());
  if (words.backend() == Backend::cuda) {
#if CUNUMPY_CUDA_COMPILATION()
    const Target t = on(words);
    SortedWords out = cuda_sort_words(t, words);
    for (const CarriedRows& r : rows)
      gather_rows(t, r.out, r.in, out.order.data(), words.size(), r.row_bytes);
    return out;
#else
    throw BackendError("sort_by_key on cuda needs cunumpy built with CUDA");
#endif
  }
  // Host memory (host, or the emulated device's arena, sorted in place there).
  detail::emulated_order(on(words));
  SortedWords out{Array<std::uint64_t>(words.shape(), words.backend()),
                  Array<std::int64_t>(words.shape(), words.backend())};
  host_sort_words(words.data(), words.size(), out.words.data(), out.order.data(), rows);
  return out;
}

namespace {
template <typename K>
Array<K> words_to(const Array<std::uint64_t>& words) {
  Array<K> keys(words.shape(), words.backend());
  const std::uint64_t* w = words.data();
  K* k = keys.data();
  const std::uint64_t flip = std::is_signed_v<K> ? (std::uint64_t{1} << 63) : 0;
  CUNUMPY_FOR_ON(on(words), "sort_by_key keys", words.size(), i,
                 k[i] = static_cast<K>(static_cast<std::int64_t>(w[i] ^ flip)););
  return keys;
}
}  // namespace

Array<std::uint64_t> from_words(const Array<std::uint64_t>& words, const Array<std::uint64_t>&) {
  return words;
}
Array<std::int64_t> from_words(const Array<std::uint64_t>& words, const Array<std::int64_t>&) {
  return words_to<std::int64_t>(words);
}
Array<std::uint32_t> from_words(const Array<std::uint64_t>& words, const Array<std::uint32_t>&) {
  return words_to<std::uint32_t>(words);
}
Array<std::int32_t> from_words(const Array<std::uint64_t>& words, const Array<std::int32_t>&) {
  return words_to<std::int32_t>(words);
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
  throw ValueError("segment_sum: key " + std::to_string(key) +
                   " is not below n_segments=" + std::to_string(n_segments) +
                   "; pass n_segments > the largest key (negative keys are dropped)");
}

template <SegmentKey K>
void check_segment_keys(const Array<K>& keys, long long n_segments) {
  const K* k = keys.data();
  const long long top =
      keys.size() == 0 ? -1
                       : static_cast<long long>(parallel_reduce(
                             on(keys), "segment_sum max key", keys.size(), ReduceOp::max,
                             CUNUMPY_LAMBDA(long long i) { return static_cast<long long>(k[i]); }));
  if (top >= n_segments) throw_segment_key(top, n_segments);
}

// Host memory (host or emulated), rows of `width` scalars: add in index order, one pass, keys
// checked on the way.  A run of equal keys is summed in registers that start from the
// segment's current values: the same additions in the same order as adding into out[key]
// one by one.
template <typename S, typename VS, typename K>
void host_segment_sum_rows(const K* k, const VS* v, long long n, long long n_segments,
                           long long width, S* o) {
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
Array<segment_sum_t<V>> segment_sum_impl(const Array<K>& keys, const Array<V>& values,
                                         long long n_segments) {
  using R = segment_sum_t<V>;
  using S = typename Scalar<R>::type;   // the real type that is added
  using VS = typename Scalar<V>::type;  // the real type that is read
  if (keys.ndim() != 1)
    throw ValueError("segment_sum: 1D keys are required, got shape " + keys.shape().str());
  if (values.ndim() < 1 || values.ndim() > 2 || values.shape(0) != keys.size())
    throw ValueError(
        "segment_sum: values of shape (n,) or (n, m) with n = " + std::to_string(keys.size()) +
        " keys are required, got " + values.shape().str());
  if (values.backend() != keys.backend())
    throw TypeError("segment_sum: keys on " + std::string(to_string(keys.backend())) +
                    ", values on " + std::string(to_string(values.backend())) +
                    "; move them to one side first");
  if (n_segments < 0)
    throw ValueError("segment_sum: n_segments must be non-negative, got " +
                     std::to_string(n_segments));
  if (keys.backend() == Backend::cuda) check_segment_keys(keys, n_segments);
  const long long n = keys.size();
  const long long m = values.ndim() == 2 ? values.shape(1) : 1;
  const long long width = m * Scalar<R>::parts;  // scalars per row
  const Shape out_shape = values.ndim() == 2 ? Shape{n_segments, m} : Shape{n_segments};
  const Target t = on(keys);
  Array<R> out = zeros<R>(out_shape, keys.backend());
  S* o = reinterpret_cast<S*>(out.data());
  const VS* v = reinterpret_cast<const VS*>(values.data());
  const K* k = keys.data();

  if (keys.backend() != Backend::cuda) {
    detail::emulated_order(t);
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
  parallel_for(
      t, "segment_sum", n_segments * width, CUNUMPY_LAMBDA(long long t) {
        const long long seg = t / width, col = t % width;
        long long lo = 0, hi = n;  // first position with key >= seg
        while (lo < hi) {
          const long long mid = (lo + hi) / 2;
          if (static_cast<long long>(sk[mid]) < seg)
            lo = mid + 1;
          else
            hi = mid;
        }
        S acc = S(0);
        for (long long p = lo; p < n && static_cast<long long>(sk[p]) == seg; ++p)
          acc += static_cast<S>(v[ord[p] * width + col]);
        o[t] = acc;
      });
  return out;
}

#define CUNUMPY_SEGMENT_SUM(K, V)                                                           \
  template Array<segment_sum_t<V>> segment_sum_impl<K, V>(const Array<K>&, const Array<V>&, \
                                                          long long);
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
