// The particle migration's loops (internal/migration_kernels.hpp).  Compiled as CUDA when the
// CUDA backend is built, so that they run on the device for device arrays.
#include <cunumpy/internal/migration_kernels.hpp>

#include <cmath>

#include <cunumpy/parallel.hpp>

namespace cunumpy::detail {

namespace {
struct Positions {
  double* p[3];
};

template <typename W>
void copy_records(const Target& t, const RecordLayout& L, const std::int64_t* order,
                  long long first, long long count, char* buffer, bool gather) {
  const RecordLayout layout = L;  // captured by value
  const long long wpr = layout.record_bytes / static_cast<long long>(sizeof(W));
  if (gather)
    CUNUMPY_FOR_ON(
        t, "migration pack", count, j, W* out = reinterpret_cast<W*>(buffer) + j * wpr;
        const long long row = order[first + j]; for (int c = 0; c < layout.count; ++c) {
          const long long words = layout.columns[c].row_bytes / static_cast<long long>(sizeof(W));
          const W* src = reinterpret_cast<const W*>(layout.columns[c].data) + row * words;
          W* dst = out + layout.columns[c].offset / static_cast<long long>(sizeof(W));
          for (long long k = 0; k < words; ++k) dst[k] = src[k];
        });
  else
    CUNUMPY_FOR_ON(
        t, "migration unpack", count, j, const W* in = reinterpret_cast<const W*>(buffer) + j * wpr;
        const long long row = first + j; for (int c = 0; c < layout.count; ++c) {
          const long long words = layout.columns[c].row_bytes / static_cast<long long>(sizeof(W));
          W* dst = reinterpret_cast<W*>(layout.columns[c].data) + row * words;
          const W* src = in + layout.columns[c].offset / static_cast<long long>(sizeof(W));
          for (long long k = 0; k < words; ++k) dst[k] = src[k];
        });
}

template <typename W>
void rows_by_order(const Target& t, const char* src, char* dst, long long row_bytes,
                   const std::int64_t* order, long long count) {
  const long long words = row_bytes / static_cast<long long>(sizeof(W));
  const W* s = reinterpret_cast<const W*>(src);
  W* d = reinterpret_cast<W*>(dst);
  CUNUMPY_FOR_ON(t, "migration compact", count, j, const long long row = order[j];
                 for (long long k = 0; k < words; ++k) d[j * words + k] = s[row * words + k];);
}
}  // namespace

long long assign_destinations(Backend backend, const MigrationGeometry& geometry,
                              double* const* positions, long long n, std::uint32_t* keys) {
  const Target t = on(backend);
  const MigrationGeometry g = geometry;
  Positions pos{
      {positions[0], g.ndim > 1 ? positions[1] : nullptr, g.ndim > 2 ? positions[2] : nullptr}};
  // The common case, a particle still in this rank's cells, costs a multiply and two compares
  // per axis; the owner's coordinates (integer divisions) only for those that left.
  return CUNUMPY_REDUCE_ON(
      t, "migration destinations", n, ReduceOp::sum, i, bool bad = false; bool inside = true;
      long long cell[3] = {0, 0, 0}; for (int a = 0; a < g.ndim; ++a) {
        double x = pos.p[a][i] - g.lower[a];
        const double len = g.length[a];
        if (g.periodic[a] && !(x >= 0.0 && x < len)) {
          x -= len * floor(x / len);
          if (x >= len) x -= len;
          if (x < 0.0) x = 0.0;
          pos.p[a][i] = g.lower[a] + x;
        }
        // Inside is decided on the position (a bounded axis: lower <= p < upper; a periodic
        // one: wrapped above), never on the scaled offset, which rounds up to `cells` just
        // below the upper edge; then the cell is clamped.  NaN fails both tests.
        const bool inside_box =
            g.periodic[a] ? x >= 0.0 : (pos.p[a][i] >= g.lower[a] && pos.p[a][i] < g.upper[a]);
        if (!inside_box) {
          bad = true;
          continue;
        }
        const long long n_a = g.cells[a];
        long long c = static_cast<long long>(x * g.scale[a]);
        if (c >= n_a) c = n_a - 1;
        cell[a] = c;
        inside = inside && c >= g.own_begin[a] && c < g.own_end[a];
      } std::uint32_t key = 0u;
      if (bad) key = static_cast<std::uint32_t>(g.ranks + 1); else if (!inside) {
        // The part holding the cell (split_range's parts): the largest c with n c / P <= cell.
        long long rank = 0;
        for (int a = 0; a < g.ndim; ++a)
          rank = rank * g.dims[a] +
                 (static_cast<long long>(g.dims[a]) * (cell[a] + 1) - 1) / g.cells[a];
        key = rank == g.me ? 0u : static_cast<std::uint32_t>(rank + 1);
      } keys[i] = key;
      return key == 0u ? 0LL : 1LL;);
}

void key_starts(Backend backend, const std::uint32_t* sorted, long long first, long long n,
                int nkeys, long long* starts) {
  const Target t = on(backend);
  CUNUMPY_FOR_ON(t, "migration starts", nkeys, k, starts[k] = -1;);
  CUNUMPY_FOR_ON(t, "migration segments", n - first, j, const long long i = first + j;
                 if (i == first || sorted[i] != sorted[i - 1]) starts[sorted[i]] = i;);
}

void gather_records(Backend backend, const RecordLayout& layout, const std::int64_t* order,
                    long long first, long long count, char* out) {
  if (count == 0) return;
  const Target t = on(backend);
  if (layout.word == 8)
    copy_records<std::uint64_t>(t, layout, order, first, count, out, true);
  else if (layout.word == 4)
    copy_records<std::uint32_t>(t, layout, order, first, count, out, true);
  else
    copy_records<std::uint8_t>(t, layout, order, first, count, out, true);
}

void scatter_records(Backend backend, const RecordLayout& layout, long long first_row,
                     long long count, const char* in) {
  if (count == 0) return;
  const Target t = on(backend);
  char* buffer = const_cast<char*>(in);
  if (layout.word == 8)
    copy_records<std::uint64_t>(t, layout, nullptr, first_row, count, buffer, false);
  else if (layout.word == 4)
    copy_records<std::uint32_t>(t, layout, nullptr, first_row, count, buffer, false);
  else
    copy_records<std::uint8_t>(t, layout, nullptr, first_row, count, buffer, false);
}

void gather_rows(Backend backend, const char* src, char* dst, long long row_bytes,
                 const std::int64_t* order, long long count, int word) {
  if (count == 0) return;
  const Target t = on(backend);
  if (word == 8)
    rows_by_order<std::uint64_t>(t, src, dst, row_bytes, order, count);
  else if (word == 4)
    rows_by_order<std::uint32_t>(t, src, dst, row_bytes, order, count);
  else
    rows_by_order<std::uint8_t>(t, src, dst, row_bytes, order, count);
}

}  // namespace cunumpy::detail
