// apps/pic/pic_kernels.hpp: the per-particle and per-cell math of the mini-app, host+device
// (CUNUMPY_HD), so it runs in parallel_for bodies on every backend and is testable on the CPU.
// The kernels of kernels/<name>/<name>_cuda.cu include it too (NVRTC, the kernel emulator).
#pragma once

#include <cunumpy/config.cuh>

#if !CUNUMPY_NVRTC()
#include <cmath>
#endif

namespace pic::kernels {

// Shape functions on nodes x_j = j dx.  CIC (order 1): 2 nodes from floor(s); TSC (order 2):
// 3 nodes around the nearest node.  `first` is the first node (may be -1 or n, to be wrapped),
// w[] the weights (summing to 1).
struct Stencil {
  long long first;
  double w[3];
};

// A node index from floor(s): the cast is defined for every s (NaN and values past +-2^62 give
// node 0; positions wrapped by periodic() never do).
CUNUMPY_HD_INLINE long long node_of(double j) {
  return (j > -4.0e18 && j < 4.0e18) ? static_cast<long long>(j) : 0;
}

// The deterministic deposit (DeterministicStep, the fused host step's integer grids): a weight
// w adds its quanta, round(w 2^24) with ties away from zero (std::llround's), to an int64 sum,
// so sums of any order agree to the bit.
inline constexpr double kQuantum = 16777216.0;  // 2^24
// std::llround(w 2^24) without the library call: the truncation and the rest (both exact while
// |w 2^24| < 4e18), a quantum more when the rest reaches a half; NaN, infinities and larger
// values take llround.
CUNUMPY_HD_INLINE long long quanta(double w) {
  const double v = w * kQuantum;
  if (!(v > -4.0e18 && v < 4.0e18)) return llround(v);
  const long long t = static_cast<long long>(v);
  const double rest = v - static_cast<double>(t);
  return t + (rest >= 0.5 ? 1 : 0) - (rest <= -0.5 ? 1 : 0);
}

// n / d for 0 <= n < 2^50 and d >= 1 given inv = 1.0 / d, without a division instruction (index
// loops over grid nodes split an index into its coordinates so, the reciprocal computed once
// outside the loop): the quotient from a double product, corrected once (its error is below one).
CUNUMPY_HD_INLINE long long quotient(long long n, long long d, double inv) {
  long long q = static_cast<long long>(static_cast<double>(n) * inv);
  const long long r = n - q * d;
  if (r < 0) --q;
  if (r >= d) ++q;
  return q;
}

CUNUMPY_HD_INLINE Stencil stencil(double s, int order) {
  Stencil st;
  if (order == 1) {
    const double j = floor(s);
    const double f = s - j;
    st.first = node_of(j);
    st.w[0] = 1.0 - f;
    st.w[1] = f;
    st.w[2] = 0.0;
  } else {
    const double j = floor(s + 0.5);
    const double d = s - j;  // in [-0.5, 0.5)
    st.first = node_of(j) - 1;
    st.w[0] = 0.5 * (0.5 - d) * (0.5 - d);
    st.w[1] = 0.75 - d * d;
    st.w[2] = 0.5 * (0.5 + d) * (0.5 + d);
  }
  return st;
}

// j mapped into [0, n): stencil indices are at most a few cells outside, so two compares do
// (an integer division costs tens of cycles); anything farther takes the modulo.
CUNUMPY_HD_INLINE long long wrap(long long j, long long n) {
  if (j >= 0 && j < n) return j;
  if (j < 0 && j >= -n) return j + n;
  if (j >= n && j < 2 * n) return j - n;
  j %= n;
  return j < 0 ? j + n : j;
}

// What a particle's stencil needs of the grid.  Replicated (local = false): nodes are global
// and wrap.  Decomposed (local = true): nodes index the rank's field array with its guards,
// unwrapped (node x maps to x - x0 + guard; rows of `row` nodes in 2D, planes of `row` nodes
// made of rows of `col` nodes in 3D); the halo sum and fill take care of the periodic images.
struct Grid {
  long long nx, ny;  // ny = 1 in 1D
  int order;
  bool two;  // 2D or 3D (axis 1 is there)
  double inv_dx, inv_dy;
  bool local = false;
  long long x0 = 0, y0 = 0, guard = 0, row = 1;
  // 3D: axis 2 (nodes, 1 / cell, first node of the block) and the stride of axis 1 (`col`;
  // axis 0's is `row`).
  bool three = false;
  long long nz = 1;
  double inv_dz = 1.0;
  long long z0 = 0, col = 1;
};

// A guarded local grid (local = true): node (i, j) of the whole grid at
// (i - x0 + guard) * row + (j - y0 + guard), never wrapped (the guards hold the images).
CUNUMPY_HD_INLINE Grid local_grid(int order, bool two, double inv_dx, double inv_dy, long long x0,
                                  long long y0, long long guard, long long row) {
  Grid g{0, 1, order, two, inv_dx, inv_dy};
  g.local = true;
  g.x0 = x0;
  g.y0 = y0;
  g.guard = guard;
  g.row = row;
  return g;
}

// The same grid with a third axis: node (i, j, l) at (i - x0 + guard) * row + (j - y0 + guard)
// * col + (l - z0 + guard).
CUNUMPY_HD_INLINE Grid with_axis_z(Grid g, double inv_dz, long long z0, long long col) {
  g.three = true;
  g.inv_dz = inv_dz;
  g.z0 = z0;
  g.col = col;
  return g;
}

// A guarded local grid of any dimension (1 to 3): local_grid, with axis z in 3D.
CUNUMPY_HD_INLINE Grid local_grid_of(int order, int dim, double inv_dx, double inv_dy,
                                     double inv_dz, long long x0, long long y0, long long z0,
                                     long long guard, long long row, long long col) {
  const Grid g = local_grid(order, dim >= 2, inv_dx, inv_dy, x0, y0, guard, row);
  return dim == 3 ? with_axis_z(g, inv_dz, z0, col) : g;
}

// Calls f(cell, weight, point) for every grid node of the stencil of the particle at (x, y, z)
// (y unused in 1D, z but in 3D): cell is the linear node index (global: (i * ny + j) * nz + l),
// weight the shape-function weight (product of the axes' weights), point the stencil point
// (a * (order + 1) + b in 2D, (a * (order + 1) + b) * (order + 1) + c in 3D).  One walk for
// the deposit, the deterministic deposit's weights and the gather.
template <typename F>
CUNUMPY_HD_INLINE void for_each_node(const Grid& g, double x, double y, double z, F&& f) {
  const Stencil sx = stencil(x * g.inv_dx, g.order);
  if (!g.two) {
    for (int a = 0; a <= g.order; ++a)
      f(g.local ? sx.first + a - g.x0 + g.guard : wrap(sx.first + a, g.nx), sx.w[a], a);
    return;
  }
  const Stencil sy = stencil(y * g.inv_dy, g.order);
  const int width = g.order + 1;
  if (!g.three) {
    for (int a = 0; a <= g.order; ++a) {
      const long long row =
          g.local ? (sx.first + a - g.x0 + g.guard) * g.row : wrap(sx.first + a, g.nx) * g.ny;
      for (int b = 0; b <= g.order; ++b)
        f(row + (g.local ? sy.first + b - g.y0 + g.guard : wrap(sy.first + b, g.ny)),
          sx.w[a] * sy.w[b], a * width + b);
    }
    return;
  }
  const Stencil sz = stencil(z * g.inv_dz, g.order);
  for (int a = 0; a <= g.order; ++a) {
    const long long plane =
        g.local ? (sx.first + a - g.x0 + g.guard) * g.row : wrap(sx.first + a, g.nx) * g.ny * g.nz;
    for (int b = 0; b <= g.order; ++b) {
      const long long line = plane + (g.local ? (sy.first + b - g.y0 + g.guard) * g.col
                                              : wrap(sy.first + b, g.ny) * g.nz);
      const double wab = sx.w[a] * sy.w[b];
      for (int c = 0; c <= g.order; ++c)
        f(line + (g.local ? sz.first + c - g.z0 + g.guard : wrap(sz.first + c, g.nz)),
          wab * sz.w[c], (a * width + b) * width + c);
    }
  }
}

// 1D and 2D (no z).
template <typename F>
CUNUMPY_HD_INLINE void for_each_node(const Grid& g, double x, double y, F&& f) {
  for_each_node(g, x, y, 0.0, static_cast<F&&>(f));
}

// The particles' positions as the loops read them, one array per axis (the first `dim`): the
// coordinate (R: double or float), or, with cells (--precision mixed), the offset within the
// cell in cell units, [0, 1), beside the cell's index along the axis (int: int32 on every target,
// and NVRTC has no <cstdint>): the position is (cell + offset) * cell size, exact far from the
// origin.  at() is what the stencil takes: the coordinate, or cell + offset (exact in double below
// 2^29 cells) for a grid in cell units (in_cell_units).  Past the dimension the axes point at axis
// 0 and are not read.
template <typename R>
struct Positions {
  const R* p[3];
  const int* cell[3];
  CUNUMPY_HD_INLINE double at(int a, long long i) const {
    return cell[a] != nullptr ? static_cast<double>(cell[a][i]) + static_cast<double>(p[a][i])
                              : static_cast<double>(p[a][i]);
  }
};

// The grid seen from positions in cell units (cell + offset): every inverse cell size 1.
CUNUMPY_HD_INLINE Grid in_cell_units(Grid g) {
  g.inv_dx = 1.0;
  g.inv_dy = 1.0;
  g.inv_dz = 1.0;
  return g;
}

// for_each_node at particle i of `pos`.
template <typename R, typename F>
CUNUMPY_HD_INLINE void for_each_node(const Grid& g, const Positions<R>& pos, long long i, F&& f) {
  for_each_node(g, pos.at(0, i), pos.at(1, i), pos.at(2, i), static_cast<F&&>(f));
}

// E at the particle at (x, y, z) from the guarded arrays ex, ey, ez (read only on the grid's
// axes): e[0..2], each summed in for_each_node's order.  The gathers of every step.
CUNUMPY_HD_INLINE void field_at(const Grid& g, double x, double y, double z, const double* ex,
                                const double* ey, const double* ez, double e[3]) {
  double e0 = 0.0, e1 = 0.0, e2 = 0.0;
  for_each_node(g, x, y, z, [&](long long c, double w, int) {
    e0 += w * ex[c];
    if (g.two) e1 += w * ey[c];
    if (g.three) e2 += w * ez[c];
  });
  e[0] = e0;
  e[1] = e1;
  e[2] = e2;
}

template <typename R>
CUNUMPY_HD_INLINE void field_at(const Grid& g, const Positions<R>& pos, long long i,
                                const double* ex, const double* ey, const double* ez, double e[3]) {
  field_at(g, pos.at(0, i), pos.at(1, i), pos.at(2, i), ex, ey, ez, e);
}

// x mapped into [0, length), for every x: near the box by x - length floor(x / length); far
// from it (where that loses the remainder) by the exact fmod; a NaN or infinite x (a diverged
// particle) gives 0, inside the box, so that no later cell index is undefined: its velocity is
// not finite either, and the run's energy diagnostics report the divergence.
CUNUMPY_HD_INLINE double periodic(double x, double length) {
  double r = x - length * floor(x / length);
  if (r >= length) r -= length;
  if (r >= 0.0 && r < length) return r;
  r = fmod(x, length);  // NaN for a NaN or infinite x
  if (r < 0.0) r += length;
  return (r >= 0.0 && r < length) ? r : 0.0;
}

// A position p in [0, length) as the particle arrays store it (R: double or float), still
// below `length`: a float that rounds up to it takes the float below.
template <typename R>
CUNUMPY_HD_INLINE R inside_as(double p, double length) {
  if constexpr (sizeof(R) == sizeof(double)) {
    return p;
  } else {
    R r = static_cast<R>(p);
    if (static_cast<double>(r) >= length) r = nextafterf(r, 0.0f);
    return r;
  }
}
template <typename R>
CUNUMPY_HD_INLINE R periodic_as(double x, double length) {
  return inside_as<R>(periodic(x, length), length);  // periodic(x, length), as stored
}

// A position t in cell units, in [0, cells), stored as a cell and an offset within it (R:
// float): the offset t - floor(t) rounded once, the float below 1 where it rounds up to 1.
template <typename R>
CUNUMPY_HD_INLINE void put_in_cell(double t, int& cell, R& offset) {
  const double c = floor(t);
  R o = static_cast<R>(t - c);
  if (o >= static_cast<R>(1)) o = static_cast<R>(0.99999994039535522);  // the float below 1
  cell = static_cast<int>(c);
  offset = o;
}
// A position x (the box's units) as the particle arrays store it: wrapped into [0, length)
// (periodic_as), or with a cell, x's cell and offset along an axis of `cells` cells over
// `length`, wrapped into [0, cells).
template <typename R>
CUNUMPY_HD_INLINE void store_position(double x, double length, double cells, R& p, int* cell) {
  if (cell == nullptr)
    p = periodic_as<R>(x, length);
  else
    put_in_cell(periodic(x * (cells / length), cells), *cell, p);
}
// x += step along an axis, wrapped into the box: the coordinate (length: the box's), or with a
// cell (step and length in cell units: dt v / dx and the axis's cells) the cell and offset.
template <typename R>
CUNUMPY_HD_INLINE void move_along(R& p, int* cell, double step, double length) {
  if (cell == nullptr) {
    p = periodic_as<R>(p + step, length);
  } else {
    put_in_cell(periodic(static_cast<double>(*cell) + static_cast<double>(p) + step, length), *cell,
                p);
  }
}

// The kernel catalog's gather and push of particle i (their host versions and CUDA sources,
// double or float particles: R; mixed precision: Positions with cells, a grid in cell units).
// Past `dim` the coordinates, velocities and components are not read or written.
template <typename R>
CUNUMPY_HD_INLINE void gather_particle(const Grid& g, const Positions<R>& pos, const double* ex,
                                       const double* ey, const double* ez, double* ex_p,
                                       double* ey_p, double* ez_p, int dim, long long i) {
  double e[3];
  field_at(g, pos, i, ex, ey, ez, e);
  ex_p[i] = e[0];
  if (dim >= 2) ey_p[i] = e[1];
  if (dim == 3) ez_p[i] = e[2];
}
template <typename R>
CUNUMPY_HD_INLINE void gather_particle(const Grid& g, const R* x, const R* y, const R* z,
                                       const double* ex, const double* ey, const double* ez,
                                       double* ex_p, double* ey_p, double* ez_p, int dim,
                                       long long i) {
  const Positions<R> pos{{x, y, z}, {nullptr, nullptr, nullptr}};
  gather_particle(g, pos, ex, ey, ez, ex_p, ey_p, ez_p, dim, i);
}
// v += dv E at the particle, then x += dt v (wrapped, as stored) when `move`; returns the
// kinetic energy with time-centred velocities (mass / 2 * v_old . v_new).
// With cells (mixed precision: p holds the offsets), the positions move in cell units: per
// axis, dt[a] is dt / cell size and l[a] the axis's cells (move_along); without, dt[a] = dt and
// l[a] the box's length.
template <typename R>
CUNUMPY_HD_INLINE double push_particle(R* const (&p)[3], int* const (&cell)[3], R* const (&v)[3],
                                       const double* const (&f)[3], const double (&l)[3],
                                       const double (&dt)[3], double dv, double mass, bool move,
                                       int dim, long long i) {
  double k = 0.0;
  for (int a = 0; a < dim; ++a) {
    const double old_v = v[a][i];
    const double new_v = old_v + dv * f[a][i];
    v[a][i] = static_cast<R>(new_v);
    k = a == 0 ? old_v * new_v : k + old_v * new_v;
    if (move) move_along(p[a][i], cell[a] != nullptr ? cell[a] + i : nullptr, dt[a] * new_v, l[a]);
  }
  return 0.5 * mass * k;
}
template <typename R>
CUNUMPY_HD_INLINE double push_particle(R* const (&p)[3], R* const (&v)[3],
                                       const double* const (&f)[3], const double (&l)[3], double dv,
                                       double dt, double mass, bool move, int dim, long long i) {
  int* const no_cells[3] = {nullptr, nullptr, nullptr};
  const double steps[3] = {dt, dt, dt};
  return push_particle(p, no_cells, v, f, l, steps, dv, mass, move, dim, i);
}

// The radical inverse of i in `base` (van der Corput): a low-discrepancy sequence in [0, 1).
CUNUMPY_HD_INLINE double van_der_corput(unsigned long long i, unsigned base) {
  double result = 0.0, f = 1.0 / base;
  while (i > 0) {
    result += f * static_cast<double>(i % base);
    i /= base;
    f /= base;
  }
  return result;
}

// The inverse of the standard normal CDF (Acklam's rational approximation, relative error
// below 1.2e-9), for quiet-start velocities.
CUNUMPY_HD_INLINE double inverse_normal(double p) {
  const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                      1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                      6.680131188771972e+01, -1.328068155288572e+01};
  const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                      -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                      3.754408661907416e+00};
  const double low = 0.02425;
  if (p <= 0.0) return -8.0;
  if (p >= 1.0) return 8.0;
  if (p < low) {
    const double q = sqrt(-2.0 * log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  if (p > 1.0 - low) {
    const double q = sqrt(-2.0 * log(1.0 - p));
    return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

// The position x in [0, L) whose cumulative density (1 + a cos(k x)) equals u * L:
// x + (a / k) sin(k x) = u L, by Newton from x = u L.
CUNUMPY_HD_INLINE double perturbed_position(double u, double length, double a, double k) {
  const double target = u * length;
  double x = target;
  for (int it = 0; it < 20; ++it) {
    const double f = x + (a / k) * sin(k * x) - target;
    const double df = 1.0 + a * cos(k * x);
    const double step = f / df;
    x -= step;
    if (fabs(step) < 1e-14 * length) break;
  }
  return x;
}

}  // namespace pic::kernels
