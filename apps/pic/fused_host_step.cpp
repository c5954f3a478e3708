// The fused host step (step.hpp): host_step.hpp's one pass on the layout's guarded grid: the
// push deposits the next step's density into per-thread grids, which deposit() folds into the
// layout's ne.  Deterministic: integer grids (exact sums), the kinetic energy and momentum by
// the library's fixed-order reductions.
#include <algorithm>
#include <cmath>
#include <type_traits>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "builtin_step.hpp"
#include "host_step.hpp"
#include "host_step_simd.hpp"
#include "pic.hpp"

namespace pic {

namespace cn = cunumpy;

bool fused_host_step_applies(const Config& config, cn::Backend backend, const FieldLayout& layout) {
  // The loops index nodes (and E's interleaved components) with 32-bit integers.
  const long long components = std::max(2, layout.grid().dim);
  const bool int_nodes = components * layout.grid().nodes() < (1LL << 31);
  return backend == cn::Backend::host && config.kernels == "builtin" &&
         config.host_step == "fused" && int_nodes;
}

namespace {

template <typename Real>
class FusedHostStep final : public ParticleStep<Real> {
 public:
  FusedHostStep(const Config& config, const FieldLayout& layout)
      : dt_(config.dt), deterministic_(config.deterministic), floats_(floats_of(layout.grid())) {
#if defined(_OPENMP)
    threads_ = omp_get_max_threads();
#endif
  }

  std::string name() const override {
    if (deterministic_) return "fused host (deterministic)";
    return floats_ ? "fused host (float lanes)" : "fused host";
  }

  void deposit(const Particles<Real>& p, FieldLayout& layout,
               long long undeposited_anywhere) override {
    const LocalGrid& g = layout.grid();
    if (!pushed_ || undeposited_anywhere != 0) {
      // No push deposited (the first step, a restart), or one left particles out somewhere:
      // every rank deposits its particles where they are now.
      grids_.ensure(threads_, g.nodes(), deterministic_);
      clear();
      host_step::Step<Real> s = step_of(const_cast<Particles<Real>&>(p), layout, 0.0);
      host_step::deposit(s, grids_);
    }
    host_step::fold(grids_, g.nodes(), layout.ne.data());
    pushed_ = false;
  }

  bool deposited_by_push() const override {
    return pushed_;
  }

  double density_scale(const Particles<Real>& p) const override {
    return deterministic_ ? p.charge_density / kernels::kQuantum : 1.0;
  }

  StepSums push(Particles<Real>& p, FieldLayout& layout, double factor, bool move) override {
    // The one pass keeps no field at the particles; the deterministic one keeps each
    // particle's energy for a fixed-order sum.
    p.use_work_arrays(false, deterministic_);
    if (!move)  // the half push at the start: the separate loops' math, in one pass
      return builtin::kick(p, layout, -factor * dt_);
    const LocalGrid& g = layout.grid();
    grids_.ensure(threads_, g.nodes(), deterministic_);
    host_step::Step<Real> s = step_of(p, layout, -factor * dt_);
    const bool floats = s.floats;
    if (floats && g.has_z()) {  // E from its float nodes alone (cic3_floats)
      host_step::fill_node_fields(g.nodes(), layout.ex.data(), layout.ey.data(), layout.ez.data(),
                                  nodes32_);
    } else if (floats) {  // E from its float cells alone (cic_floats): no interleaved copy
      host_step::fill_cell_fields(g.nodes(), g.row, layout.ex.data(), layout.ey.data(), cells32_);
    } else {
      host_step::interleave_fields(g.nodes(), layout.ex.data(),
                                   g.has_y() ? layout.ey.data() : nullptr,
                                   g.has_z() ? layout.ez.data() : nullptr, exy_);
    }
    s.exy = floats ? nullptr : exy_.data();
    s.cells32 = floats && !g.has_z() ? cells32_.data() : nullptr;
    s.nodes32 = floats && g.has_z() ? nodes32_.data() : nullptr;
    s.vectors = g.has_y() && g.order == 1 && !p.cells;
    if (deterministic_) {
      s.energies = p.work.data();
      s.half_mass = 0.5 * p.mass;
    }
    // The rows that left the layout's stay region, for the migration.
    p.leavers_known = layout.stay_region(s.stay_lo, s.stay_hi);
    if (p.leavers_known && p.cells) {  // mixed precision: the block's cells, in cell units
      const long long first[3] = {g.x0, g.y0, g.z0}, count[3] = {g.lnx, g.lny, g.lnz};
      for (int a = 0; a < g.dim; ++a) {
        s.stay_lo[a] = static_cast<double>(first[a]);
        s.stay_hi[a] = std::nextafter(static_cast<double>(first[a] + count[a]), 0.0);
      }
    }
    if (p.leavers_known) s.leavers = &p.leavers;
    const host_step::Sums sums = host_step::push_and_deposit(s, grids_);
    pushed_ = true;
    StepSums out;
    out.undeposited = static_cast<double>(sums.undeposited);
    if (deterministic_) {  // the builtin push's sums, in the same fixed order
      const double* e = p.work.data();
      const Real* vx = p.vx.data();
      const double mass = p.mass;
      out.kinetic = cn::parallel_reduce(cn::on(p.work), "kinetic energy", p.n, cn::ReduceOp::sum,
                                        [=](long long i) { return e[i]; });
      out.momentum = cn::parallel_reduce(cn::on(p.vx), "momentum", p.n, cn::ReduceOp::sum,
                                         [=](long long i) { return mass * vx[i]; });
    } else {
      out.kinetic = 0.5 * p.mass * sums.energy;
      out.momentum = p.mass * sums.momentum;
    }
    return out;
  }

