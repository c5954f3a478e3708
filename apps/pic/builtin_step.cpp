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

void gather(Particles& p, const FieldLayout& layout) {
  const kernels::Grid grid = layout.grid().kernel_grid();
  const bool two = grid.two;
  const double* x = p.x.data();
  const double* y = two ? p.y.data() : x;  // y unused in 1D
  const double* ex = layout.ex.data();
  const double* ey = two ? layout.ey.data() : nullptr;
  double* exp_ = p.ex.data();
  double* eyp = two ? p.ey.data() : nullptr;
  CUNUMPY_FOR_ON(cn::on(p.x), "gather", p.n, i, double e0 = 0.0, e1 = 0.0;
                 kernels::for_each_node(grid, x[i], y[i],
                                        [&](long long c, double w, int) {
                                          e0 += w * ex[c];
                                          if (two) e1 += w * ey[c];
                                        });
                 exp_[i] = e0; if (two) eyp[i] = e1;);
}

StepSums push(Particles& p, const FieldLayout& layout, double dv, double dt, bool move) {
  const LocalGrid& g = layout.grid();
  const bool two = g.two();
  const double lx = g.lx, ly = g.ly, mass = p.mass;
  double* x = p.x.data();
  double* y = two ? p.y.data() : nullptr;
  double* vx = p.vx.data();
  double* vy = two ? p.vy.data() : nullptr;
  const double* exp_ = p.ex.data();
  const double* eyp = two ? p.ey.data() : nullptr;
  StepSums sums;
  sums.kinetic = CUNUMPY_REDUCE_ON(
      cn::on(p.x), "push", p.n, cn::ReduceOp::sum, i, const double old_x = vx[i];
      const double new_x = old_x + dv * exp_[i]; vx[i] = new_x; double energy = old_x * new_x;
      if (move) x[i] = kernels::periodic(x[i] + dt * new_x, lx); if (two) {
        const double old_y = vy[i];
        const double new_y = old_y + dv * eyp[i];
        vy[i] = new_y;
        energy += old_y * new_y;
        if (move) y[i] = kernels::periodic(y[i] + dt * new_y, ly);
      } return 0.5 * mass * energy;);
  sums.momentum =
      CUNUMPY_REDUCE_ON(cn::on(p.x), "momentum", p.n, cn::ReduceOp::sum, i, return mass * vx[i];);
  return sums;
}

void deposit_atomics(const Particles& p, FieldLayout& layout) {
  const kernels::Grid grid = layout.grid().kernel_grid();
  const double q = p.charge_density;
  const double* x = p.x.data();
  const double* y = grid.two ? p.y.data() : x;  // y unused in 1D
  double* ne = layout.ne.data();
  layout.ne.fill(0.0);
  CUNUMPY_FOR_ON(cn::on(p.x), "deposit", p.n, i,
                 kernels::for_each_node(grid, x[i], y[i], [&](long long c, double w, int) {
                   cunumpy_atomic_add(&ne[c], q * w);
                 }););
}

void deposit_private_grids(const Particles& p, FieldLayout& layout) {
  const LocalGrid& g = layout.grid();
  deposit_host(p.x, g.two() ? p.y : p.x, layout.ne, g.x0, g.y0, g.guard, g.row, g.order, g.two(),
               1.0 / g.dx, 1.0 / g.dy, p.charge_density, p.n);
}

}  // namespace builtin

namespace {

class BuiltinStep final : public ParticleStep {
 public:
  BuiltinStep(const Config& config, cn::Backend backend)
      : dt_(config.dt), host_(backend == cn::Backend::host) {}
  std::string name() const override { return host_ ? "builtin host" : "builtin device"; }
  void deposit(const Particles& p, FieldLayout& layout, long long) override {
    if (host_)
      builtin::deposit_private_grids(p, layout);
    else
      builtin::deposit_atomics(p, layout);
  }
  StepSums push(Particles& p, FieldLayout& layout, double factor, bool move) override {
    builtin::gather(p, layout);
    return builtin::push(p, layout, -factor * dt_, dt_, move);
  }

 private:
  double dt_;
  bool host_;
};

}  // namespace

std::unique_ptr<ParticleStep> make_builtin_step(const Config& config, cn::Backend backend) {
  return std::make_unique<BuiltinStep>(config, backend);
}

}  // namespace pic
