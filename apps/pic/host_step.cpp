// The host's one-pass particle step (host_step.hpp).
#include "host_step.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include <cunumpy/host_targets.hpp>
#include <cunumpy/parallel.hpp>

#include "host_step_simd.hpp"
#include "pic_kernels.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

// The scalar loops are compiled for AVX-512, AVX2 and the baseline on x86-64, chosen at run
// time by the CPU (CUNUMPY_HOST_CLONES; 2D and 3D CIC run whole vectors of particles through
// host_step_simd.cpp first).
#if defined(__GNUC__)
#define PIC_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define PIC_ALWAYS_INLINE inline
#endif

namespace pic::host_step {

void ThreadGrids::ensure(int threads, long long nodes, bool integer_grids) {
  const auto n = static_cast<std::size_t>(nodes);
  if (integer_grids) {
    real.clear();
    integer.resize(static_cast<std::size_t>(threads));
    for (auto& g : integer)
      if (g.size() != n) g.assign(n, 0);
  } else {
    integer.clear();
    real.resize(static_cast<std::size_t>(threads));
    const std::size_t length = cells ? 4 * n : n;
    for (auto& g : real)
      if (g.size() != length) g.assign(length, 0.0);
  }
}

namespace {
// Node (i, j)'s sum from cell sums q (ThreadGrids::cells; node (i, j) at i row + j): the entries
// for it of the cells it is a corner of (those whose first node is (i, j), (i, j - 1),
// (i - 1, j), (i - 1, j - 1)), in that order.
inline double node_from_cells(const double* q, long long i, long long j, long long row) {
  const long long c = i * row + j;
  double v = q[4 * c];
  if (j >= 1) v += q[4 * (c - 1) + 1];
  if (i >= 1) v += q[4 * (c - row) + 2];
  if (i >= 1 && j >= 1) v += q[4 * (c - row - 1) + 3];
  return v;
}
}  // namespace

void ThreadGrids::use_cells(bool on, long long grid_row) {
  if (on == cells && (!on || grid_row == row)) return;
  for (auto& g : real) {
    const std::size_t nodes = cells ? g.size() / 4 : g.size();
    std::vector<double, LineAllocator<double>> other(on ? 4 * nodes : nodes, 0.0);
    for (std::size_t c = 0; c < nodes; ++c) {
      const auto n = static_cast<long long>(c);
      const double sum = cells ? node_from_cells(g.data(), n / row, n % row, row) : g[c];
      (on ? other[4 * c] : other[c]) = sum;
    }
    g.swap(other);
  }
  cells = on;
  row = grid_row;
}

namespace {

// One axis of kernels::stencil for s >= 0 (positions are in [0, L)), where truncation is
// floor: the same first node and weights, bit for bit.
template <int Order>
PIC_ALWAYS_INLINE void axis(double s, long long& first, double (&w)[Order + 1]) {
  if constexpr (Order == 1) {
    const double j = static_cast<double>(static_cast<long long>(s));
    const double f = s - j;
    first = static_cast<long long>(j);
    w[0] = 1.0 - f;
    w[1] = f;
  } else {
    const double j = static_cast<double>(static_cast<long long>(s + 0.5));
    const double d = s - j;
    first = static_cast<long long>(j) - 1;
    w[0] = 0.5 * (0.5 - d) * (0.5 - d);
    w[1] = 0.75 - d * d;
    w[2] = 0.5 * (0.5 + d) * (0.5 + d);
  }
}

// The image of a stencil's first node that lies in the block with its guards ([lo, hi]), or
// false: the stencil [first, first + order] moved beyond the guards.
PIC_ALWAYS_INLINE bool image(long long& first, int order, long long lo, long long hi, long long n) {
  if (first < lo) first += n;
  if (first + order > hi) first -= n;
  return first >= lo && first + order <= hi;
}

// A position moved within a box length back into [0, L), else kernels::periodic's answer; as
// the arrays store it (kernels::inside_as: a float stays below L).
template <typename R>
PIC_ALWAYS_INLINE R wrapped(double p, double l) {
  p = p < 0.0 ? p + l : p;
  p = p >= l ? p - l : p;
  if (!(p >= 0.0 && p < l)) [[unlikely]]  // moved more than a box length (or not finite)
    p = kernels::periodic(p, l);
  return kernels::inside_as<R>(p, l);
}

// Whether a new position lies outside the step's stay region (NaN included).
PIC_ALWAYS_INLINE bool leaves(const StepGeometry& s, double x, double y, double z, int dim) {
  const bool in_x = x >= s.stay_lo[0] && x <= s.stay_hi[0];
  const bool in_y = dim == 1 || (y >= s.stay_lo[1] && y <= s.stay_hi[1]);
  const bool in_z = dim < 3 || (z >= s.stay_lo[2] && z <= s.stay_hi[2]);
  return !(in_x && in_y && in_z);
}

// A particle's coordinate along an axis as the loops take it: the stored one, or with cells
// (Cells) the cell plus the offset, in cell units (exact in double).
template <bool Cells, typename R>
PIC_ALWAYS_INLINE double coordinate(const R* p, const std::int32_t* cell, long long i) {
  if constexpr (Cells)
    return static_cast<double>(cell[i]) + static_cast<double>(p[i]);
  else
    return static_cast<double>(p[i]);
}

// The move along an axis: x += dt v wrapped into [0, l) and stored (wrapped), or with cells,
// the cell and offset of (cell + offset) + step wrapped into [0, cells) (kernels::move_along's
// arithmetic, bit for bit).
template <bool Cells, typename R>
PIC_ALWAYS_INLINE void move(R* p, std::int32_t* cell, long long i, double dt, double v, double l) {
  if constexpr (Cells)
    kernels::put_in_cell(
        wrapped<double>(static_cast<double>(cell[i]) + static_cast<double>(p[i]) + dt * v, l),
        cell[i], p[i]);
  else
    p[i] = wrapped<R>(p[i] + dt * v, l);
}

// The first node of the stencil of a particle's cell (node (fx, fy[, fz]) of the whole grid) in
// the guarded grid: j's stride is 1 in 2D, `col` in 3D.
template <int Dim>
PIC_ALWAYS_INLINE long long node_index(const StepGeometry& s, long long fx, long long fy,
                                       long long fz) {
  if constexpr (Dim == 3)
    return s.base + fx * s.row + fy * s.col + fz;
  else
    return s.base + fx * s.row + fy;
}

// A particle's stencil along each axis of the grid: first nodes and weights (the axes past the
// dimension: node 0, no weights).
template <int Order>
struct Stencils {
  long long fx = 0, fy = 0, fz = 0;
  double ax[Order + 1], ay[Order + 1] = {}, az[Order + 1] = {};
};
template <int Dim, int Order>
PIC_ALWAYS_INLINE Stencils<Order> stencils_at(double sx, double sy, double sz) {
  Stencils<Order> st;
  axis<Order>(sx, st.fx, st.ax);
  if constexpr (Dim >= 2) axis<Order>(sy, st.fy, st.ay);
  if constexpr (Dim == 3) axis<Order>(sz, st.fz, st.az);
  return st;
}

// The deposit of the particle at (px, py, pz) into `ne` (a double or int64 grid): false when
// its image lies beyond the guards.
template <int Dim, int Order, typename G>
PIC_ALWAYS_INLINE bool deposit_one(const StepGeometry& s, double px, double py, double pz,
                                   G* __restrict ne) {
  constexpr int P = Order + 1;
  auto [fx, fy, fz, ax, ay, az] =
      stencils_at<Dim, Order>(px * s.inv_dx, py * s.inv_dy, pz * s.inv_dz);
  if (!s.whole_box) {
    if (!image(fx, Order, s.i_lo, s.i_hi, s.nx)) return false;
    if constexpr (Dim >= 2)
      if (!image(fy, Order, s.j_lo, s.j_hi, s.ny)) return false;
    if constexpr (Dim == 3)
      if (!image(fz, Order, s.k_lo, s.k_hi, s.nz)) return false;
  }
  const long long d0 = node_index<Dim>(s, fx, fy, fz);
  if constexpr (Dim == 3) {
    // The weights in kernels::for_each_node's order: (w_x w_y) w_z.
#pragma GCC unroll 3
    for (int a = 0; a < P; ++a)
#pragma GCC unroll 3
      for (int b = 0; b < P; ++b) {
        const double wab = ax[a] * ay[b];
        G* __restrict line = ne + d0 + a * s.row + b * s.col;
#pragma GCC unroll 3
        for (int c = 0; c < P; ++c) {
          if constexpr (std::is_same_v<G, double>)
            line[c] += s.charge * (wab * az[c]);
          else
            line[c] += kernels::quanta(wab * az[c]);
        }
      }
  } else if constexpr (Dim == 1) {
#pragma GCC unroll 3
    for (int a = 0; a < P; ++a) {
      if constexpr (std::is_same_v<G, double>)
        ne[d0 + a] += s.charge * ax[a];
      else
        ne[d0 + a] += kernels::quanta(ax[a]);
    }
  } else {
#pragma GCC unroll 3
    for (int a = 0; a < P; ++a)
#pragma GCC unroll 3
      for (int b = 0; b < P; ++b) {
        if constexpr (std::is_same_v<G, double>)
          ne[d0 + a * s.row + b] += s.charge * (ax[a] * ay[b]);
        else
          ne[d0 + a * s.row + b] += kernels::quanta(ax[a] * ay[b]);
      }
  }
  return true;
}

// Particles [begin, end) in chunks of kChunk: the gather, push and move of a chunk in one plain
// loop, then its deposit in a second one, while the chunk's positions are in L1 (a deposit
// inside the first loop would hold it up with the stores and reloads of one node, particle
// after particle).
constexpr long long kChunk = 2048;
template <int Dim, int Order, bool Cells, typename R, typename G>
PIC_ALWAYS_INLINE Sums range(const Step<R>& s, long long begin, long long end, G* __restrict ne) {
  constexpr int P = Order + 1;
  R* __restrict x = s.x;
  R* __restrict y = s.y;
  R* __restrict z = s.z;
  std::int32_t* __restrict cx = s.cx;
  std::int32_t* __restrict cy = s.cy;
  std::int32_t* __restrict cz = s.cz;
  // The moves' factors of v: dt, or dt over the cell size with cells.
  const double mx = Cells ? s.cell_dt[0] : s.dt, my = Cells ? s.cell_dt[1] : s.dt,
               mz = Cells ? s.cell_dt[2] : s.dt;
  R* __restrict vx = s.vx;
  R* __restrict vy = s.vy;
  R* __restrict vz = s.vz;
  assert(s.exy != nullptr || begin == end);  // (null for the float step, which runs none here)
  const double* __restrict exy = s.exy;
  const double inv_dx = s.inv_dx, inv_dy = s.inv_dy, inv_dz = s.inv_dz, dv = s.dv;
  const long long row = s.row, col = s.col;
  Sums sums;
  for (long long c0 = begin; c0 < end; c0 += kChunk) {
    const long long c1 = std::min(end, c0 + kChunk);
    for (long long i = c0; i < c1; ++i) {
      // The field at x_n, summed in kernels::for_each_node's order.
      const auto [fx, fy, fz, ax, ay, az] =
          stencils_at<Dim, Order>(coordinate<Cells>(x, cx, i) * inv_dx,
                                  Dim >= 2 ? coordinate<Cells>(y, cy, i) * inv_dy : 0.0,
                                  Dim == 3 ? coordinate<Cells>(z, cz, i) * inv_dz : 0.0);
      const long long b0 = node_index<Dim>(s, fx, fy, fz);
      double e0 = 0.0, e1 = 0.0, e2 = 0.0;
      if constexpr (Dim == 3) {
#pragma GCC unroll 3
        for (int a = 0; a < P; ++a)
#pragma GCC unroll 3
          for (int b = 0; b < P; ++b) {
            const double wab = ax[a] * ay[b];
            const double* __restrict line = exy + 3 * (b0 + a * row + b * col);
#pragma GCC unroll 3
            for (int c = 0; c < P; ++c) {
              const double w = wab * az[c];
              e0 += w * line[3 * c];
              e1 += w * line[3 * c + 1];
              e2 += w * line[3 * c + 2];
            }
          }
      } else if constexpr (Dim == 1) {
#pragma GCC unroll 3
        for (int a = 0; a < P; ++a) e0 += ax[a] * exy[b0 + a];
      } else {
#pragma GCC unroll 3
        for (int a = 0; a < P; ++a)
#pragma GCC unroll 3
          for (int b = 0; b < P; ++b) {
            const double w = ax[a] * ay[b];
            const long long c = 2 * (b0 + a * row + b);
            e0 += w * exy[c];
            e1 += w * exy[c + 1];
          }
      }
      // The push and the move.
      const double ox = vx[i];
      const double nx = ox + dv * e0;
      vx[i] = nx;
      double energy = ox * nx;
      move<Cells>(x, cx, i, mx, nx, s.lx);
      if constexpr (Dim >= 2) {
        const double oy = vy[i];
        const double ny = oy + dv * e1;
        vy[i] = ny;
        energy += oy * ny;
        move<Cells>(y, cy, i, my, ny, s.ly);
      }
      if constexpr (Dim == 3) {
        const double oz = vz[i];
        const double nz = oz + dv * e2;
        vz[i] = nz;
        energy += oz * nz;
        move<Cells>(z, cz, i, mz, nz, s.lz);
      }
      if (s.energies != nullptr)
        s.energies[i] = s.half_mass * energy;
      else
        sums.energy += energy;
      sums.momentum += nx;
      if (s.leavers != nullptr) [[unlikely]]  // (with cells, the region in cell units)
        if (leaves(s, coordinate<Cells>(x, cx, i), Dim >= 2 ? coordinate<Cells>(y, cy, i) : 0.0,
                   Dim == 3 ? coordinate<Cells>(z, cz, i) : 0.0, Dim))
          s.leavers->push_back(i);
    }
    // The charge at x_{n+1}.
    for (long long i = c0; i < c1; ++i)
      if (!deposit_one<Dim, Order>(s, coordinate<Cells>(x, cx, i),
                                   Dim >= 2 ? coordinate<Cells>(y, cy, i) : 0.0,
                                   Dim == 3 ? coordinate<Cells>(z, cz, i) : 0.0, ne)) [[unlikely]]
        ++sums.undeposited;
  }
  return sums;
}

// The scalar loop of a dimension and order, compiled for the host's x86-64 levels.
template <int Dim, int Order, bool Cells, typename R, typename G>
CUNUMPY_HOST_CLONES Sums scalar_range(const Step<R>& s, long long b, long long e, G* ne) {
  return range<Dim, Order, Cells>(s, b, e, ne);
}

// f(Dim, Order, Cells) as integral constants, for the step's dimension, order and particles
// (cells: mixed precision's cells and offsets).
template <typename R, typename F>
decltype(auto) by_shape(const StepGeometry& s, const R* cx, F&& f) {
  using std::integral_constant;
  const auto order = [&](auto dim) -> decltype(auto) {
    const auto cells = [&](auto o) -> decltype(auto) {  // (double particles have none)
      if constexpr (std::is_same_v<R, double>)
        return f(dim, o, std::false_type{});
      else
        return cx != nullptr ? f(dim, o, std::true_type{}) : f(dim, o, std::false_type{});
    };
    return s.order == 1 ? cells(integral_constant<int, 1>{}) : cells(integral_constant<int, 2>{});
  };
  if (s.dim == 3) return order(integral_constant<int, 3>{});
  if (s.dim == 2) return order(integral_constant<int, 2>{});
  return order(integral_constant<int, 1>{});
}

// The float step's loops run (float particles, StepGeometry::floats on a 2D or 3D CIC step
// with real grids): 2D deposits into cell sums.
template <typename R>
bool float_lanes(const Step<R>& s) {
  return std::is_same_v<R, float> && s.floats && !s.integer && s.dim == 2 && s.order == 1;
}
template <typename R>
bool float_lanes3(const Step<R>& s) {
  return std::is_same_v<R, float> && s.floats && !s.integer && s.dim == 3 && s.order == 1;
}

// Whole vectors of particles first (2D and 3D CIC: the float lanes take every particle, the
// double vectors stop before the last partial vector), the rest by the scalar loop.
template <typename R, typename G>
Sums range_of(const Step<R>& s, long long begin, long long end, G* ne) {
  Sums v;
  if constexpr (std::is_same_v<R, float> && std::is_same_v<G, double>) {
    if (float_lanes(s)) {
      begin = cic_floats(s, begin, end, ne, v);
      assert(begin == end);  // the rest would be deposited into nodes, not cell sums
    }
    if (float_lanes3(s)) begin = cic3_floats(s, begin, end, ne, v);
  } else {
    if (s.vectors && s.cx == nullptr)  // (not for cells: mixed precision's integer grids)
      begin = s.dim == 3 ? cic3_vectors(s, begin, end, ne, v) : cic_vectors(s, begin, end, ne, v);
  }
  const Sums rest = by_shape(s, s.cx, [&](auto dim, auto order, auto cells) {
    return scalar_range<dim(), order(), cells()>(s, begin, end, ne);
  });
  return Sums{v.energy + rest.energy, v.momentum + rest.momentum, v.undeposited + rest.undeposited};
}

template <int Dim, int Order, bool Cells, typename R, typename G>
long long deposit_range(const Step<R>& s, long long begin, long long end, G* ne) {
  long long missed = 0;
  for (long long i = begin; i < end; ++i)
    if (!deposit_one<Dim, Order>(s, coordinate<Cells>(s.x, s.cx, i),
                                 Dim >= 2 ? coordinate<Cells>(s.y, s.cy, i) : 0.0,
                                 Dim == 3 ? coordinate<Cells>(s.z, s.cz, i) : 0.0, ne))
      ++missed;
  return missed;
}

// The deposit alone of float particles with Step::floats: float_stencil's fractions (mixed
// precision: the stored cells and offsets), deposited as the float lanes deposit them after the
// move: into cell sums in 2D (float_cic2_weights, in float_deposit_order), into nodes in 3D
// (float_cic3_weights).
template <int Dim>
long long deposit_range_floats(const Step<float>& s, long long begin, long long end, double* ne) {
  const FloatStep3 f = float_step3(s);
  const float inv[3] = {f.inv_dx, f.inv_dy, f.inv_dz};
  float* const at[3] = {s.x, s.y, s.z};
  std::int32_t* const cells[3] = {s.cx, s.cy, s.cz};
  const long long lo[3] = {s.i_lo, s.j_lo, s.k_lo}, hi[3] = {s.i_hi, s.j_hi, s.k_hi},
                  n[3] = {s.nx, s.ny, s.nz};
  // A particle's first node (-1: beyond the guards) and its weights.
  const auto stencil = [&](long long i, double* w) {
    long long first[3] = {0, 0, 0};
    float g[3] = {0.0f, 0.0f, 0.0f};
    bool reach = true;
    for (int a = 0; a < Dim; ++a) {
      if (s.cx != nullptr) {  // mixed precision: the cell and the offset in it
        first[a] = cells[a][i];
        g[a] = at[a][i];
      } else {
        g[a] = float_stencil(at[a][i], inv[a], first[a]);
      }
      reach = reach && (s.whole_box || image(first[a], 1, lo[a], hi[a], n[a]));
    }
    if (!reach) return -1LL;
    if constexpr (Dim == 2) {
      const FloatCic2Weights c = float_cic2_weights(s.charge, g[0], g[1]);
      w[0] = c.w00;
      w[1] = c.w01;
      w[2] = c.w10;
      w[3] = c.w11;
    } else {
      float_cic3_weights(s.charge, g[0], g[1], g[2], w);
    }
    return node_index<Dim>(s, first[0], first[1], first[2]);
  };
  long long missed = 0;
  if constexpr (Dim == 3) {
    for (long long i = begin; i < end; ++i) {
      double w[8];
      const long long c = stencil(i, w);
      if (c < 0)
        ++missed;
      else
        add_float_cic3(ne, c, s.row, s.col, w);
    }
  } else {
    std::vector<long long> node(kFloatChunk);
    std::vector<double> weights(4 * kFloatChunk);
    for (long long i = begin; i < end; i += kFloatChunk) {
      const long long m = std::min(kFloatChunk, end - i);
      for (long long k = 0; k < m; ++k) {
        node[k] = stencil(i + k, weights.data() + 4 * k);
        if (node[k] < 0) ++missed;
      }
      for (long long t = 0; t < m; ++t) {
        const long long k = float_deposit_order(t, m);
        if (node[k] >= 0) add_float_cell(ne, node[k], weights.data() + 4 * k);
      }
    }
  }
  return missed;
}

template <typename R, typename G>
long long deposit_of(const Step<R>& s, long long begin, long long end, G* ne) {
  // The float step (single and mixed precision): as its loops deposit after the move.
  if constexpr (std::is_same_v<R, float> && std::is_same_v<G, double>) {
    if (float_lanes(s)) return deposit_range_floats<2>(s, begin, end, ne);
    if (float_lanes3(s)) return deposit_range_floats<3>(s, begin, end, ne);
  }
  return by_shape(s, s.cx, [&](auto dim, auto order, auto cells) {
    return deposit_range<dim(), order(), cells()>(s, begin, end, ne);
  });
}

int team_size(const ThreadGrids& g) {
  return static_cast<int>(std::max(g.real.size(), g.integer.size()));
}

}  // namespace

template <typename Real>
Sums push_and_deposit(const Step<Real>& s, ThreadGrids& grids) {
  grids.use_cells(float_lanes(s), s.row);
  const int threads = team_size(grids);
  std::vector<Sums> parts(static_cast<std::size_t>(threads));
  std::vector<std::vector<std::int64_t>> lists(s.leavers != nullptr ? threads : 0);
#pragma omp parallel num_threads(threads)
  {
    int t = 0;
#if defined(_OPENMP)
    t = omp_get_thread_num();
#endif
    const auto [begin, end] = cunumpy::omp_thread_range(s.n);
    if (begin < end) {
      const auto k = static_cast<std::size_t>(t);
      Step<Real> mine = s;
      if (s.leavers != nullptr) mine.leavers = &lists[k];
      parts[k] = s.integer ? range_of(mine, begin, end, grids.integer[k].data())
                           : range_of(mine, begin, end, grids.real[k].data());
    }
  }
  if (s.leavers != nullptr) {  // the threads' ranges are in increasing order
    s.leavers->clear();
    for (const auto& list : lists) s.leavers->insert(s.leavers->end(), list.begin(), list.end());
  }
  Sums total;
  for (const Sums& p : parts) {
    total.energy += p.energy;
    total.momentum += p.momentum;
    total.undeposited += p.undeposited;
  }
  return total;
}

template <typename Real>
void deposit(const Step<Real>& s, ThreadGrids& grids) {
  grids.use_cells(float_lanes(s), s.row);
  const int threads = team_size(grids);
  long long missed = 0;
#pragma omp parallel num_threads(threads) reduction(+ : missed)
  {
    int t = 0;
#if defined(_OPENMP)
    t = omp_get_thread_num();
#endif
    const auto [begin, end] = cunumpy::omp_thread_range(s.n);
    const auto k = static_cast<std::size_t>(t);
    missed += s.integer ? deposit_of(s, begin, end, grids.integer[k].data())
                        : deposit_of(s, begin, end, grids.real[k].data());
  }
  if (missed > 0)
    throw cunumpy::Error("pic: " + std::to_string(missed) +
                         " particle(s) lie outside this rank's block and its guards after the "
                         "migration (a bug of the layout)");
}

template Sums push_and_deposit<double>(const Step<double>&, ThreadGrids&);
template Sums push_and_deposit<float>(const Step<float>&, ThreadGrids&);
template void deposit<double>(const Step<double>&, ThreadGrids&);
template void deposit<float>(const Step<float>&, ThreadGrids&);

namespace {
// [lo, hi] rounded inwards to floats: a float inside them lies inside [lo, hi] in double.
void inward(double lo, double hi, float& flo, float& fhi) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  flo = static_cast<float>(lo);
  fhi = static_cast<float>(hi);
  if (static_cast<double>(flo) < lo) flo = std::nextafter(flo, inf);
  if (static_cast<double>(fhi) > hi) fhi = std::nextafter(fhi, -inf);
}
}  // namespace