 private:
  host_step::Step<Real> step_of(Particles<Real>& p, const FieldLayout& layout, double dv) const {
    const LocalGrid& g = layout.grid();
    host_step::Step<Real> s{};
    s.x = p.x.data();
    s.y = g.has_y() ? p.y.data() : nullptr;
    s.z = g.has_z() ? p.z.data() : nullptr;
    s.vx = p.vx.data();
    s.vy = g.has_y() ? p.vy.data() : nullptr;
    s.vz = g.has_z() ? p.vz.data() : nullptr;
    s.n = p.n;
    s.dim = g.dim;
    s.order = g.order;
    s.inv_dx = 1.0 / g.dx;
    s.inv_dy = 1.0 / g.dy;
    s.inv_dz = 1.0 / g.dz;
    s.lx = g.lx;
    s.ly = g.ly;
    s.lz = g.lz;
    s.dv = dv;
    s.dt = dt_;
    s.charge = p.charge_density;
    // Node (i, j, l) at (i - x0 + guard) * row + (j - y0 + guard) * col + (l - z0 + guard)
    // (col 1 in 2D; no l in 2D, no j in 1D).
    s.row = g.row;
    s.col = g.col;
    s.base = (g.guard - g.x0) * g.row + (g.has_y() ? (g.guard - g.y0) * g.col : 0) +
             (g.has_z() ? g.guard - g.z0 : 0);
    s.nx = g.nx;
    s.ny = g.ny;
    s.nz = g.nz;
    s.i_lo = g.x0 - g.guard;
    s.i_hi = g.x0 + g.lnx + g.guard - 1;
    s.j_lo = g.has_y() ? g.y0 - g.guard : 0;
    s.j_hi = g.has_y() ? g.y0 + g.lny + g.guard - 1 : 0;
    s.k_lo = g.has_z() ? g.z0 - g.guard : 0;
    s.k_hi = g.has_z() ? g.z0 + g.lnz + g.guard - 1 : 0;
    // A block that spans the box (the replicated layout, or one rank) holds every image.
    s.whole_box = g.whole_box || (g.lnx == g.nx && g.lny == g.ny && g.lnz == g.nz);
    s.integer = deterministic_;
    s.floats = floats_;  // (floats_of the layout's grid, fixed for the run)
    if (p.cells) {       // mixed precision: in cell units (StepGeometry::cell_dt)
      s.cx = p.cx.data();
      s.cy = g.has_y() ? p.cy.data() : nullptr;
      s.cz = g.has_z() ? p.cz.data() : nullptr;
      s.inv_dx = s.inv_dy = s.inv_dz = 1.0;
      s.lx = static_cast<double>(g.nx);
      s.ly = static_cast<double>(g.ny);
      s.lz = static_cast<double>(g.nz);
      s.cell_dt[0] = dt_ / g.dx;
      s.cell_dt[1] = dt_ / g.dy;
      s.cell_dt[2] = dt_ / g.dz;
    }
    return s;
  }

  // Float particles, 2D and 3D CIC, real grids: the step's arithmetic in float, twice the
  // lanes (host_step.hpp).  The deterministic step keeps double's, as every backend's.
  bool floats_of(const LocalGrid& g) const {
    return std::is_same_v<Real, float> && (g.two() || g.has_z()) && g.order == 1 && !deterministic_;
  }

  void clear() {
    for (auto& grid : grids_.real) std::fill(grid.begin(), grid.end(), 0.0);
    for (auto& grid : grids_.integer) std::fill(grid.begin(), grid.end(), 0);
  }

  double dt_;
  bool deterministic_;
  bool floats_;  // floats_of the layout's grid (the arithmetic the name reports)
  int threads_ = 1;
  bool pushed_ = false;  // the last push deposited into grids_ (not folded yet)
  host_step::ThreadGrids grids_;
  std::vector<double> exy_;
  std::vector<float> cells32_, nodes32_;
};

}  // namespace

template <typename Real>
std::unique_ptr<ParticleStep<Real>> make_fused_host_step(const Config& config,
                                                         const FieldLayout& layout) {
  return std::make_unique<FusedHostStep<Real>>(config, layout);
}
template std::unique_ptr<ParticleStep<double>> make_fused_host_step<double>(const Config&,
                                                                            const FieldLayout&);
template std::unique_ptr<ParticleStep<float>> make_fused_host_step<float>(const Config&,
                                                                          const FieldLayout&);

}  // namespace pic
