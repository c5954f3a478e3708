// cunumpy/algorithms.hpp: Morton keys, a stable sort_by_key, a deterministic segment_sum,
// prefix sums and stable partitions.
//
//   auto keys = cunumpy::morton_keys(positions, lower, upper, 21);          // (n, 3) -> (n,)
//   uint64 auto [sorted, order, pos, q] = cunumpy::sort_by_key(keys, positions, charges); auto rho
//   = cunumpy::segment_sum(cells, charges, n_cells);               // sum per cell
//
// Every function runs on the backend of its array arguments: host loops (OpenMP), the
// emulated device, or CUDA kernels (CUB's radix sort for sort_by_key).
//
// sort_by_key is stable: equal keys keep their order, so results are reproducible.  The sort
// only looks at the key bits that can be set: CUB is given end_bit from the largest key (a
// Morton key of L levels in d dimensions has at most d * L bits).  The host sort (fewer than
// 2^32 keys per call) starts at the highest bit that differs between keys: one pass on the top
// digit splits the keys into cache-sized buckets, each then sorted by one counting pass on
// about log2(its size) + 2 further bits and an insertion sort of what is left: about two passes
// over memory whatever the key width.  The arrays travel with the keys: their rows are
// scattered to the buckets and gathered within each bucket as it is written out, rather than
// read at random by the order afterwards.  The host sort stages everything in its outputs, so
// it needs no scratch the size of the input (but 4 bytes a key for the rows' positions when an
// array other than the first with 8-byte rows travels); each thread keeps a few hundred KB of
// bucket scratch from one call to the next.
//
// segment_sum's determinism guarantee: out[k] is the sum, in increasing index order, of the
// values whose key is k, starting from zero; the same bits on every run and on every backend
// (the device sorts stably by key and sums each segment sequentially; the host adds in index
// order).  Floating and complex values keep their type; other values are summed as double.
#pragma once

#include <array>
#include <complex>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <cunumpy/array.hpp>

