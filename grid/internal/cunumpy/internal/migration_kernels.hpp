// The particle migration's loops, on the arrays' own backend (migration.hpp).  Internal.
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include <cmath>

#include <cunumpy/backend.hpp>
#include <cunumpy/config.cuh>

namespace cunumpy::detail {

struct MigrationGeometry {
  int ndim = 1, ranks = 1, me = 0;
  long long cells[3] = {1, 1, 1};
  int dims[3] = {1, 1, 1};
  bool periodic[3] = {true, true, true};
  double lower[3] = {0, 0, 0}, upper[3] = {1, 1, 1}, length[3] = {1, 1, 1};
  double scale[3] = {1, 1, 1};  // cells / length: a position's cell is floor((x - lower) * scale)
  long long own_begin[3] = {0, 0, 0}, own_end[3] = {1, 1, 1};  // this rank's cells
};

// A position along a periodic axis brought into [lower, upper) (NaN stays NaN); upper itself,
// and a sum that rounds up to it, is lower.
CUNUMPY_HD inline double wrap_position(double p, double lower, double upper, double length) {
  if (p >= lower && p < upper) return p;
  double x = p - lower;
  x -= length * floor(x / length);
  const double w = lower + x;
  return w >= lower && w < upper ? w : (w == w ? lower : w);
}

// The cell of a position inside [lower, upper): decided on the position, then the cell
// clamped (the scaled offset rounds up to `cells` just below the upper edge).
CUNUMPY_HD inline long long cell_of(double p, double lower, double scale, long long cells) {
  const long long c = static_cast<long long>((p - lower) * scale);
  return c < cells ? c : cells - 1;
}

// The geometry of positions given as global cell indices (int32 positions): the box is
// [0, cells) along each axis, one unit a cell.
inline MigrationGeometry in_cells(MigrationGeometry g) {
  for (int a = 0; a < g.ndim; ++a) {
    g.lower[a] = 0.0;
    g.upper[a] = g.length[a] = static_cast<double>(g.cells[a]);
    g.scale[a] = 1.0;
  }
  return g;
}

// A wrapped position as the particle arrays store it (R: double, float, or an int32 cell
// index, which wraps exactly), kept in [lower, upper): a float that rounds up to the upper edge
// takes the float below it.
template <typename R>
CUNUMPY_HD inline double stored_position(double p, double lower, double upper) {
  if constexpr (sizeof(R) == sizeof(double) || std::is_integral_v<R>) {
    return p;
  } else {
    R r = static_cast<R>(p);
    if (static_cast<double>(r) >= upper) r = nextafterf(r, -3.0e38f);
    if (static_cast<double>(r) < lower) r = nextafterf(r, 3.0e38f);
    return static_cast<double>(r);
  }
}

// The particles' positions, one array per axis (double or float; or int32 global cell indices,
// with the geometry in_cells()).
template <typename R>
struct Positions {
  R* p[3];
};

// The destination of particle i (see assign_destinations), wrapping its periodic positions
// (decided on the wrapped position as stored).
template <typename R>
CUNUMPY_HD inline std::uint32_t destination(const MigrationGeometry& g, const Positions<R>& pos,
                                            long long i) {
  bool bad = false;
  bool inside = true;
  long long cell[3] = {0, 0, 0};
  for (int a = 0; a < g.ndim; ++a) {
    double p = pos.p[a][i];
    if (g.periodic[a] && !(p >= g.lower[a] && p < g.upper[a])) {
      p = stored_position<R>(wrap_position(p, g.lower[a], g.upper[a], g.length[a]), g.lower[a],
                             g.upper[a]);
      pos.p[a][i] = static_cast<R>(p);
    }
    // Inside is decided on the position (NaN fails), then the cell clamped.
    if (!(p >= g.lower[a] && p < g.upper[a])) {
      bad = true;
      continue;
    }
    cell[a] = cell_of(p, g.lower[a], g.scale[a], g.cells[a]);
    inside = inside && cell[a] >= g.own_begin[a] && cell[a] < g.own_end[a];
  }
  if (bad) return static_cast<std::uint32_t>(g.ranks + 1);
  if (inside) return 0u;
  // The part holding the cell (split_range's parts): the largest c with n c / P <= cell.
  long long rank = 0;
  for (int a = 0; a < g.ndim; ++a)
    rank = rank * g.dims[a] + (static_cast<long long>(g.dims[a]) * (cell[a] + 1) - 1) / g.cells[a];
  return rank == g.me ? 0u : static_cast<std::uint32_t>(rank + 1);
}

// keys[i]: 0 when particle i stays, 1 + r when it goes to rank r, ranks + 1 when it is outside
// the box along a bounded axis (or at a NaN position).  Periodic axes wrap the positions into
// the box first.  Returns how many keys are not 0.
// R: the positions' type (double, float, or int32 cells with in_cells(g); instantiated for
// the three).
template <typename R>
long long assign_destinations(Backend backend, const MigrationGeometry& g, R* const* positions,
                              long long n, std::uint32_t* keys);

// Host arrays: the rows of the particles that do not stay (increasing) and their keys as
// above, found in one pass that writes nothing for those that stay; returns false (and does
// nothing) for device arrays (the emulated device's included: it runs the device path, keys
// and flatnonzero, as CUDA does).
template <typename R>
bool find_leavers_on_host(Backend backend, const MigrationGeometry& g, R* const* positions,
                          long long n, std::vector<std::int64_t>& rows,
                          std::vector<std::uint32_t>& keys);

// The rank's block as positions, shrunk by a millionth of a cell on each side: a particle in
// it (along every axis) is in an owned cell whatever the rounding of the cell's computation.
void stay_box(const MigrationGeometry& g, double* lo, double* hi);

// Host arrays: the leavers among the candidate rows (increasing), as find_leavers_on_host.
template <typename R>
void leavers_among(const MigrationGeometry& g, R* const* positions,
                   std::span<const std::int64_t> candidates, std::vector<std::int64_t>& rows,
                   std::vector<std::uint32_t>& keys);

// starts[k] (k < nkeys): the first index in [0, n) of key k in the sorted keys, or -1.
void key_starts(Backend backend, const std::uint32_t* sorted, long long n, int nkeys,
                long long* starts);

// out[j] = keys[rows[j]] and rows_out[j] = rows[order[j]] (the leavers' keys, and their rows
// in the order of their sorted keys), j < n.
void keys_of_rows(Backend backend, const std::uint32_t* keys, const std::int64_t* rows, long long n,
                  std::uint32_t* out);
void rows_by_order(Backend backend, const std::int64_t* rows, const std::int64_t* order,
                   long long n, std::int64_t* out);

// How many of the increasing `rows` (n of them) are below `bound`.
long long rows_below(Backend backend, const std::int64_t* rows, long long n, long long bound);

// flags[j] = 1 for j < n, then flags[rows[j] - first] = 0 for the rows (count of them) at or
// above `first`: the rows of [first, first + n) that are not in `rows`.
void rows_not_listed(Backend backend, const std::int64_t* rows, long long count, long long first,
                     long long n, std::uint8_t* flags);

// The rows of several arrays as one record per particle: column c's row at `offset` bytes.
inline constexpr int max_particle_columns = 16;
struct RecordLayout {
  struct Column {
    char* data;
    long long row_bytes, offset;
  } columns[max_particle_columns];
  int count = 0;
  long long record_bytes = 0;
  int word = 1;  // the copies' word size: 8, 4 or 1 bytes
};

// out[j] = the record of row rows[j], j < count.
void gather_records(Backend backend, const RecordLayout& layout, const std::int64_t* rows,
                    long long count, char* out);
// Row rows[j] (or first_row + j when rows is null) of each column <- record j of `in`.
void scatter_records(Backend backend, const RecordLayout& layout, const std::int64_t* rows,
                     long long first_row, long long count, const char* in);
// Row dst[j] of each column <- row first_src + src[j], j < count (the rows are distinct).
void move_rows(Backend backend, const RecordLayout& layout, const std::int64_t* src,
               long long first_src, const std::int64_t* dst, long long count);

}  // namespace cunumpy::detail
