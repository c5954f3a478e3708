// The tiled particle step's kernels (tiled_step.cpp): the particles sorted by tile (a patch of
// T cells per axis of the rank's block), one thread block per tile.
//
//   tiled_push   E of the tile's region (its cells and H nodes around) into shared memory; each
//                particle's gather at x_n, push and move, then its deposit at x_{n+1} into the
//                region's density in shared memory (a particle whose stencil leaves the region:
//                global atomics into `far`); the particle's new tile in `dest`; the region's
//                density stored whole into the tile's slot; the tile's energy and momentum sums.
//   tiled_sum    each node of the guarded density: the sum of the slots of the (at most 2 per
//                axis) tiles whose region holds it, in a fixed order, plus `far` (then zeroed):
//                no atomic.
//   tiled_count  per tile, how many of its particles go to each neighbouring tile (3^dim
//                directions) or farther (shared-memory counters).
//   tiled_bases  per tile, its new count and, per direction, where the arrivals from that
//                direction start among its rows.
//   tiled_order  one warp per tile: each particle's new row (its new tile's start, the
//                direction's base, its rank among the tile's particles of that direction:
//                stable), as the order ParticleSet::permute takes.
//
// The region of tile (t0, t1, t2): local nodes [t_a T_a - H, t_a T_a + T_a + H] per axis, R_a =
// T_a + 2 H + 1 nodes, V = R_0 R_1 R_2 (1 past the dimension).  Local node u along an axis sits
// at u + guard of the guarded arrays (grid.hpp); H <= guard.
#include "pic_kernels.hpp"

