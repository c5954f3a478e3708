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

void deposit_into_thread_grids(const kernels::Grid& grid, const double* px, const double* py,
                               const double* pz, double* out, long long cells, double q,
                               long long n) {
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
      kernels::for_each_node(grid, px[i], py[i], pz[i],
                             [&](long long c, double w, int) { g[c] += q * w; });
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

void deposit_host(const Vec& x, const Vec& y, const Vec& ne, long long x0, long long y0,
                  long long guard, long long row, int order, bool two, double inv_dx, double inv_dy,
                  double q, long long n) {
  deposit_into_thread_grids(kernels::local_grid(order, two, inv_dx, inv_dy, x0, y0, guard, row),
                            x.data(), y.data(), x.data(), ne.data(), ne.size(), q, n);
}

void gather_host(const Vec& x, const Vec& y, const Vec& ex, const Vec& ey, const Vec& ex_p,
                 const Vec& ey_p, long long x0, long long y0, long long guard, long long row,
                 int order, bool two, double inv_dx, double inv_dy, long long n) {
  const kernels::Grid grid = kernels::local_grid(order, two, inv_dx, inv_dy, x0, y0, guard, row);
  const double* px = x.data();
  const double* py = y.data();
  const double* fx = ex.data();
  const double* fy = ey.data();
  double* ox = ex_p.data();
  double* oy = ey_p.data();
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i) {
    double e0 = 0.0, e1 = 0.0;
    kernels::for_each_node(grid, px[i], py[i], [&](long long c, double w, int) {
      e0 += w * fx[c];
      if (two) e1 += w * fy[c];
    });
    ox[i] = e0;
    if (two) oy[i] = e1;
  }
}

void push_host(const Vec& x, const Vec& y, const Vec& vx, const Vec& vy, const Vec& ex_p,
               const Vec& ey_p, const Vec& energy, double dv, double dt, double lx, double ly,
               double mass, bool move, bool two, long long n) {
  double* px = x.data();
  double* py = y.data();
  double* pvx = vx.data();
  double* pvy = vy.data();
  const double* fx = ex_p.data();
  const double* fy = ey_p.data();
  double* e = energy.data();
#pragma omp parallel for schedule(static)
  for (long long i = 0; i < n; ++i) {
    const double old_x = pvx[i];
    const double new_x = old_x + dv * fx[i];
    pvx[i] = new_x;
    double k = old_x * new_x;
    if (move) px[i] = kernels::periodic(px[i] + dt * new_x, lx);
    if (two) {
      const double old_y = pvy[i];
      const double new_y = old_y + dv * fy[i];
      pvy[i] = new_y;
      k += old_y * new_y;
      if (move) py[i] = kernels::periodic(py[i] + dt * new_y, ly);
    }
    e[i] = 0.5 * mass * k;
  }
}

std::filesystem::path kernel_folder() {
  if (const char* env = std::getenv("CUNUMPY_PIC_KERNELS"); env != nullptr && *env != '\0')
    return env;
  return PIC_KERNEL_DIR;
}

cn::KernelCatalog& kernel_catalog() {
  static cn::KernelCatalog* catalog = [] {
    cn::CatalogOptions o;
    o.cuda_folder = kernel_folder();
    o.cuda.block_size = 256;
    // pic_kernels.hpp: beside a relocated kernel folder, else the source tree's.
    o.cuda.include_dirs = {kernel_folder().parent_path(), PIC_SOURCE_DIR};
    auto* c = new cn::KernelCatalog(o);
    c->add("deposit", &deposit_host);
    c->add("gather", &gather_host);
    c->add("push", &push_host);
    return c;
  }();
  return *catalog;
}

}  // namespace pic