FloatStep float_step(const StepGeometry& s) {
  FloatStep f{};
  f.inv_dx = static_cast<float>(s.inv_dx);
  f.inv_dy = static_cast<float>(s.inv_dy);
  f.lx = static_cast<float>(s.lx);
  f.ly = static_cast<float>(s.ly);
  f.dv = static_cast<float>(s.dv);
  f.dt = static_cast<float>(s.dt);
  f.below_lx = kernels::inside_as<float>(std::nextafter(s.lx, 0.0), s.lx);
  f.below_ly = kernels::inside_as<float>(std::nextafter(s.ly, 0.0), s.ly);
  for (int a = 0; a < 2; ++a) inward(s.stay_lo[a], s.stay_hi[a], f.stay_lo[a], f.stay_hi[a]);
  return f;
}

FloatStep3 float_step3(const StepGeometry& s) {
  FloatStep3 f{};
  static_cast<FloatStep&>(f) = float_step(s);
  f.inv_dz = static_cast<float>(s.inv_dz);
  f.lz = static_cast<float>(s.lz);
  f.below_lz = kernels::inside_as<float>(std::nextafter(s.lz, 0.0), s.lz);
  inward(s.stay_lo[2], s.stay_hi[2], f.stay_lo_z, f.stay_hi_z);
  return f;
}