namespace tiled {

// The geometry every kernel takes, from scalar arguments.
struct Geometry {
  int dim, order, h;
  long long tile[3], tiles[3], region[3], volume, guard, row, col, origin[3];
  double inv_d[3];
  CUNUMPY_HD_INLINE long long tile_count() const { return tiles[0] * tiles[1] * tiles[2]; }
  // The directions to a tile's neighbours, 3^dim (offsets -1, 0, +1 per axis).
  CUNUMPY_HD_INLINE int directions() const { return dim == 1 ? 3 : dim == 2 ? 9 : 27; }
  // Tile index t as coordinates.
  CUNUMPY_HD_INLINE void coordinates(long long t, long long (&c)[3]) const {
    c[2] = t % tiles[2];
    c[1] = (t / tiles[2]) % tiles[1];
    c[0] = t / (tiles[2] * tiles[1]);
  }
  // The guarded array's index of local node (u0, u1, u2).
  CUNUMPY_HD_INLINE long long guarded(long long u0, long long u1, long long u2) const {
    if (dim == 1) return u0 + guard;
    if (dim == 2) return (u0 + guard) * row + (u1 + guard);
    return (u0 + guard) * row + (u1 + guard) * col + (u2 + guard);
  }
  // The tile of a position (local cells clamped into the block).
  CUNUMPY_HD_INLINE long long tile_of(const double (&s)[3]) const {
    long long t = 0;
    for (int a = 0; a < 3; ++a) {
      long long c = 0;
      if (a < dim) {
        c = pic::kernels::node_of(floor(s[a])) - origin[a];
        const long long cells = tiles[a] * tile[a];
        c = c < 0 ? 0 : (c >= cells ? cells - 1 : c);
      }
      t = t * tiles[a] + c / tile[a];
    }
    return t;
  }
};

CUNUMPY_HD_INLINE Geometry geometry(int dim, int order, int h, long long t0, long long t1,
                                    long long t2, long long n0, long long n1, long long n2,
                                    long long guard, long long row, long long col, long long x0,
                                    long long y0, long long z0, double inv_dx, double inv_dy,
                                    double inv_dz) {
  Geometry g{};
  g.dim = dim;
  g.order = order;
  g.h = h;
  const long long t[3] = {t0, t1, t2}, n[3] = {n0, n1, n2}, o[3] = {x0, y0, z0};
  const double inv[3] = {inv_dx, inv_dy, inv_dz};
  g.volume = 1;
  for (int a = 0; a < 3; ++a) {
    const bool on = a < dim;
    g.tile[a] = on ? t[a] : 1;
    g.tiles[a] = on ? n[a] : 1;
    g.region[a] = on ? t[a] + 2 * h + 1 : 1;
    g.origin[a] = on ? o[a] : 0;
    g.inv_d[a] = on ? inv[a] : 1.0;
    g.volume *= g.region[a];
  }
  g.guard = guard;
  g.row = row;
  g.col = col;
  return g;
}

// A particle's stencil along each axis (pic::kernels::stencil of x / d), with its first node as a
// local node.
struct Stencils {
  pic::kernels::Stencil s[3];
};
CUNUMPY_HD_INLINE Stencils stencils_of(const Geometry& g, const double (&x)[3]) {
  Stencils st;
  for (int a = 0; a < 3; ++a) {
    if (a < g.dim) {
      st.s[a] = pic::kernels::stencil(x[a] * g.inv_d[a], g.order);
      st.s[a].first -= g.origin[a];
    } else {
      st.s[a].first = 0;
      st.s[a].w[0] = 1.0;
      st.s[a].w[1] = st.s[a].w[2] = 0.0;
    }
  }
  return st;
}

// f(region index, weight) over the stencil's nodes, in pic::kernels::for_each_node's order and
// products, for a stencil inside the region whose first node is r0; returns false (calling
// nothing) when a node lies outside the region.
template <typename F>
CUNUMPY_HD_INLINE bool for_each_region_node(const Geometry& g, const Stencils& st,
                                            const long long (&r0)[3], F&& f) {
  long long at[3];
  for (int a = 0; a < 3; ++a) {
    at[a] = st.s[a].first - r0[a];
    const int last = a < g.dim ? g.order : 0;
    if (at[a] < 0 || at[a] + last >= g.region[a]) return false;
  }
  const int width = g.order + 1;
  if (g.dim == 1) {
    for (int a = 0; a < width; ++a) f(at[0] + a, st.s[0].w[a]);
  } else if (g.dim == 2) {
    for (int a = 0; a < width; ++a)
      for (int b = 0; b < width; ++b)
        f((at[0] + a) * g.region[1] + at[1] + b, st.s[0].w[a] * st.s[1].w[b]);
  } else {
    for (int a = 0; a < width; ++a)
      for (int b = 0; b < width; ++b) {
        const double wab = st.s[0].w[a] * st.s[1].w[b];
        for (int c = 0; c < width; ++c)
          f(((at[0] + a) * g.region[1] + at[1] + b) * g.region[2] + at[2] + c, wab * st.s[2].w[c]);
      }
  }
  return true;
}

// Whether the stencil's nodes lie in the guarded arrays (the region of a tile at the block's
// edge reaches past them; tiled_sum reads only nodes of the arrays).
CUNUMPY_HD_INLINE bool in_block(const Geometry& g, const Stencils& st,
                                const long long (&block)[3]) {
  for (int a = 0; a < g.dim; ++a)
    if (st.s[a].first < -g.guard || st.s[a].first + g.order >= block[a] + g.guard) return false;
  return true;
}

// The same over the guarded arrays (a stencil outside every region: a far mover).
template <typename F>
CUNUMPY_HD_INLINE void for_each_guarded_node(const Geometry& g, const Stencils& st, F&& f) {
  const int width = g.order + 1;
  const int wy = g.dim >= 2 ? width : 1, wz = g.dim == 3 ? width : 1;
  for (int a = 0; a < width; ++a)
    for (int b = 0; b < wy; ++b) {
      const double wab = g.dim >= 2 ? st.s[0].w[a] * st.s[1].w[b] : st.s[0].w[a];
      for (int c = 0; c < wz; ++c)
        f(g.guarded(st.s[0].first + a, st.s[1].first + b, st.s[2].first + c),
          g.dim == 3 ? wab * st.s[2].w[c] : wab);
    }
}

}  // namespace tiled