namespace cunumpy {

// Which vector target the host loops of the sort, the Morton keys and the Philox fills run with,
// as text: "avx2 (Highway AVX2)", "portable (why)", ... (cunumpy/host_targets.hpp: the choice,
// CUNUMPY_HOST_SIMD, as cunumpy::host_target()).  The results do not depend on it: the sort's
// order and the generators' bits are the same on every target.  Read once, at the first call.
std::string host_simd();

// Bits per axis: 32 in 2D, 21 in 3D (a key is one uint64).
inline constexpr int MAX_MORTON_LEVELS_2D = 32;
inline constexpr int MAX_MORTON_LEVELS_3D = 21;
// The maximum for `ndim` (2 or 3); ValueError otherwise.
int max_morton_levels(int ndim);

// 2^levels / (upper - lower) per axis.  ValueError for lower == upper or levels out of range.
std::vector<double> morton_scales(std::span<const double> lower, std::span<const double> upper,
                                  int levels);

// Keys of points (n, 2) or (n, 3) float64 in the box [lower, upper) with `levels` bits per
// axis, as uint64 (n,).  A finite point outside the box takes the key of the nearest edge
// cell along each axis; a NaN or infinite coordinate is a ValueError naming the first such
// point and their count (found in the pass that computes the keys: no extra sweep).
Array<std::uint64_t> morton_keys(const Array<double>& positions, std::span<const double> lower,
                                 std::span<const double> upper, int levels);
// Keys from integer cells: (n, 2) or (n, 3) uint64 -> (n,).
Array<std::uint64_t> morton_encode(const Array<std::uint64_t>& cells);
// Integer cells of keys: (n,) -> (n, ndim).
Array<std::uint64_t> morton_decode(const Array<std::uint64_t>& keys, int ndim);

// A periodic grid for periodic_cell_keys: `ndim` axes of cells[a] cells of 1 / inverse_cell_size[a].
struct PeriodicCells {
  int ndim = 3;
  std::array<long long, 3> cells{1, 1, 1};
  std::array<double, 3> inverse_cell_size{1.0, 1.0, 1.0};
};

// The Morton keys of particles' cells on a periodic grid (a particle-in-cell code's re-sort),
// rows [0, n) of SoA position columns (one a used axis, float or double): along axis a the cell
// of s = x_a * inverse_cell_size[a], truncated toward zero and wrapped into [0, cells[a])
// (cunumpy_periodic_cell: a particle just outside the box goes to the cell it will wrap to;
// NaN to cell 0); with `cells` columns (int32, particles stored as a cell and an offset in cell
// units), s = (cell_a + x_a) * inverse_cell_size[a] (give inverse_cell_size 1).  Encoded by
// cunumpy_morton_encode2/3 (1D: the x cell and 0), so the cells must fit 32 (2D) or 21 (3D)
// bits.  The same keys on every backend and host vector target.  ValueError for columns that
// are not one per axis, shorter than n or on another backend.
Array<std::uint64_t> periodic_cell_keys(const PeriodicCells& grid, std::span<const Array<double>> x,
                                        long long n,
                                        std::span<const Array<std::int32_t>> cells = {});
Array<std::uint64_t> periodic_cell_keys(const PeriodicCells& grid, std::span<const Array<float>> x,
                                        long long n,
                                        std::span<const Array<std::int32_t>> cells = {});

// The key types sort_by_key takes.
template <typename K>
concept SortKey = std::is_same_v<K, std::uint64_t> || std::is_same_v<K, std::int64_t> ||
    std::is_same_v<K, std::uint32_t> || std::is_same_v<K, std::int32_t>;

namespace detail {
// Keys as unsigned 64-bit words with the same order (signed keys get their sign bit flipped);
// a uint64 array is returned as it is.
Array<std::uint64_t> radix_words(const Array<std::uint64_t>& keys);
Array<std::uint64_t> radix_words(const Array<std::int64_t>& keys);
Array<std::uint64_t> radix_words(const Array<std::uint32_t>& keys);
Array<std::uint64_t> radix_words(const Array<std::int32_t>& keys);
// An array sorted along with the keys: rows of `row_bytes` bytes read from `in`, written to
// `out` in the keys' sorted order.
struct CarriedRows {
  const void* in;
  void* out;
  std::size_t row_bytes;
};
// The words sorted stably and the permutation that sorts them; the rows of every carried array
// are moved with them (on the words' backend).
struct SortedWords {
  Array<std::uint64_t> words;
  Array<std::int64_t> order;
};
SortedWords stable_sort_words(const Array<std::uint64_t>& words,
                              std::span<const CarriedRows> rows = {});
// Sorted words back to keys of the type of the second argument.
Array<std::uint64_t> from_words(const Array<std::uint64_t>& words,
                                const Array<std::uint64_t>& like);
Array<std::int64_t> from_words(const Array<std::uint64_t>& words, const Array<std::int64_t>& like);
Array<std::uint32_t> from_words(const Array<std::uint64_t>& words,
                                const Array<std::uint32_t>& like);
Array<std::int32_t> from_words(const Array<std::uint64_t>& words, const Array<std::int32_t>& like);
void check_sort_keys(const Shape& shape);
void check_rows(std::string_view what, long long n, const Shape& shape, Backend keys_backend,
                Backend backend);

// The output of an array sorted with keys of n elements on keys_backend (checked first).
template <Element T>
Array<T> sorted_rows_like(const Array<T>& a, long long n, Backend keys_backend) {
  check_rows("sort_by_key", n, a.shape(), keys_backend, a.backend());
  return Array<T>(a.shape(), a.backend());
}
template <Element T>
CarriedRows carried_rows(const Array<T>& in, Array<T>& out) {
  const std::size_t row = in.shape(0) > 0 ? in.nbytes() / static_cast<std::size_t>(in.shape(0)) : 0;
  return {in.data(), out.data(), row};
}
}  // namespace detail

// Stable sort of the 1D keys, applied to every array along axis 0 in one call.  Returns
// (keys[order], order as int64, arrays[order]...).
template <SortKey K, Element... A>
std::tuple<Array<K>, Array<std::int64_t>, Array<A>...> sort_by_key(const Array<K>& keys,
                                                                   const Array<A>&... arrays) {
  detail::check_sort_keys(keys.shape());
  std::tuple<Array<A>...> outs{detail::sorted_rows_like(arrays, keys.size(), keys.backend())...};
  const auto rows = std::apply(
      [&](Array<A>&... out) {
        return std::array<detail::CarriedRows, sizeof...(A)>{detail::carried_rows(arrays, out)...};
      },
      outs);
  detail::SortedWords sorted = detail::stable_sort_words(detail::radix_words(keys), rows);
  return std::tuple_cat(
      std::make_tuple(detail::from_words(sorted.words, keys), std::move(sorted.order)),
      std::move(outs));
}

// The value type segment_sum returns for values of type V.
template <typename V>
using segment_sum_t =
    std::conditional_t<std::is_floating_point_v<V> || is_complex<V>::value, V, double>;

// The key types segment_sum takes.
template <typename K>
concept SegmentKey = std::is_same_v<K, std::int64_t> || std::is_same_v<K, std::int32_t>;

namespace detail {
template <SegmentKey K, Element V>
Array<segment_sum_t<V>> segment_sum_impl(const Array<K>& keys, const Array<V>& values,
                                         long long n_segments);
}

// out[k] = sum of values[i] (rows of an (n, m) array) over keys[i] == k, for k < n_segments;
// negative keys drop their values; a key >= n_segments is a ValueError naming it.
// The value types segment_sum adds: float, double, their complex forms, int32 and int64.
template <typename V>
inline constexpr bool is_segment_value_v =
    std::is_same_v<V, float> || std::is_same_v<V, double> ||
    std::is_same_v<V, std::complex<float>> || std::is_same_v<V, std::complex<double>> ||
    std::is_same_v<V, std::int32_t> || std::is_same_v<V, std::int64_t>;

// The sums of `values` per segment of equal consecutive `keys` (see above).
template <SegmentKey K, Element V>
Array<segment_sum_t<V>> segment_sum(const Array<K>& keys, const Array<V>& values,
                                    long long n_segments) {
  static_assert(
      is_segment_value_v<V>,
      "cunumpy::segment_sum: values must be float, double, complex<float>, complex<double>, "
      "int32 or int64; convert bool and small integer types to int32 first");
  return detail::segment_sum_impl(keys, values, n_segments);
}

// ---- scans and partitions -----------------------------------------------------------------
//
//   auto starts = cunumpy::exclusive_scan(counts);       // counts (n,) -> offsets (n,)
//   auto idx = cunumpy::flatnonzero(flags);              // numpy.flatnonzero
//   auto [order, kept] = cunumpy::stable_partition(flags);
//
// cumsum(a): numpy.cumsum of a 1D array, out[i] = a[0] + ... + a[i], in a's type (numpy widens
// small integers; here int32 stays int32).  exclusive_scan(a): out[0] = 0, out[i] = a[0] + ... +
// a[i-1] (std::exclusive_scan with 0).  Host memory: integers in parallel over fixed chunks
// (exact); floating values in one pass in index order, numpy's additions in numpy's order (the
// same bits as numpy.cumsum).  CUDA: CUB's DeviceScan (floating sums may round otherwise).
//
// flatnonzero(a): the indices (int64, increasing) of a's nonzero elements, a read as flat.
// stable_partition(flags): the indices of the nonzero flags, increasing, then those of the zero
// flags, increasing (std::stable_partition applied to 0, 1, ..., n-1), and how many are nonzero.
// Host: two parallel passes over fixed chunks (count, then write at each chunk's offsets); CUDA:
// flags, an exclusive scan and one scatter.  The count is read back (a reduction's result).

// The element types cumsum and exclusive_scan take.
template <typename T>
concept ScanValue = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> ||
    std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::uint64_t> ||
    std::is_same_v<T, float> || std::is_same_v<T, double>;

// The element types flatnonzero and stable_partition take.
template <typename T>
concept SelectValue = ScanValue<T> || std::is_same_v<T, bool> || std::is_same_v<T, std::uint8_t> ||
    std::is_same_v<T, std::int8_t>;

// A stable partition: `order` holds every index once, the `selected` ones first.
struct Partition {
  Array<std::int64_t> order;
  long long selected = 0;
};

namespace detail {
template <ScanValue T>
Array<T> scan_impl(const Array<T>& a, bool inclusive);
template <Element T>
Array<std::int64_t> flatnonzero_impl(const Array<T>& a);
template <Element T>
Partition stable_partition_impl(const Array<T>& flags);
}  // namespace detail

// Inclusive prefix sums of a 1D array (numpy.cumsum), on a's backend.
template <ScanValue T>
Array<T> cumsum(const Array<T>& a) {
  return detail::scan_impl(a, true);
}

// Exclusive prefix sums of a 1D array (out[0] = 0), on a's backend.
template <ScanValue T>
Array<T> exclusive_scan(const Array<T>& a) {
  return detail::scan_impl(a, false);
}

// The indices of the nonzero elements (numpy.flatnonzero), on a's backend.
template <SelectValue T>
Array<std::int64_t> flatnonzero(const Array<T>& a) {
  return detail::flatnonzero_impl(a);
}

// The indices of the nonzero flags, then of the zero ones, each group increasing.
template <SelectValue T>
Partition stable_partition(const Array<T>& flags) {
  return detail::stable_partition_impl(flags);
}

}  // namespace cunumpy