float float_periodic(float p, float lf, double l) {
  if (p >= 0.0f && p < lf) return p;
  return kernels::periodic_as<float>(static_cast<double>(p), l);
}

namespace {
// fold's row i of nodes from the cell sums gs[0, count) (node_from_cells, summed grid after
// grid from 0.0), the nodes of rows past the first and columns past the first without a test.
CUNUMPY_HOST_CLONES void nodes_from_cells(double* const* gs, std::size_t count, long long i,
                                          long long row, double* ne) {
  const long long c0 = i * row;
  for (long long j = 0; j < (i == 0 ? row : 1); ++j) {
    double acc = 0.0;
    for (std::size_t t = 0; t < count; ++t) acc += node_from_cells(gs[t], i, j, row);
    ne[c0 + j] = acc;
  }
  if (i == 0) return;
  double* __restrict out = ne + c0;
  if (count == 1) {
    const double* __restrict q = gs[0] + 4 * c0;
    const double* __restrict b = q - 4 * row;  // the row of cells below
    for (long long j = 1; j < row; ++j)
      out[j] = 0.0 + (((q[4 * j] + q[4 * j - 3]) + b[4 * j + 2]) + b[4 * j - 1]);
    return;
  }
  for (long long j = 1; j < row; ++j) {
    double acc = 0.0;
    for (std::size_t t = 0; t < count; ++t) {
      const double* q = gs[t] + 4 * c0;
      const double* b = q - 4 * row;
      acc += ((q[4 * j] + q[4 * j - 3]) + b[4 * j + 2]) + b[4 * j - 1];
    }
    out[j] = acc;
  }
}
}  // namespace