// The geometry arguments every kernel takes after its arrays (written out in each signature:
// the launch's checks parse it), as a tiled::Geometry.
#define TILED_GEOMETRY                                                                        \
  tiled::geometry(dim, order, h, t0, t1, t2, n0, n1, n2, guard, row, col, x0, y0, z0, inv_dx, \
                  inv_dy, inv_dz)

// mode 0: gather and push (no move, no deposit); 1: gather, push, move, deposit; 2: deposit at
// the positions as they are.  With `cells` (mixed precision) x, y, z are the offsets in the cells
// cx, cy, cz, the grid in cell units (inv_d 1), dt* per axis dt / d and l* the cells per axis
// (pic::kernels::move_along); without, dt* = dt and l* the box.  With `exact` (--deterministic)
// the density holds the weights' quanta (density_scale 2^-24 q).  Dynamic shared memory: (dim + 1) V + 3 blockDim.x doubles.
// kinetic_sums[t], momentum_sums[t]: the tile's kinetic energy (mass / 2 v_old . v_new) and
// momentum (mass v_x) after the push; undeposited_sums[t]: its particles whose stencil lies past
// the guarded arrays (they left the rank's block: deposited again after the migration).
template <typename Real>
__global__ void tiled_push(Real* x, Real* y, Real* z, Real* vx, Real* vy, Real* vz, int* cx,
                           int* cy, int* cz, const double* ex, const double* ey, const double* ez,
                           double* slots, double* far, int* dest, int* misplaced,
                           double* kinetic_sums, double* momentum_sums, double* undeposited_sums,
                           const long long* start, int dim, int order, int h, long long t0,
                           long long t1, long long t2, long long n0, long long n1, long long n2,
                           long long guard, long long row, long long col, long long x0,
                           long long y0, long long z0, double inv_dx, double inv_dy, double inv_dz,
                           long long nodes, double dv, double dtx, double dty, double dtz,
                           double lx, double ly, double lz, double mass, double q, int cells,
                           int exact, int mode) {
  extern __shared__ double shared[];
  const tiled::Geometry g = TILED_GEOMETRY;
  const long long t = blockIdx.x;
  long long tc[3], r0[3], block[3] = {1, 1, 1};  // the block's nodes per axis, from the strides
  block[0] = nodes / g.row - 2 * g.guard;
  if (g.dim >= 2) block[1] = (g.dim == 2 ? g.row : g.row / g.col) - 2 * g.guard;
  if (g.dim == 3) block[2] = g.col - 2 * g.guard;
  g.coordinates(t, tc);
  for (int a = 0; a < 3; ++a) r0[a] = a < g.dim ? tc[a] * g.tile[a] - g.h : 0;
  double* e[3] = {shared, shared + g.volume, shared + 2 * g.volume};
  double* rho = shared + g.dim * g.volume;
  double* partial = rho + g.volume;
  const double* field[3] = {ex, ey, ez};
  for (long long k = threadIdx.x; k < g.volume; k += blockDim.x) {
    const long long u2 = k % g.region[2], u1 = (k / g.region[2]) % g.region[1],
                    u0 = k / (g.region[2] * g.region[1]);
    const long long c = g.guarded(r0[0] + u0, r0[1] + u1, r0[2] + u2);
    for (int a = 0; a < g.dim; ++a) e[a][k] = mode != 2 && c >= 0 && c < nodes ? field[a][c] : 0.0;
    rho[k] = 0.0;
  }
  __syncthreads();
  Real* const p[3] = {x, y, z};
  Real* const v[3] = {vx, vy, vz};
  int* const cell[3] = {cx, cy, cz};
  const double l[3] = {lx, ly, lz}, step_of[3] = {dtx, dty, dtz};
  double kinetic = 0.0, momentum = 0.0, undeposited = 0.0;
  for (long long i = start[t] + threadIdx.x; i < start[t + 1]; i += blockDim.x) {
    double s[3] = {0.0, 0.0, 0.0}, moved[3] = {0.0, 0.0, 0.0};
    for (int a = 0; a < g.dim; ++a)
      s[a] = moved[a] = cells ? static_cast<double>(cell[a][i]) + static_cast<double>(p[a][i])
                              : static_cast<double>(p[a][i]);
    if (mode != 2) {
      // The gather: pic::kernels::field_at's sums, from the region.
      const tiled::Stencils st = tiled::stencils_of(g, s);
      double f[3] = {0.0, 0.0, 0.0};
      const bool in_region = tiled::for_each_region_node(g, st, r0, [&](long long k, double w) {
        f[0] += w * e[0][k];
        if (g.dim >= 2) f[1] += w * e[1][k];
        if (g.dim == 3) f[2] += w * e[2][k];
      });
      if (!in_region) {  // a particle sorted into a tile it is not near: the guarded arrays
        atomicAdd(misplaced, 1);  // (counted: the counters show a reorder that went wrong)
        tiled::for_each_guarded_node(g, st, [&](long long c, double w) {
          if (c < 0 || c >= nodes) return;
          f[0] += w * field[0][c];
          if (g.dim >= 2) f[1] += w * field[1][c];
          if (g.dim == 3) f[2] += w * field[2][c];
        });
      }
      // The push: pic::kernels::push_particle's.
      double k = 0.0;
      for (int a = 0; a < g.dim; ++a) {
        const double old_v = v[a][i];
        const double new_v = old_v + dv * f[a];
        v[a][i] = static_cast<Real>(new_v);
        k = a == 0 ? old_v * new_v : k + old_v * new_v;
        if (mode == 1) {
          // pic::kernels::move_along: the coordinate, or the cell and the offset in it.
          const double unwrapped = s[a] + step_of[a] * new_v;
          if (cells) {
            pic::kernels::move_along(p[a][i], cell[a] + i, step_of[a] * new_v, l[a]);
            s[a] = static_cast<double>(cell[a][i]) + static_cast<double>(p[a][i]);
          } else {
            p[a][i] = pic::kernels::periodic_as<Real>(unwrapped, l[a]);
            s[a] = p[a][i];
          }
          // The stored position's image on the side it came from (in the guards when it
          // wrapped around the box).
          moved[a] = s[a] + l[a] * round((unwrapped - s[a]) / l[a]);
        }
      }
      kinetic += 0.5 * mass * k;
      momentum += mass * static_cast<double>(v[0][i]);
    }
    if (mode == 0) continue;
    // At the stored position; one that wrapped around the box at the position before the wrap
    // (its stencil in the guards, which hold the periodic images), in the region either way
    // unless it moved farther.
    // Deterministic (`exact`): each weight's quanta, integers summed exactly in any order, and a
    // particle that wrapped at its stored position (its image's weights round otherwise).
    const auto add = [&](long long k, double w) {
      atomicAdd(&rho[k], exact ? static_cast<double>(pic::kernels::quanta(w)) : q * w);
    };
    tiled::Stencils st = tiled::stencils_of(g, s);
    bool inside = tiled::in_block(g, st, block) && tiled::for_each_region_node(g, st, r0, add);
    if (!inside && mode == 1 && !exact) {
      st = tiled::stencils_of(g, moved);
      inside = tiled::in_block(g, st, block) && tiled::for_each_region_node(g, st, r0, add);
    }
    if (!inside) {  // a far mover: at its stored position, into the guarded arrays
      const tiled::Stencils at = tiled::stencils_of(g, s);
      bool in_arrays = true;  // (a particle that left the rank's block past the guards: none)
      tiled::for_each_guarded_node(
          g, at, [&](long long c, double) { in_arrays = in_arrays && c >= 0 && c < nodes; });
      if (in_arrays)
        tiled::for_each_guarded_node(g, at, [&](long long c, double w) {
          atomicAdd(&far[c], exact ? static_cast<double>(pic::kernels::quanta(w)) : q * w);
        });
      else
        undeposited += 1.0;
    }
    double cells[3] = {0.0, 0.0, 0.0};
    for (int a = 0; a < g.dim; ++a) cells[a] = s[a] * g.inv_d[a];
    dest[i] = static_cast<int>(g.tile_of(cells));
  }
  partial[threadIdx.x] = kinetic;
  partial[blockDim.x + threadIdx.x] = momentum;
  partial[2 * blockDim.x + threadIdx.x] = undeposited;
  __syncthreads();
  if (threadIdx.x == 0) {  // in thread order: the same sums at every run
    double sk = 0.0, sm = 0.0, su = 0.0;
    for (unsigned k = 0; k < blockDim.x; ++k) {
      sk += partial[k];
      sm += partial[blockDim.x + k];
      su += partial[2 * blockDim.x + k];
    }
    kinetic_sums[t] = sk;
    momentum_sums[t] = sm;
    undeposited_sums[t] = su;
  }
  if (mode != 0)
    for (long long k = threadIdx.x; k < g.volume; k += blockDim.x) slots[t * g.volume + k] = rho[k];
}

