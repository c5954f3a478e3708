// The particle migration's search for leavers in host memory (internal/migration_kernels.hpp):
// a plain C++ file, so the host compiler vectorises its test.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include <cunumpy/internal/migration_kernels.hpp>

namespace cunumpy::detail {

namespace {
// Whether a position of rows [begin, end) is outside [lo, hi] along an axis, infinite or NaN.
// Written so that the compiler vectorises it with the baseline instruction set: the largest
// distance outside the interval (a max reduction: positive when some position is out; IEEE
// subtraction keeps the sign exact) and a sum of position * 0 (NaN when a position is NaN or
// infinite).
// In the positions' own type (float positions against the bounds rounded inwards: a float
// position that passes lies within the double bounds; cell indices against the cells the
// bounds lie in).
template <int D, typename R>
bool any_outside(const Positions<R>& pos, const double* lo_d, const double* hi_d, long long begin,
                 long long end) {
  R lo[3], hi[3];
  for (int a = 0; a < D; ++a) {
    if constexpr (std::is_integral_v<R>) {
      // Cell indices against the cells the bounds lie in: the stay box in the cells' geometry
      // is [own_begin + margin, own_end - margin], so the owned cells own_begin .. own_end - 1.
      lo[a] = static_cast<R>(std::floor(lo_d[a]));
      hi[a] = static_cast<R>(std::floor(hi_d[a]));
    } else {
      lo[a] = static_cast<R>(lo_d[a]);
      if (static_cast<double>(lo[a]) < lo_d[a]) lo[a] = std::nextafter(lo[a], R(1e30));
      hi[a] = static_cast<R>(hi_d[a]);
      if (static_cast<double>(hi[a]) > hi_d[a]) hi[a] = std::nextafter(hi[a], R(-1e30));
    }
  }
  const R* __restrict x = pos.p[0];
  const R* __restrict y = pos.p[D > 1 ? 1 : 0];
  const R* __restrict z = pos.p[D > 2 ? 2 : 0];
  // Cell indices compared in 64 bits: a wild int32 index cannot overflow the distances.
  using W = std::conditional_t<std::is_integral_v<R>, long long, R>;
  const W lx = lo[0], hx = hi[0];
  const W ly = lo[D > 1 ? 1 : 0], hy = hi[D > 1 ? 1 : 0];
  const W lz = lo[D > 2 ? 2 : 0], hz = hi[D > 2 ? 2 : 0];
  W worst = -1, poison = 0;
#if defined(_OPENMP)
#pragma omp simd reduction(max : worst) reduction(+ : poison)
#endif
  for (long long i = begin; i < end; ++i) {
    const W xi = x[i];
    W w = std::max(lx - xi, xi - hx);
    poison += xi * W(0);
    if constexpr (D > 1) {
      const W yi = y[i];
      w = std::max(w, std::max(ly - yi, yi - hy));
      poison += yi * W(0);
    }
    if constexpr (D > 2) {
      const W zi = z[i];
      w = std::max(w, std::max(lz - zi, zi - hz));
      poison += zi * W(0);
    }
    worst = std::max(worst, w);
  }
  return !(worst <= W(0) && poison == W(0));
}

// Host memory, D axes: the common case (a particle well inside this rank's cells) found by a
// branch-free, vectorisable test against the rank's block shrunk by a millionth of a cell on
// each side (far more than the rounding of the cell computation, so a particle that passes is
// in an owned cell whatever the rounding); in a chunk where some particle fails it, the same test
// on its blocks of 64 rows; the rows of the blocks that fail it (near the block's faces, left,
// to wrap, or bad) go one by one through destination(), the exact rule, into the chunk's list.  The
// pass writes nothing for the particles that stay.
template <int D, typename R>
long long host_leavers(const MigrationGeometry& g, const Positions<R>& pos, long long n,
                       std::vector<std::int64_t>& rows, std::vector<std::uint32_t>& keys) {
  constexpr long long kChunk = 4096, kBlock = 64;
  const long long chunks = (n + kChunk - 1) / kChunk;
  double lo[3], hi[3];
  stay_box(g, lo, hi);
  std::vector<std::vector<std::pair<std::int64_t, std::uint32_t>>> found(
      static_cast<std::size_t>(chunks));
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (chunks > 1)
#endif
  for (long long ch = 0; ch < chunks; ++ch) {
    const long long begin = ch * kChunk, end = std::min(n, begin + kChunk);
    if (!any_outside<D, R>(pos, lo, hi, begin, end)) continue;
    auto& list = found[static_cast<std::size_t>(ch)];
    // Blocks of the chunk that the same test passes hold no leaver either: the exact rule runs
    // on the rows of the others alone.
    for (long long b = begin; b < end; b += kBlock) {
      const long long e = std::min(end, b + kBlock);
      if (!any_outside<D, R>(pos, lo, hi, b, e)) continue;
      for (long long i = b; i < e; ++i) {
        const std::uint32_t key = destination(g, pos, i);  // 0 for a particle inside
        if (key != 0u) list.emplace_back(i, key);
      }
    }
  }
  rows.clear();
  keys.clear();
  for (const auto& list : found)
    for (const auto& [row, key] : list) {
      rows.push_back(row);
      keys.push_back(key);
    }
  return static_cast<long long>(rows.size());
}
}  // namespace

void stay_box(const MigrationGeometry& g, double* lo, double* hi) {
  for (int a = 0; a < g.ndim; ++a) {
    const double margin = 1e-6 / g.scale[a];
    lo[a] = g.lower[a] + static_cast<double>(g.own_begin[a]) / g.scale[a] + margin;
    hi[a] = g.lower[a] + static_cast<double>(g.own_end[a]) / g.scale[a] - margin;
  }
}

template <typename R>
void leavers_among(const MigrationGeometry& g, R* const* positions,
                   std::span<const std::int64_t> candidates, std::vector<std::int64_t>& rows,
                   std::vector<std::uint32_t>& keys) {
  const Positions<R> pos{
      {positions[0], g.ndim > 1 ? positions[1] : nullptr, g.ndim > 2 ? positions[2] : nullptr}};
  rows.clear();
  keys.clear();
  for (const std::int64_t row : candidates) {
    const std::uint32_t key = destination(g, pos, row);
    if (key != 0u) {
      rows.push_back(row);
      keys.push_back(key);
    }
  }
}

template <typename R>
bool find_leavers_on_host(Backend backend, const MigrationGeometry& g, R* const* positions,
                          long long n, std::vector<std::int64_t>& rows,
                          std::vector<std::uint32_t>& keys) {
  if (backend != Backend::host) return false;  // the emulated device runs the device path
  const Positions<R> pos{
      {positions[0], g.ndim > 1 ? positions[1] : nullptr, g.ndim > 2 ? positions[2] : nullptr}};
  if (g.ndim == 1)
    host_leavers<1, R>(g, pos, n, rows, keys);
  else if (g.ndim == 2)
    host_leavers<2, R>(g, pos, n, rows, keys);
  else
    host_leavers<3, R>(g, pos, n, rows, keys);
  return true;
}

#define CUNUMPY_MIGRATION_HOST(R)                                                                \
  template void leavers_among<R>(const MigrationGeometry&, R* const*,                            \
                                 std::span<const std::int64_t>, std::vector<std::int64_t>&,      \
                                 std::vector<std::uint32_t>&);                                   \
  template bool find_leavers_on_host<R>(Backend, const MigrationGeometry&, R* const*, long long, \
                                        std::vector<std::int64_t>&, std::vector<std::uint32_t>&);
CUNUMPY_MIGRATION_HOST(double)
CUNUMPY_MIGRATION_HOST(float)
CUNUMPY_MIGRATION_HOST(std::int32_t)
#undef CUNUMPY_MIGRATION_HOST

}  // namespace cunumpy::detail
