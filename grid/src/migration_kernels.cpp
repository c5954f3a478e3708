// The particle migration's loops (internal/migration_kernels.hpp).  Compiled as CUDA when the
// CUDA backend is built, so that they run on the device for device arrays.
#include <cunumpy/internal/migration_kernels.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <cunumpy/parallel.hpp>

namespace cunumpy::detail {

namespace {
template <typename W>
void copy_records(const Target& t, const RecordLayout& L, const std::int64_t* rows, long long first,
                  long long count, char* buffer, bool gather) {
  const RecordLayout layout = L;  // captured by value
  const long long wpr = layout.record_bytes / static_cast<long long>(sizeof(W));
  if (gather)
    CUNUMPY_FOR_ON(
        t, "migration pack", count, j, W* out = reinterpret_cast<W*>(buffer) + j * wpr;
        const long long row = rows[j]; for (int c = 0; c < layout.count; ++c) {
          const long long words = layout.columns[c].row_bytes / static_cast<long long>(sizeof(W));
          const W* src = reinterpret_cast<const W*>(layout.columns[c].data) + row * words;
          W* dst = out + layout.columns[c].offset / static_cast<long long>(sizeof(W));
          for (long long k = 0; k < words; ++k) dst[k] = src[k];
        });
  else
    CUNUMPY_FOR_ON(
        t, "migration unpack", count, j, const W* in = reinterpret_cast<const W*>(buffer) + j * wpr;
        const long long row = rows != nullptr ? rows[j] : first + j;
        for (int c = 0; c < layout.count; ++c) {
          const long long words = layout.columns[c].row_bytes / static_cast<long long>(sizeof(W));
          W* dst = reinterpret_cast<W*>(layout.columns[c].data) + row * words;
          const W* src = in + layout.columns[c].offset / static_cast<long long>(sizeof(W));
          for (long long k = 0; k < words; ++k) dst[k] = src[k];
        });
}

template <typename W>
void move_words(const Target& t, const RecordLayout& L, const std::int64_t* src, long long first,
                const std::int64_t* dst, long long count) {
  const RecordLayout layout = L;
  CUNUMPY_FOR_ON(
      t, "migration fill holes", count, j, const long long from = first + src[j];
      const long long to = dst[j]; for (int c = 0; c < layout.count; ++c) {
        const long long words = layout.columns[c].row_bytes / static_cast<long long>(sizeof(W));
        W* col = reinterpret_cast<W*>(layout.columns[c].data);
        for (long long k = 0; k < words; ++k) col[to * words + k] = col[from * words + k];
      });
}
}  // namespace

template <typename R>
long long assign_destinations(Backend backend, const MigrationGeometry& geometry,
                              R* const* positions, long long n, std::uint32_t* keys) {
  const Target t = on(backend);
  const MigrationGeometry g = geometry;
  const Positions<R> pos{
      {positions[0], g.ndim > 1 ? positions[1] : nullptr, g.ndim > 2 ? positions[2] : nullptr}};
  return CUNUMPY_REDUCE_ON(t, "migration destinations", n, ReduceOp::sum, i,
                           keys[i] = destination(g, pos, i);
                           return keys[i] == 0u ? 0LL : 1LL;);
}

template long long assign_destinations<double>(Backend, const MigrationGeometry&, double* const*,
                                               long long, std::uint32_t*);
template long long assign_destinations<float>(Backend, const MigrationGeometry&, float* const*,
                                              long long, std::uint32_t*);
template long long assign_destinations<std::int32_t>(Backend, const MigrationGeometry&,
                                                     std::int32_t* const*, long long,
                                                     std::uint32_t*);

void key_starts(Backend backend, const std::uint32_t* sorted, long long n, int nkeys,
                long long* starts) {
  const Target t = on(backend);
  CUNUMPY_FOR_ON(t, "migration starts", nkeys, k, starts[k] = -1;);
  CUNUMPY_FOR_ON(t, "migration segments", n, i,
                 if (i == 0 || sorted[i] != sorted[i - 1]) starts[sorted[i]] = i;);
}

void keys_of_rows(Backend backend, const std::uint32_t* keys, const std::int64_t* rows, long long n,
                  std::uint32_t* out) {
  CUNUMPY_FOR_ON(on(backend), "migration leaver keys", n, j, out[j] = keys[rows[j]];);
}

void rows_by_order(Backend backend, const std::int64_t* rows, const std::int64_t* order,
                   long long n, std::int64_t* out) {
  CUNUMPY_FOR_ON(on(backend), "migration send order", n, j, out[j] = rows[order[j]];);
}

long long rows_below(Backend backend, const std::int64_t* rows, long long n, long long bound) {
  if (n == 0) return 0;
  return CUNUMPY_REDUCE_ON(on(backend), "migration holes below", n, ReduceOp::sum, j,
                           return rows[j] < bound ? 1LL : 0LL;);
}

void rows_not_listed(Backend backend, const std::int64_t* rows, long long count, long long first,
                     long long n, std::uint8_t* flags) {
  const Target t = on(backend);
  CUNUMPY_FOR_ON(t, "migration tail rows", n, j, flags[j] = 1;);
  CUNUMPY_FOR_ON(t, "migration tail holes", count, j,
                 if (rows[j] >= first) flags[rows[j] - first] = 0;);
}

void gather_records(Backend backend, const RecordLayout& layout, const std::int64_t* rows,
                    long long count, char* out) {
  if (count == 0) return;
  const Target t = on(backend);
  if (layout.word == 8)
    copy_records<std::uint64_t>(t, layout, rows, 0, count, out, true);
  else if (layout.word == 4)
    copy_records<std::uint32_t>(t, layout, rows, 0, count, out, true);
  else
    copy_records<std::uint8_t>(t, layout, rows, 0, count, out, true);
}

void scatter_records(Backend backend, const RecordLayout& layout, const std::int64_t* rows,
                     long long first_row, long long count, const char* in) {
  if (count == 0) return;
  const Target t = on(backend);
  char* buffer = const_cast<char*>(in);
  if (layout.word == 8)
    copy_records<std::uint64_t>(t, layout, rows, first_row, count, buffer, false);
  else if (layout.word == 4)
    copy_records<std::uint32_t>(t, layout, rows, first_row, count, buffer, false);
  else
    copy_records<std::uint8_t>(t, layout, rows, first_row, count, buffer, false);
}

void move_rows(Backend backend, const RecordLayout& layout, const std::int64_t* src,
               long long first_src, const std::int64_t* dst, long long count) {
  if (count == 0) return;
  const Target t = on(backend);
  if (layout.word == 8)
    move_words<std::uint64_t>(t, layout, src, first_src, dst, count);
  else if (layout.word == 4)
    move_words<std::uint32_t>(t, layout, src, first_src, dst, count);
  else
    move_words<std::uint8_t>(t, layout, src, first_src, dst, count);
}

}  // namespace cunumpy::detail