// One thread a node of the guarded density (`nodes` of them).
extern "C" __global__ void tiled_sum(const double* slots, double* far, double* ne, int dim,
                                     int order, int h, long long t0, long long t1, long long t2,
                                     long long n0, long long n1, long long n2, long long guard,
                                     long long row, long long col, long long x0, long long y0,
                                     long long z0, double inv_dx, double inv_dy, double inv_dz,
                                     long long nodes) {
  const long long c = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (c >= nodes) return;
  const tiled::Geometry g = TILED_GEOMETRY;
  // The local node of guarded index c.
  long long u[3] = {0, 0, 0};
  if (g.dim == 1) {
    u[0] = c - g.guard;
  } else if (g.dim == 2) {
    u[0] = c / g.row - g.guard;
    u[1] = c % g.row - g.guard;
  } else {
    u[0] = c / g.row - g.guard;
    u[1] = (c % g.row) / g.col - g.guard;
    u[2] = c % g.col - g.guard;
  }
  // Per axis, the tiles whose region holds u: t T - h <= u < t T - h + R.
  long long lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    if (a >= g.dim) {
      lo[a] = hi[a] = 0;
      continue;
    }
    const long long top = u[a] + g.h;                       // t T <= top
    const long long bottom = u[a] + g.h - g.region[a] + 1;  // t T >= bottom
    hi[a] = top >= 0 ? top / g.tile[a] : -((-top + g.tile[a] - 1) / g.tile[a]);
    lo[a] = bottom >= 0 ? (bottom + g.tile[a] - 1) / g.tile[a] : -((-bottom) / g.tile[a]);
    if (lo[a] < 0) lo[a] = 0;
    if (hi[a] > g.tiles[a] - 1) hi[a] = g.tiles[a] - 1;
  }
  double sum = 0.0;
  for (long long a = lo[0]; a <= hi[0]; ++a)
    for (long long b = lo[1]; b <= hi[1]; ++b)
      for (long long d = lo[2]; d <= hi[2]; ++d) {
        const long long t = (a * g.tiles[1] + b) * g.tiles[2] + d;
        const long long k = ((u[0] - (a * g.tile[0] - g.h)) * g.region[1] +
                             (g.dim >= 2 ? u[1] - (b * g.tile[1] - g.h) : 0)) *
                                g.region[2] +
                            (g.dim == 3 ? u[2] - (d * g.tile[2] - g.h) : 0);
        sum += slots[t * g.volume + k];
      }
  ne[c] = sum + far[c];
  far[c] = 0.0;
}

