// The mini-app's kernel catalog and the host versions of its kernels (pic_catalog.hpp).
#include "pic_catalog.hpp"

#include <cstdlib>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "pic_kernels.hpp"

namespace pic {

namespace cn = cunumpy;

template <typename P>
void deposit_into_thread_grids(const kernels::Grid& grid, const kernels::Positions<P>& pos,
                               double* out, long long cells, double q, long long n) {
  int threads = 1;
#if defined(_OPENMP)
  threads = omp_get_max_threads();
#endif
  // Reused from call to call (the kernel runs once per step); one caller at a time.
  static std::vector<std::vector<double>> grids;
  grids.resize(static_cast<std::size_t>(threads));
  for (auto& g : grids) g.assign(static_cast<std::size_t>(cells), 0.0);
#pragma omp parallel num_threads(threads)
  {
    int t = 0, team = 1;
#if defined(_OPENMP)
    t = omp_get_thread_num();
    team = omp_get_num_threads();
#endif
    double* g = grids[static_cast<std::size_t>(t)].data();
    const auto [begin, end] = cn::split_range(n, t, team);
    for (long long i = begin; i < end; ++i)
      kernels::for_each_node(grid, pos, i, [&](long long c, double w, int) { g[c] += q * w; });
#pragma omp barrier
#pragma omp for schedule(static)
    for (long long c = 0; c < cells; ++c) {
      double acc = 0.0;
      for (int tt = 0; tt < threads; ++tt)
        acc += grids[static_cast<std::size_t>(tt)][static_cast<std::size_t>(c)];
      out[c] = acc;
    }
  }
}

template void deposit_into_thread_grids<double>(const kernels::Grid&,
                                                const kernels::Positions<double>&, double*,
                                                long long, double, long long);
template void deposit_into_thread_grids<float>(const kernels::Grid&,
                                               const kernels::Positions<float>&, double*, long long,
                                               double, long long);

namespace {
// The gathers' loop: the field at every particle of `pos` (OpenMP).
template <typename R>
void gather_all(const kernels::Grid& grid, const kernels::Positions<R>& pos, const Vec& ex,
                const Vec& ey, const Vec& ez, const Vec& ex_p, const Vec& ey_p, const Vec& ez_p,
                int dim, long long n) {
  const double* fx = ex.data();
  const double* fy = ey.data();
  const double* fz = ez.data();
  double* ox = ex_p.data();
  double* oy = ey_p.data();
  double* oz = ez_p.data();
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i)
    kernels::gather_particle(grid, pos, fx, fy, fz, ox, oy, oz, dim, i);
}
}  // namespace

template <typename R>
void deposit_host(const Particle<R>& x, const Particle<R>& y, const Particle<R>& z, const Vec& ne,
                  long long x0, long long y0, long long z0, long long guard, long long row,
                  long long col, int order, int dim, double inv_dx, double inv_dy, double inv_dz,
                  double q, long long n) {
  deposit_into_thread_grids(
      kernels::local_grid_of(order, dim, inv_dx, inv_dy, inv_dz, x0, y0, z0, guard, row, col),
      kernels::Positions<R>{{x.data(), y.data(), z.data()}, {nullptr, nullptr, nullptr}}, ne.data(),
      ne.size(), q, n);
}

template <typename R>
void gather_host(const Particle<R>& x, const Particle<R>& y, const Particle<R>& z, const Vec& ex,
                 const Vec& ey, const Vec& ez, const Vec& ex_p, const Vec& ey_p, const Vec& ez_p,
                 long long x0, long long y0, long long z0, long long guard, long long row,
                 long long col, int order, int dim, double inv_dx, double inv_dy, double inv_dz,
                 long long n) {
  gather_all(
      kernels::local_grid_of(order, dim, inv_dx, inv_dy, inv_dz, x0, y0, z0, guard, row, col),
      kernels::Positions<R>{{x.data(), y.data(), z.data()}, {nullptr, nullptr, nullptr}}, ex, ey,
      ez, ex_p, ey_p, ez_p, dim, n);
}

template <typename R>
void push_host(const Particle<R>& x, const Particle<R>& y, const Particle<R>& z,
               const Particle<R>& vx, const Particle<R>& vy, const Particle<R>& vz, const Vec& ex_p,
               const Vec& ey_p, const Vec& ez_p, const Vec& energy, double dv, double dt, double lx,
               double ly, double lz, double mass, bool move, int dim, long long n) {
  R* const p[3] = {x.data(), y.data(), z.data()};
  R* const v[3] = {vx.data(), vy.data(), vz.data()};
  const double* const f[3] = {ex_p.data(), ey_p.data(), ez_p.data()};
  const double l[3] = {lx, ly, lz};
  double* e = energy.data();
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i)
    e[i] = kernels::push_particle(p, v, f, l, dv, dt, mass, move, dim, i);
}

