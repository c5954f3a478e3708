// cunumpy/algorithms.hpp: Morton keys, a stable sort_by_key, a deterministic segment_sum.
//
//   auto keys = cunumpy::morton_keys(positions, lower, upper, 21);          // (n, 3) -> (n,) uint64
//   auto [sorted, order, pos, q] = cunumpy::sort_by_key(keys, positions, charges);
//   auto rho = cunumpy::segment_sum(cells, charges, n_cells);               // sum per cell
//
// Every function runs on the backend of its array arguments: host loops (OpenMP), the
// emulated device, or CUDA kernels (CUB's radix sort for sort_by_key).
//
// sort_by_key is stable: equal keys keep their order, so results are reproducible.  The sort
// only looks at the key bits that can be set: CUB is given end_bit from the largest key (a
// Morton key of L levels in d dimensions has at most d * L bits).  The host sort (fewer than
// 2^32 keys per call) starts at the highest bit that differs between keys: one pass on the top
// digit splits the keys into cache-sized buckets, each then sorted by one counting pass on
// about log2(its size) further bits and an insertion sort of what is left: about two passes
// over memory whatever the key width.  For data larger than the caches the arrays are then
// moved bucket by bucket rather than by one random read per row.
//
// segment_sum's determinism guarantee: out[k] is the sum, in increasing index order, of the
// values whose key is k, starting from zero; the same bits on every run and on every backend
// (the device sorts stably by key and sums each segment sequentially; the host adds in index
// order).  Floating and complex values keep their type; other values are summed as double.
#pragma once

#include <complex>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <cunumpy/array.hpp>

namespace cunumpy {

// Bits per axis: 32 in 2D, 21 in 3D (a key is one uint64).
inline constexpr int MAX_MORTON_LEVELS_2D = 32;
inline constexpr int MAX_MORTON_LEVELS_3D = 21;
// The maximum for `ndim` (2 or 3); ValueError otherwise.
int max_morton_levels(int ndim);

// 2^levels / (upper - lower) per axis.  ValueError for lower == upper or levels out of range.
std::vector<double> morton_scales(std::span<const double> lower, std::span<const double> upper, int levels);

// Keys of points (n, 2) or (n, 3) float64 in the box [lower, upper) with `levels` bits per
// axis, as uint64 (n,).
Array<std::uint64_t> morton_keys(const Array<double>& positions, std::span<const double> lower,
                                 std::span<const double> upper, int levels);
// Keys from integer cells: (n, 2) or (n, 3) uint64 -> (n,).
Array<std::uint64_t> morton_encode(const Array<std::uint64_t>& cells);
// Integer cells of keys: (n,) -> (n, ndim).
Array<std::uint64_t> morton_decode(const Array<std::uint64_t>& keys, int ndim);

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
// The words sorted stably, and the permutation that sorts them.
// A host sort's record of how it moved the pairs (its buckets), which lets the arrays be
// permuted without one random read per row (algorithms.cpp).
struct HostPermutation;
struct SortedWords {
  Array<std::uint64_t> words;
  Array<std::int64_t> order;
  std::shared_ptr<const HostPermutation> plan;  // host sorts of data larger than the caches; else null
};
SortedWords stable_sort_words(const Array<std::uint64_t>& words);
// Sorted words back to keys of the type of the second argument.
Array<std::uint64_t> from_words(const Array<std::uint64_t>& words, const Array<std::uint64_t>& like);
Array<std::int64_t> from_words(const Array<std::uint64_t>& words, const Array<std::int64_t>& like);
Array<std::uint32_t> from_words(const Array<std::uint64_t>& words, const Array<std::uint32_t>& like);
Array<std::int32_t> from_words(const Array<std::uint64_t>& words, const Array<std::int32_t>& like);
// out[i, ...] = in[order[i], ...] for rows of `row_bytes` bytes, on `backend`.
void gather_rows(void* out, const void* in, const SortedWords& sorted, std::size_t row_bytes, Backend backend);
void check_rows(std::string_view what, long long n, const Shape& shape, Backend keys_backend, Backend backend);

template <Element T>
Array<T> take_rows(const Array<T>& a, const SortedWords& sorted, Backend keys_backend) {
  check_rows("sort_by_key", sorted.order.size(), a.shape(), keys_backend, a.backend());
  Array<T> out(a.shape(), a.backend());
  const std::size_t row = a.shape(0) > 0 ? a.nbytes() / static_cast<std::size_t>(a.shape(0)) : 0;
  gather_rows(out.data(), a.data(), sorted, row, a.backend());
  return out;
}
}  // namespace detail

// Stable sort of the 1D keys, applied to every array along axis 0 in one call.  Returns
// (keys[order], order as int64, arrays[order]...).
template <SortKey K, Element... A>
std::tuple<Array<K>, Array<std::int64_t>, Array<A>...> sort_by_key(const Array<K>& keys, const Array<A>&... arrays) {
  detail::SortedWords sorted = detail::stable_sort_words(detail::radix_words(keys));
  return {detail::from_words(sorted.words, keys), sorted.order, detail::take_rows(arrays, sorted, keys.backend())...};
}

// The value type segment_sum returns for values of type V.
template <typename V>
using segment_sum_t = std::conditional_t<std::is_floating_point_v<V> || is_complex<V>::value, V, double>;

template <typename K>
concept SegmentKey = std::is_same_v<K, std::int64_t> || std::is_same_v<K, std::int32_t>;

namespace detail {
template <SegmentKey K, Element V>
Array<segment_sum_t<V>> segment_sum_impl(const Array<K>& keys, const Array<V>& values, long long n_segments);
}

// out[k] = sum of values[i] (rows of an (n, m) array) over keys[i] == k, for k < n_segments;
// negative keys drop their values; a key >= n_segments is a ValueError naming it.
template <SegmentKey K, Element V>
Array<segment_sum_t<V>> segment_sum(const Array<K>& keys, const Array<V>& values, long long n_segments) {
  return detail::segment_sum_impl(keys, values, n_segments);
}

}  // namespace cunumpy