namespace tiled {
// The direction from tile s to tile d (0 .. 3^dim - 1, the offsets -1, 0, +1 per axis, periodic
// over the tiles), or 3^dim for a tile farther away.
CUNUMPY_HD_INLINE int direction(const Geometry& g, long long s, long long d) {
  long long cs[3], cd[3];
  g.coordinates(s, cs);
  g.coordinates(d, cd);
  int k = 0;
  for (int a = 0; a < g.dim; ++a) {
    const long long n = g.tiles[a];
    const long long diff = ((cd[a] - cs[a]) % n + n) % n;
    int o;
    if (diff == 0)
      o = 1;
    else if (diff == 1)
      o = 2;
    else if (diff == n - 1)
      o = 0;
    else
      return g.directions();
    k = k * 3 + o;
  }
  return k;
}
// The tile in direction k of tile s (periodic).
CUNUMPY_HD_INLINE long long neighbour(const Geometry& g, long long s, int k) {
  long long c[3];
  g.coordinates(s, c);
  int o[3] = {1, 1, 1};
  for (int a = g.dim - 1; a >= 0; --a) {
    o[a] = k % 3;
    k /= 3;
  }
  long long t = 0;
  for (int a = 0; a < 3; ++a) {
    const long long n = g.tiles[a];
    const long long ca = a < g.dim ? ((c[a] + o[a] - 1) % n + n) % n : 0;
    t = t * n + ca;
  }
  return t;
}
}  // namespace tiled