#define PIC_CATALOG_HOST(R)                                                                        \
  template void deposit_host<R>(const Particle<R>&, const Particle<R>&, const Particle<R>&,        \
                                const Vec&, long long, long long, long long, long long, long long, \
                                long long, int, int, double, double, double, double, long long);   \
  template void gather_host<R>(const Particle<R>&, const Particle<R>&, const Particle<R>&,         \
                               const Vec&, const Vec&, const Vec&, const Vec&, const Vec&,         \
                               const Vec&, long long, long long, long long, long long, long long,  \
                               long long, int, int, double, double, double, long long);            \
  template void push_host<R>(const Particle<R>&, const Particle<R>&, const Particle<R>&,           \
                             const Particle<R>&, const Particle<R>&, const Particle<R>&,           \
                             const Vec&, const Vec&, const Vec&, const Vec&, double, double,       \
                             double, double, double, double, bool, int, long long);
PIC_CATALOG_HOST(double)
PIC_CATALOG_HOST(float)
#undef PIC_CATALOG_HOST

namespace {
// The mixed kernels' positions: offsets in cells (axes past the dimension given as x and cx).
kernels::Positions<float> in_cells(const Particle<float>& x, const Particle<float>& y,
                                   const Particle<float>& z, const Cells& cx, const Cells& cy,
                                   const Cells& cz) {
  return {{x.data(), y.data(), z.data()}, {cx.data(), cy.data(), cz.data()}};
}
}  // namespace

void deposit_mixed_host(const Particle<float>& x, const Particle<float>& y,
                        const Particle<float>& z, const Cells& cx, const Cells& cy, const Cells& cz,
                        const Vec& ne, long long x0, long long y0, long long z0, long long guard,
                        long long row, long long col, int order, int dim, double q, long long n) {
  deposit_into_thread_grids(
      kernels::local_grid_of(order, dim, 1.0, 1.0, 1.0, x0, y0, z0, guard, row, col),
      in_cells(x, y, z, cx, cy, cz), ne.data(), ne.size(), q, n);
}

void gather_mixed_host(const Particle<float>& x, const Particle<float>& y, const Particle<float>& z,
                       const Cells& cx, const Cells& cy, const Cells& cz, const Vec& ex,
                       const Vec& ey, const Vec& ez, const Vec& ex_p, const Vec& ey_p,
                       const Vec& ez_p, long long x0, long long y0, long long z0, long long guard,
                       long long row, long long col, int order, int dim, long long n) {
  gather_all(kernels::local_grid_of(order, dim, 1.0, 1.0, 1.0, x0, y0, z0, guard, row, col),
             in_cells(x, y, z, cx, cy, cz), ex, ey, ez, ex_p, ey_p, ez_p, dim, n);
}

void push_mixed_host(const Particle<float>& x, const Particle<float>& y, const Particle<float>& z,
                     const Cells& cx, const Cells& cy, const Cells& cz, const Particle<float>& vx,
                     const Particle<float>& vy, const Particle<float>& vz, const Vec& ex_p,
                     const Vec& ey_p, const Vec& ez_p, const Vec& energy, double dv, double dt_x,
                     double dt_y, double dt_z, double nx, double ny, double nz, double mass,
                     bool move, int dim, long long n) {
  float* const p[3] = {x.data(), y.data(), z.data()};
  std::int32_t* const c[3] = {cx.data(), cy.data(), cz.data()};
  float* const v[3] = {vx.data(), vy.data(), vz.data()};
  const double* const f[3] = {ex_p.data(), ey_p.data(), ez_p.data()};
  const double cells[3] = {nx, ny, nz};
  const double steps[3] = {dt_x, dt_y, dt_z};
  double* e = energy.data();
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i)
    e[i] = kernels::push_particle(p, c, v, f, cells, steps, dv, mass, move, dim, i);
}

std::filesystem::path kernel_folder() {
  if (const char* env = std::getenv("CUNUMPY_PIC_KERNELS"); env != nullptr && *env != '\0')
    return env;
  return PIC_KERNEL_DIR;
}

std::vector<std::filesystem::path> kernel_include_dirs() {
  // pic_kernels.hpp: beside a relocated kernel folder, else the source tree's.
  return {kernel_folder().parent_path(), PIC_SOURCE_DIR};
}

cn::KernelCatalog& kernel_catalog() {
  static cn::KernelCatalog* catalog = [] {
    cn::CatalogOptions o;
    o.cuda_folder = kernel_folder();
    o.cuda.block_size = 256;
    o.cuda.include_dirs = kernel_include_dirs();
    auto* c = new cn::KernelCatalog(o);
    c->add("deposit", &deposit_host<double>);
    c->add("gather", &gather_host<double>);
    c->add("push", &push_host<double>);
    c->add("deposit_single", &deposit_host<float>);
    c->add("gather_single", &gather_host<float>);
    c->add("push_single", &push_host<float>);
    c->add("deposit_mixed", &deposit_mixed_host);
    c->add("gather_mixed", &gather_mixed_host);
    c->add("push_mixed", &push_mixed_host);
    return c;
  }();
  return *catalog;
}

}  // namespace pic
