// The host's one-pass particle step (host_step.hpp).
#include "host_step.hpp"

#include <algorithm>

#include <cunumpy/parallel.hpp>

#include "host_step_simd.hpp"
#include "pic_kernels.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

// The scalar loops are compiled for AVX-512, AVX2 and the baseline on x86-64, chosen at run
// time by the CPU (CIC runs whole vectors of particles through host_step_simd.cpp first).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define PIC_HOST_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PIC_HOST_CLONES
#endif
#if defined(__GNUC__)
#define PIC_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define PIC_ALWAYS_INLINE inline
#endif

namespace pic::host_step {

GuardedGrid guarded(long long nx, long long ny) {
  return GuardedGrid{nx, ny, ny + 3};
}

namespace {

// One axis of kernels::stencil for s >= 0 (positions are in [0, L)), where truncation is
// floor: the same first node and weights, bit for bit.
template <int Order>
PIC_ALWAYS_INLINE void axis(double s, int& first, double (&w)[Order + 1]) {
  if constexpr (Order == 1) {
    const double j = static_cast<double>(static_cast<int>(s));
    const double f = s - j;
    first = static_cast<int>(j);
    w[0] = 1.0 - f;
    w[1] = f;
  } else {
    const double j = static_cast<double>(static_cast<int>(s + 0.5));
    const double d = s - j;
    first = static_cast<int>(j) - 1;
    w[0] = 0.5 * (0.5 - d) * (0.5 - d);
    w[1] = 0.75 - d * d;
    w[2] = 0.5 * (0.5 + d) * (0.5 + d);
  }
}

// Particles [begin, end) in chunks of kChunk: the gather, push and move of a chunk in one plain
// loop, then its deposit in a second one, while the chunk's positions are in L1.  Measured on
// the 512 x 512, 36 particles-per-cell problem (scripts/compare_picksc.sh; the interleaved
// minima of a test harness): the deposit inside the first loop, 1.2x slower (its stores and
// reloads of one node, particle after particle, hold up the rest of the loop); blocks with
// vectorised gathers and stencils kept in small arrays, 1.5x slower on AVX-512 and AVX2 (the
// gathers emulated by scalar loads); a run of particles sharing a node summed in registers
// before one store, 1.7x slower (its branch mispredicts); two density grids alternating by
// particle, 2% faster (not kept).
constexpr long long kChunk = 2048;
template <int Order>
PIC_ALWAYS_INLINE Sums range(const GuardedGrid& g, const Step& s, long long begin, long long end,
                             double* __restrict ne) {
  constexpr int P = Order + 1;
  const int row = static_cast<int>(g.row);
  double* __restrict x = s.x;
  double* __restrict y = s.y;
  double* __restrict vx = s.vx;
  double* __restrict vy = s.vy;
  const double* __restrict exy = s.exy;
  const double inv_dx = s.inv_dx, inv_dy = s.inv_dy, lx = s.lx, ly = s.ly, dv = s.dv, dt = s.dt,
               q = s.charge;
  double energy = 0.0, momentum = 0.0;
  for (long long c0 = begin; c0 < end; c0 += kChunk) {
    const long long c1 = std::min(end, c0 + kChunk);
    for (long long i = c0; i < c1; ++i) {
      // The field at x_n, summed in kernels::for_each_node's order.
      int fx, fy;
      double ax[P], ay[P];
      axis<Order>(x[i] * inv_dx, fx, ax);
      axis<Order>(y[i] * inv_dy, fy, ay);
      const int b0 = (fx + 1) * row + (fy + 1);
      double e0 = 0.0, e1 = 0.0;
#pragma GCC unroll 3
      for (int a = 0; a < P; ++a)
#pragma GCC unroll 3
        for (int b = 0; b < P; ++b) {
          const double w = ax[a] * ay[b];
          const int c = 2 * (b0 + a * row + b);
          e0 += w * exy[c];
          e1 += w * exy[c + 1];
        }
      // The push and the move (kernels::periodic's result for a move under a box length).
      const double ox = vx[i], oy = vy[i];
      const double nx = ox + dv * e0, ny = oy + dv * e1;
      vx[i] = nx;
      vy[i] = ny;
      energy += ox * nx + oy * ny;
      momentum += nx;
      double px = x[i] + dt * nx, py = y[i] + dt * ny;
      px = px < 0.0 ? px + lx : px;
      px = px >= lx ? px - lx : px;
      py = py < 0.0 ? py + ly : py;
      py = py >= ly ? py - ly : py;
      if (!(px >= 0.0 && px < lx)) [[unlikely]]  // moved more than a box length
        px = kernels::periodic(px, lx);
      if (!(py >= 0.0 && py < ly)) [[unlikely]]
        py = kernels::periodic(py, ly);
      x[i] = px;
      y[i] = py;
    }
    // The charge at x_{n+1}.
    for (long long i = c0; i < c1; ++i) {
      int fx, fy;
      double ax[P], ay[P];
      axis<Order>(x[i] * inv_dx, fx, ax);
      axis<Order>(y[i] * inv_dy, fy, ay);
      const int d0 = (fx + 1) * row + (fy + 1);
#pragma GCC unroll 3
      for (int a = 0; a < P; ++a)
#pragma GCC unroll 3
        for (int b = 0; b < P; ++b) ne[d0 + a * row + b] += q * (ax[a] * ay[b]);
    }
  }
  return Sums{energy, momentum};
}

PIC_HOST_CLONES Sums range_cic(const GuardedGrid& g, const Step& s, long long begin, long long end,
                               double* ne) {
  return range<1>(g, s, begin, end, ne);
}

// Whole vectors of particles first (host_step_simd.cpp), the rest by the scalar loop.
Sums range_cic_vectors(const GuardedGrid& g, const Step& s, long long begin, long long end,
                       double* ne) {
  Sums v;
  if (s.cells != nullptr) begin = cic_vectors(g, s, s.cells, begin, end, ne, v);
  const Sums rest = range_cic(g, s, begin, end, ne);
  return Sums{v.energy + rest.energy, v.momentum + rest.momentum};
}
PIC_HOST_CLONES Sums range_tsc(const GuardedGrid& g, const Step& s, long long begin, long long end,
                               double* ne) {
  return range<2>(g, s, begin, end, ne);
}

}  // namespace

void fill_guarded_fields(const GuardedGrid& g, const double* ex, const double* ey,
                         std::vector<double>& exy) {
  exy.resize(static_cast<std::size_t>(2 * g.nodes()));
  double* out = exy.data();
  const long long nx = g.nx, ny = g.ny;
#pragma omp parallel for schedule(static)
  for (long long i = -1; i <= nx + 1; ++i) {
    const long long si = kernels::wrap(i, nx) * ny;
    for (long long j = -1; j <= ny + 1; ++j) {
      const long long c = 2 * g.at(i, j), from = si + kernels::wrap(j, ny);
      out[c] = ex[from];
      out[c + 1] = ey[from];
    }
  }
}

void fold_densities(const GuardedGrid& g, std::vector<std::vector<double>>& grids, double* ne) {
  const long long nx = g.nx, ny = g.ny;
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < nx; ++i) {
    // the guarded rows that are row i: i itself, and its images among -1, nx, nx + 1
    long long rows[3];
    int n_rows = 0;
    rows[n_rows++] = i;
    if (i - nx >= -1) rows[n_rows++] = i - nx;
    if (i + nx <= nx + 1) rows[n_rows++] = i + nx;
    for (long long j = 0; j < ny; ++j) {
      double acc = 0.0;
      for (const auto& grid : grids)
        for (int r = 0; r < n_rows; ++r) {
          const double* gr = grid.data() + g.at(rows[r], 0);
          acc += gr[j];
          if (j - ny >= -1) acc += gr[j - ny];
          if (j + ny <= ny + 1) acc += gr[j + ny];
        }
      ne[i * ny + j] = acc;
    }
  }
  for (auto& grid : grids) std::fill(grid.begin(), grid.end(), 0.0);
}

Sums push_and_deposit(const GuardedGrid& g, const Step& s,
                      std::vector<std::vector<double>>& grids) {
  std::vector<Sums> parts(grids.size());
#pragma omp parallel num_threads(static_cast <int>(grids.size()))
  {
    int t = 0;
#if defined(_OPENMP)
    t = omp_get_thread_num();
#endif
    const auto [begin, end] = cunumpy::detail::omp_thread_range(s.n);
    double* ne = grids[static_cast<std::size_t>(t)].data();
    if (begin < end)
      parts[static_cast<std::size_t>(t)] =
          s.order == 1 ? range_cic_vectors(g, s, begin, end, ne) : range_tsc(g, s, begin, end, ne);
  }
  Sums total;
  for (const Sums& p : parts) {
    total.energy += p.energy;
    total.momentum += p.momentum;
  }
  return total;
}

}  // namespace pic::host_step