// counts[t (K + 1) + k]: tile t's particles going in direction k (K = 3^dim; k = K: farther);
// far_counts[d]: the particles arriving at d from farther (a global atomic each).  Dynamic
// shared memory: K + 1 ints.
extern "C" __global__ void tiled_count(const int* dest, const long long* start, int* counts,
                                       int* far_counts, int dim, int order, int h, long long t0,
                                       long long t1, long long t2, long long n0, long long n1,
                                       long long n2, long long guard, long long row, long long col,
                                       long long x0, long long y0, long long z0, double inv_dx,
                                       double inv_dy, double inv_dz) {
  extern __shared__ int directions[];
  const tiled::Geometry g = TILED_GEOMETRY;
  const int K = g.directions();
  const long long t = blockIdx.x;
  for (int k = threadIdx.x; k <= K; k += blockDim.x) directions[k] = 0;
  __syncthreads();
  for (long long i = start[t] + threadIdx.x; i < start[t + 1]; i += blockDim.x) {
    const int k = tiled::direction(g, t, dest[i]);
    atomicAdd(&directions[k], 1);
    if (k == K) atomicAdd(&far_counts[dest[i]], 1);
  }
  __syncthreads();
  for (int k = threadIdx.x; k <= K; k += blockDim.x) counts[t * (K + 1) + k] = directions[k];
}

// One thread a tile d: new_counts[d], and bases[d (K + 1) + k] the first row (from d's new start)
// of the particles arriving from direction k (the tile in direction K - 1 - k of d sends them),
// those from farther (k = K) last.  far_cursor[d] = 0 for tiled_order.
extern "C" __global__ void tiled_bases(const int* counts, const int* far_counts,
                                       long long* new_counts, long long* bases, int* far_cursor,
                                       int dim, int order, int h, long long t0, long long t1,
                                       long long t2, long long n0, long long n1, long long n2,
                                       long long guard, long long row, long long col, long long x0,
                                       long long y0, long long z0, double inv_dx, double inv_dy,
                                       double inv_dz) {
  const long long d = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const tiled::Geometry g = TILED_GEOMETRY;
  if (d >= g.tile_count()) return;
  const int K = g.directions();
  long long at = 0;
  for (int k = 0; k < K; ++k) {
    // The source s with d in direction k of s: s is in direction K - 1 - k of d.
    const long long s = tiled::neighbour(g, d, K - 1 - k);
    bases[d * (K + 1) + k] = at;
    // (With 1 or 2 tiles along an axis, two directions can name the same source and target:
    // direction() gives each pair one direction, the others count none.)
    at += counts[s * (K + 1) + k];
  }
  bases[d * (K + 1) + K] = at;
  new_counts[d] = at + far_counts[d];
  far_cursor[d] = 0;
}