void fold(ThreadGrids& grids, long long nodes, double* ne) {
  // The grids' pointers hoisted out of the loops, one loop per kind of grid (integers, cell
  // sums, node sums) and, for node sums, one for a single grid (no test of either per node;
  // it vectorises).  Each node's sum in grid order, from 0.0 (so -0.0 sums give 0.0 as before).
  if (!grids.integer.empty()) {
    std::vector<std::int64_t*> g;
    for (auto& v : grids.integer) g.push_back(v.data());
    const auto count = g.size();
    std::int64_t* const* gs = g.data();
#pragma omp parallel for schedule(static)
    for (long long c = 0; c < nodes; ++c) {
      std::int64_t acc = 0;
      for (std::size_t t = 0; t < count; ++t) {
        acc += gs[t][c];
        gs[t][c] = 0;
      }
      ne[c] = static_cast<double>(acc);
    }
    return;
  }
  std::vector<double*> g;
  for (auto& v : grids.real) g.push_back(v.data());
  const auto count = g.size();
  double* const* gs = g.data();
  if (grids.cells) {
    // Each node's sum from its cells' entries (node_from_cells), grid after grid, a row of nodes
    // at a time; a row of cells is cleared once the next row of nodes is summed, by the thread
    // that sums it where that row is its own, after the others have read it where not.
    const long long row = grids.row, rows = nodes / row;
    const auto clear = [&](long long i) {
      for (std::size_t t = 0; t < count; ++t)
        std::fill(gs[t] + 4 * i * row, gs[t] + 4 * (i + 1) * row, 0.0);
    };
#pragma omp parallel
    {
      const auto [i0, i1] = cunumpy::omp_thread_range(rows);
      for (long long i = i0; i < i1; ++i) {
        nodes_from_cells(gs, count, i, row, ne);
        if (i > i0) clear(i - 1);
      }
#pragma omp barrier
      if (i1 > i0) clear(i1 - 1);
    }
    return;
  }
  if (count == 1) {
    double* const a = gs[0];
#pragma omp parallel for schedule(static)
    for (long long c = 0; c < nodes; ++c) {
      ne[c] = 0.0 + a[c];
      a[c] = 0.0;
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (long long c = 0; c < nodes; ++c) {
    double acc = 0.0;
    for (std::size_t t = 0; t < count; ++t) {
      acc += gs[t][c];
      gs[t][c] = 0.0;
    }
    ne[c] = acc;
  }
}

void interleave_fields(long long nodes, const double* ex, const double* ey, const double* ez,
                       std::vector<double>& exy) {
  const int per = 1 + (ey != nullptr ? 1 : 0) + (ez != nullptr ? 1 : 0);
  exy.resize(static_cast<std::size_t>(per * nodes));
  double* out = exy.data();
#pragma omp parallel for schedule(static)
  for (long long c = 0; c < nodes; ++c) {
    out[per * c] = ex[c];
    if (per >= 2) out[per * c + 1] = ey[c];
    if (per == 3) out[3 * c + 2] = ez[c];
  }
}

void fill_node_fields(long long nodes, const double* ex, const double* ey, const double* ez,
                      std::vector<float>& nodes32) {
  nodes32.resize(static_cast<std::size_t>(4 * nodes));
  float* out = nodes32.data();
#pragma omp parallel for schedule(static)
  for (long long c = 0; c < nodes; ++c) {
    out[4 * c] = static_cast<float>(ex[c]);
    out[4 * c + 1] = static_cast<float>(ey[c]);
    out[4 * c + 2] = static_cast<float>(ez[c]);
    out[4 * c + 3] = 0.0f;
  }
}

}  // namespace pic::host_step
