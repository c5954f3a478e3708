// Writes an openPMD series from every rank (2D mesh blocks of a CartesianDecomposition and
// each rank's particles) for check_series.py to read back with openPMD-api, h5py and the
// validator.  Values are functions of the global index, so the reader knows what to expect:
//   rho(i, j) = i * 1000 + j,  E_x = rho + 0.5,  E_y = -rho
//   particle id k: x = 0.001 k, y = 0.002 k, p_x = k, p_y = -k (float32), weighting 1 + k / 10
//   species "ions", positions as cells and offsets (cell sizes 0.5 and 0.25): id k in cell
//   (k % 24, k % 18) at offset (0.125 (k % 8), 0.0625 (k % 16)) in cells (float32), p = 0
//   species "tracers", a ParticleSet<float> (write_particles): x = 0.5 + k, y = 0.25 k,
//   v = (k, -k), weighting column "w" = 2 + k, named columns "tag" (int32, k % 7), "birth"
//   (int64, 10 k) and "charge_fraction" (float, 0.5 k)
// Usage: write_series <folder> [steps]   (under mpiexec at any rank count)
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/openpmd.hpp>
#include <cunumpy/particle_io.hpp>

namespace cn = cunumpy;

int main(int argc, char** argv) {
  cn::init_mpi(&argc, &argv);
  int rc = 0;
  try {
    const cn::Comm world = cn::Comm::world();
    if (argc < 2) throw cn::ValueError("usage: write_series <folder> [steps]");
    const int steps = argc > 2 ? std::atoi(argv[2]) : 2;
    const long long nx = 24, ny = 18;
    const cn::CartesianDecomposition d(world, {nx, ny});
    const long long lx = d.local_cells(0), ly = d.local_cells(1);
    auto rho = cn::empty<double>({lx, ly}, cn::Backend::host);
    auto ex = cn::empty<double>({lx, ly}, cn::Backend::host);
    auto ey = cn::empty<double>({lx, ly}, cn::Backend::host);
    for (long long i = 0; i < lx; ++i)
      for (long long j = 0; j < ly; ++j) {
        const double v = static_cast<double>(d.to_global(0, i) * 1000 + d.to_global(1, j));
        rho(i, j) = v;
        ex(i, j) = v + 0.5;
        ey(i, j) = -v;
      }
    // Particles: rank r holds ids [100 r, 100 r + 10 + r).
    const long long n = 10 + world.rank(), first = 100LL * world.rank();
    // p_y in single precision: a float32 record beside the double ones.
    auto x = cn::empty<double>({n}), y = cn::empty<double>({n}), px = cn::empty<double>({n}),
         w = cn::empty<double>({n});
    auto py = cn::empty<float>({n});
    auto id = cn::empty<std::int64_t>({n});
    for (long long i = 0; i < n; ++i) {
      const long long k = first + i;
      x.host_span()[i] = 0.001 * k;
      y.host_span()[i] = 0.002 * k;
      px.host_span()[i] = static_cast<double>(k);
      py.host_span()[i] = -static_cast<float>(k);
      w.host_span()[i] = 1.0 + k / 10.0;
      id.host_span()[i] = k;
    }
    // The ions: the same ids, positions as int32 cells plus float offsets within the cell.
    auto cx = cn::empty<std::int32_t>({n}), cy = cn::empty<std::int32_t>({n});
    auto ox = cn::empty<float>({n}), oy = cn::empty<float>({n});
    auto zero = cn::zeros<float>({n});
    for (long long i = 0; i < n; ++i) {
      const long long k = first + i;
      cx.host_span()[i] = static_cast<std::int32_t>(k % nx);
      cy.host_span()[i] = static_cast<std::int32_t>(k % ny);
      ox.host_span()[i] = 0.125f * static_cast<float>(k % 8);
      oy.host_span()[i] = 0.0625f * static_cast<float>(k % 16);
    }
    cn::ParticleSet<float> tracers({.dim = 2}, n, cn::Backend::host);
    auto& tw = tracers.add_column<double>("w");
    auto& tag = tracers.add_column<std::int32_t>("tag");
    auto& birth = tracers.add_column<std::int64_t>("birth");
    auto& fraction = tracers.add_column<float>("charge_fraction");
    for (long long i = 0; i < n; ++i) {
      const long long k = first + i;
      tracers.x.host_span()[i] = 0.5f + static_cast<float>(k);
      tracers.y.host_span()[i] = 0.25f * static_cast<float>(k);
      tracers.vx.host_span()[i] = static_cast<float>(k);
      tracers.vy.host_span()[i] = -static_cast<float>(k);
      tracers.id.host_span()[i] = k;
      tw.host_span()[i] = 2.0 + static_cast<double>(k);
      tag.host_span()[i] = static_cast<std::int32_t>(k % 7);
      birth.host_span()[i] = 10 * k;
      fraction.host_span()[i] = 0.5f * static_cast<float>(k);
    }
    tracers.n = n;
    cn::OpenPmdSeries series(argv[1], world, {.name = "data", .overwrite = true});
    const cn::MeshLayout layout{.global = {nx, ny},
                                .offset = {d.owned(0).begin, d.owned(1).begin},
                                .count = {lx, ly},
                                .spacing = {0.5, 0.25},
                                .grid_offset = {0.0, 0.0},
                                .axis_labels = {"x", "y"}};
    for (int s = 0; s < steps; ++s) {
      const long long step = 10LL * s;
      auto it = series.iteration(step, 0.1 * step, 0.1);
      it.mesh("rho", {}, layout, {&rho}, {-3, 0, 1, 1, 0, 0, 0});
      it.mesh("E", {"x", "y"}, layout, {&ex, &ey}, {1, 1, -3, -1, 0, 0, 0});
      cn::ParticleRecords p;
      p.axes = {"x", "y"};
      p.position = {&x, &y};
      p.momentum = {&px, &py};
      p.weighting = &w;
      p.id = &id;
      p.count = n;
      p.patch_offset = {0.5 * d.owned(0).begin, 0.25 * d.owned(1).begin};
      p.patch_extent = {0.5 * lx, 0.25 * ly};
      it.particles("electrons", p);
      cn::ParticleRecords ions;
      ions.axes = {"x", "y"};
      ions.position = {&ox, &oy};
      ions.position_offset = {&cx, &cy};
      ions.cell_size = {0.5, 0.25};
      ions.momentum = {&zero, &zero};
      ions.id = &id;
      ions.count = n;
      ions.charge = 1.0;
      ions.mass = 1836.0;
      it.particles("ions", ions);
      cn::write_particles(it, "tracers", tracers, {.charge = 0.0, .weighting = "w"});
      it.close();
      if (world.rank() == 0) std::printf("wrote %s\n", it.path().c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "write_series: %s\n", e.what());
    rc = 1;
  }
  cn::finalize_mpi();
  return rc;
}