// One warp a tile (blockDim.x = 32): permutation[new row] = old row, new row = new_start[d] +
// bases[d][k] + the particle's rank among tile t's particles of direction k (stable; the far ones
// by a global atomic cursor).
extern "C" __global__ void tiled_order(const int* dest, const long long* start,
                                       const long long* new_start, const long long* bases,
                                       int* far_cursor, long long* permutation, int dim, int order,
                                       int h, long long t0, long long t1, long long t2,
                                       long long n0, long long n1, long long n2, long long guard,
                                       long long row, long long col, long long x0, long long y0,
                                       long long z0, double inv_dx, double inv_dy, double inv_dz) {
  __shared__ long long cursor[28];
  const tiled::Geometry g = TILED_GEOMETRY;
  const int K = g.directions();
  const long long t = blockIdx.x;
  const unsigned lane = threadIdx.x;
  for (int k = lane; k <= K; k += 32) cursor[k] = 0;
  __syncwarp();
  for (long long first = start[t]; first < start[t + 1]; first += 32) {
    const long long i = first + lane;
    const bool live = i < start[t + 1];
    const unsigned active = __ballot_sync(0xffffffffu, live);
    const int d = live ? dest[i] : 0;
    const int k = live ? tiled::direction(g, t, d) : K + 1;
    const unsigned same = __match_any_sync(0xffffffffu, k);
    const unsigned below = same & ((1u << lane) - 1u);
    if (live) {
      long long row;
      if (k < K)
        row = new_start[d] + bases[d * (K + 1) + k] + cursor[k] + __popc(below);
      else
        row = new_start[d] + bases[d * (K + 1) + K] + atomicAdd(&far_cursor[d], 1);
      permutation[row] = i;
    }
    __syncwarp();
    if (live && below == 0 && k < K) cursor[k] += __popc(same & active);
    __syncwarp();
  }
}

// tiles[i]: the tile of particle i (the first sort by tile); with cells, x, y, z are the offsets
// in the cells cx, cy, cz (the grid in cell units: inv_d 1).
template <typename Real>
__global__ void tiled_tile_of(const Real* x, const Real* y, const Real* z, const int* cx,
                              const int* cy, const int* cz, int cells, long long* tiles, int dim,
                              int order, int h, long long t0, long long t1, long long t2,
                              long long n0, long long n1, long long n2, long long guard,
                              long long row, long long col, long long x0, long long y0,
                              long long z0, double inv_dx, double inv_dy, double inv_dz,
                              long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  const tiled::Geometry g = TILED_GEOMETRY;
  const Real* const p[3] = {x, y, z};
  const int* const c[3] = {cx, cy, cz};
  double at[3] = {0.0, 0.0, 0.0};
  for (int a = 0; a < g.dim; ++a)
    at[a] = (cells ? static_cast<double>(c[a][i]) + static_cast<double>(p[a][i])
                   : static_cast<double>(p[a][i])) *
            g.inv_d[a];
  tiles[i] = g.tile_of(at);
}

// start[t] for every tile t of keys sorted by tile (n of them): the first row of tile t.
extern "C" __global__ void tiled_starts(const long long* sorted, long long* start, long long tiles,
                                        long long n) {
  const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (t > tiles) return;
  long long lo = 0, hi = n;  // the first row whose key is >= t
  while (lo < hi) {
    const long long mid = lo + (hi - lo) / 2;
    if (sorted[mid] < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  start[t] = lo;
}
