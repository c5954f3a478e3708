// The builtin step (step.hpp): separate parallel_for passes (gather, push and move, deposit)
// compiled with the program.  Compiled as CUDA when the CUDA backend is built: the loops then
// run on the device for device arrays.
#include "builtin_step.hpp"

#include "pic.hpp"
#include "pic_catalog.hpp"
#include "pic_kernels.hpp"

namespace pic {

namespace cn = cunumpy;

namespace builtin {

template <typename Real>
void gather(Particles<Real>& p, const FieldLayout& layout) {
  p.use_work_arrays(true, p.work.ndim() != 0);
  const kernels::Grid grid = p.grid_for(layout.grid().kernel_grid());
  const bool has_y = grid.two, has_z = grid.three;
  const kernels::Positions<Real> pos = p.positions();
  const double* ex = layout.ex.data();
  const double* ey = has_y ? layout.ey.data() : nullptr;
  const double* ez = has_z ? layout.ez.data() : nullptr;
  double* exp_ = p.ex.data();
  double* eyp = has_y ? p.ey.data() : nullptr;
  double* ezp = has_z ? p.ez.data() : nullptr;
  CUNUMPY_FOR_ON(cn::on(p.x), "gather", p.n, i, double e[3];
                 kernels::field_at(grid, pos, i, ex, ey, ez, e); exp_[i] = e[0];
                 if (has_y) eyp[i] = e[1]; if (has_z) ezp[i] = e[2];);
}

template <typename Real>
StepSums push(Particles<Real>& p, const FieldLayout& layout, double dv, double dt, bool move) {
  const LocalGrid& g = layout.grid();
  const bool has_y = g.has_y(), has_z = g.has_z();
  const int dim = g.dim;
  const double mass = p.mass;
  // Mixed: the moves in cell units (dt / cell size over each axis's cells).
  const bool cells = p.cells;
  const double lx = cells ? g.nx : g.lx, ly = cells ? g.ny : g.ly, lz = cells ? g.nz : g.lz;
  const double tx = cells ? dt / g.dx : dt, ty = cells ? dt / g.dy : dt,
               tz = cells ? dt / g.dz : dt;
  std::int32_t* cx = cells ? p.cx.data() : nullptr;
  std::int32_t* cy = cells && has_y ? p.cy.data() : nullptr;
  std::int32_t* cz = cells && has_z ? p.cz.data() : nullptr;
  Real* x = p.x.data();
  Real* y = has_y ? p.y.data() : nullptr;
  Real* z = has_z ? p.z.data() : nullptr;
  Real* vx = p.vx.data();
  Real* vy = has_y ? p.vy.data() : nullptr;
  Real* vz = has_z ? p.vz.data() : nullptr;
  const double* exp_ = p.ex.data();
  const double* eyp = has_y ? p.ey.data() : nullptr;
  const double* ezp = has_z ? p.ez.data() : nullptr;
  StepSums sums;
  // The kernel catalog's push, per particle (kernels::push_particle).
  sums.kinetic = CUNUMPY_REDUCE_ON(
      cn::on(p.x), "push", p.n, cn::ReduceOp::sum, i, Real* const pos[3] = {x, y, z};
      std::int32_t* const cell[3] = {cx, cy, cz}; Real* const vel[3] = {vx, vy, vz};
      const double* const f[3] = {exp_, eyp, ezp}; const double l[3] = {lx, ly, lz};
      const double steps[3] = {tx, ty, tz};
      return kernels::push_particle(pos, cell, vel, f, l, steps, dv, mass, move, dim, i););
  sums.momentum =
      CUNUMPY_REDUCE_ON(cn::on(p.x), "momentum", p.n, cn::ReduceOp::sum, i, return mass * vx[i];);
  return sums;
}

template <typename Real>
StepSums kick(Particles<Real>& p, const FieldLayout& layout, double dv) {
  const kernels::Grid grid = p.grid_for(layout.grid().kernel_grid());
  const bool has_y = grid.two, has_z = grid.three;
  const double mass = p.mass;
  const kernels::Positions<Real> pos = p.positions();
  Real* vx = p.vx.data();
  Real* vy = has_y ? p.vy.data() : nullptr;
  Real* vz = has_z ? p.vz.data() : nullptr;
  const double* ex = layout.ex.data();
  const double* ey = has_y ? layout.ey.data() : nullptr;
  const double* ez = has_z ? layout.ez.data() : nullptr;
  StepSums sums;
  // gather's sums, then push's arithmetic, per particle.
  sums.kinetic = CUNUMPY_REDUCE_ON(
      cn::on(p.x), "kick", p.n, cn::ReduceOp::sum, i, double e[3];
      kernels::field_at(grid, pos, i, ex, ey, ez, e); const double e1 = e[1];
      const double e2 = e[2]; const double old_x = vx[i]; const double new_x = old_x + dv * e[0];
      vx[i] = new_x; double energy = old_x * new_x; if (has_y) {
        const double old_y = vy[i];
        const double new_y = old_y + dv * e1;
        vy[i] = new_y;
        energy += old_y * new_y;
      } if (has_z) {
        const double old_z = vz[i];
        const double new_z = old_z + dv * e2;
        vz[i] = new_z;
        energy += old_z * new_z;
      } return 0.5 * mass * energy;);
  const Real* pvx = p.vx.data();
  sums.momentum =
      CUNUMPY_REDUCE_ON(cn::on(p.x), "momentum", p.n, cn::ReduceOp::sum, i, return mass * pvx[i];);
  return sums;
}

template <typename Real>
void deposit_atomics(const Particles<Real>& p, FieldLayout& layout) {
  const kernels::Grid grid = p.grid_for(layout.grid().kernel_grid());
  const double q = p.charge_density;
  const kernels::Positions<Real> pos = p.positions();
  double* ne = layout.ne.data();
  layout.ne.fill(0.0);
  CUNUMPY_FOR_ON(cn::on(p.x), "deposit", p.n, i,
                 kernels::for_each_node(grid, pos, i, [&](long long c, double w, int) {
                   cunumpy_atomic_add(&ne[c], q * w);
                 }););
}

template <typename Real>
void deposit_private_grids(const Particles<Real>& p, FieldLayout& layout) {
  const LocalGrid& g = layout.grid();
  deposit_into_thread_grids(p.grid_for(g.kernel_grid()), p.positions(), layout.ne.data(), g.nodes(),
                            p.charge_density, p.n);
}

#define PIC_BUILTIN_PASSES(Real)                                                            \
  template void gather<Real>(Particles<Real>&, const FieldLayout&);                         \
  template StepSums push<Real>(Particles<Real>&, const FieldLayout&, double, double, bool); \
  template StepSums kick<Real>(Particles<Real>&, const FieldLayout&, double);               \
  template void deposit_atomics<Real>(const Particles<Real>&, FieldLayout&);                \
  template void deposit_private_grids<Real>(const Particles<Real>&, FieldLayout&);
PIC_BUILTIN_PASSES(double)
PIC_BUILTIN_PASSES(float)
#undef PIC_BUILTIN_PASSES

}  // namespace builtin

namespace {

template <typename Real>
class BuiltinStep final : public ParticleStep<Real> {
 public:
  BuiltinStep(const Config& config, cn::Backend backend)
      : dt_(config.dt), host_(backend == cn::Backend::host) {}
  std::string name() const override { return host_ ? "builtin host" : "builtin device"; }
  void deposit(const Particles<Real>& p, FieldLayout& layout, long long) override {
    if (host_)
      builtin::deposit_private_grids(p, layout);
    else
      builtin::deposit_atomics(p, layout);
  }
  StepSums push(Particles<Real>& p, FieldLayout& layout, double factor, bool move) override {
    builtin::gather(p, layout);
    return builtin::push(p, layout, -factor * dt_, dt_, move);
  }

 private:
  double dt_;
  bool host_;
};

}  // namespace

template <typename Real>
std::unique_ptr<ParticleStep<Real>> make_builtin_step(const Config& config, cn::Backend backend) {
  return std::make_unique<BuiltinStep<Real>>(config, backend);
}
template std::unique_ptr<ParticleStep<double>> make_builtin_step<double>(const Config&,
                                                                         cn::Backend);
template std::unique_ptr<ParticleStep<float>> make_builtin_step<float>(const Config&, cn::Backend);

}  // namespace pic
