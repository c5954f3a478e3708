// The rtc step (step.hpp): the kernel catalog's deposit, gather and push (pic_catalog.hpp):
// their host versions on host, their CUDA sources compiled at run time on cuda (NVRTC) and
// emulated (the kernel emulator).  Compiled as CUDA when the CUDA backend is built.
#include <string>
#include <type_traits>

#include "layout.hpp"
#include "particles.hpp"
#include "pic.hpp"
#include "pic_catalog.hpp"
#include "step.hpp"

namespace pic {

namespace cn = cunumpy;

namespace rtc {

double sum_of(const cn::Array<double>& values, long long n) {
  const double* e = values.data();
  return CUNUMPY_REDUCE_ON(cn::on(values), "kinetic energy", n, cn::ReduceOp::sum, i, return e[i];);
}
template <typename Real>
double momentum_of(const Particles<Real>& p) {
  const Real* vx = p.vx.data();
  const double mass = p.mass;
  return CUNUMPY_REDUCE_ON(cn::on(p.vx), "momentum", p.n, cn::ReduceOp::sum, i,
                           return mass * vx[i];);
}

}  // namespace rtc

namespace {

// The catalog's kernel of the particles' precision: "deposit", or "deposit_single" for float
// ("deposit_mixed" and so on for mixed precision: push_in_cells).
template <typename Real>
std::string kernel_name(const char* name) {
  return std::is_same_v<Real, float> ? std::string(name) + "_single" : std::string(name);
}

template <typename Real>
class RtcStep final : public ParticleStep<Real> {
 public:
  RtcStep(const Config& config, cn::Backend backend) : dt_(config.dt) {
    // At setup, so the first step pays no compilation; only the cuda backend runs the NVRTC
    // images (the host backend runs the host kernels, the emulated one compiles its own).
    if (backend == cn::Backend::cuda) kernel_catalog().compile_all(2);
  }
  std::string name() const override { return "rtc"; }

  void deposit(const Particles<Real>& p, FieldLayout& layout, long long) override {
    const LocalGrid& g = layout.grid();
    layout.ne.fill(0.0);
    if constexpr (std::is_same_v<Real, float>)
      if (p.cells) {  // mixed precision: on the grid in cell units
        kernel_catalog().get<decltype(&deposit_mixed_host)>("deposit_mixed")(
            cn::threads(p.n), p.x, or_x(p.y, p.x), or_x(p.z, p.x), p.cx, or_x(p.cy, p.cx),
            or_x(p.cz, p.cx), layout.ne, g.x0, g.y0, g.z0, g.guard, g.row, g.col, g.order, g.dim,
            p.charge_density, p.n);
        return;
      }
    kernel_catalog().get<decltype(&deposit_host<Real>)>(kernel_name<Real>("deposit"))(
        cn::threads(p.n), p.x, or_x(p.y, p.x), or_x(p.z, p.x), layout.ne, g.x0, g.y0, g.z0, g.guard,
        g.row, g.col, g.order, g.dim, 1.0 / g.dx, 1.0 / g.dy, 1.0 / g.dz, p.charge_density, p.n);
  }

  StepSums push(Particles<Real>& p, FieldLayout& layout, double factor, bool move) override {
    const LocalGrid& g = layout.grid();
    p.use_work_arrays(true, true);
    if constexpr (std::is_same_v<Real, float>)
      if (p.cells) return push_in_cells(p, layout, -factor * dt_, move);
    kernel_catalog().get<decltype(&gather_host<Real>)>(kernel_name<Real>("gather"))(
        cn::threads(p.n), p.x, or_x(p.y, p.x), or_x(p.z, p.x), layout.ex,
        or_x(layout.ey, layout.ex), or_x(layout.ez, layout.ex), p.ex, or_x(p.ey, p.ex),
        or_x(p.ez, p.ex), g.x0, g.y0, g.z0, g.guard, g.row, g.col, g.order, g.dim, 1.0 / g.dx,
        1.0 / g.dy, 1.0 / g.dz, p.n);
    const double dv = -factor * dt_;
    kernel_catalog().get<decltype(&push_host<Real>)>(kernel_name<Real>("push"))(
        cn::threads(p.n), p.x, or_x(p.y, p.x), or_x(p.z, p.x), p.vx, or_x(p.vy, p.vx),
        or_x(p.vz, p.vx), p.ex, or_x(p.ey, p.ex), or_x(p.ez, p.ex), p.work, dv, dt_, g.lx, g.ly,
        g.lz, p.mass, move, g.dim, p.n);
    return StepSums{rtc::sum_of(p.work, p.n), rtc::momentum_of(p), 0};
  }

 private:
  // Mixed precision: gather_mixed and push_mixed, the moves in cell units.
  StepSums push_in_cells(Particles<float>& p, FieldLayout& layout, double dv, bool move) {
    const LocalGrid& g = layout.grid();
    kernel_catalog().get<decltype(&gather_mixed_host)>("gather_mixed")(
        cn::threads(p.n), p.x, or_x(p.y, p.x), or_x(p.z, p.x), p.cx, or_x(p.cy, p.cx),
        or_x(p.cz, p.cx), layout.ex, or_x(layout.ey, layout.ex), or_x(layout.ez, layout.ex), p.ex,
        or_x(p.ey, p.ex), or_x(p.ez, p.ex), g.x0, g.y0, g.z0, g.guard, g.row, g.col, g.order, g.dim,
        p.n);
    kernel_catalog().get<decltype(&push_mixed_host)>("push_mixed")(
        cn::threads(p.n), p.x, or_x(p.y, p.x), or_x(p.z, p.x), p.cx, or_x(p.cy, p.cx),
        or_x(p.cz, p.cx), p.vx, or_x(p.vy, p.vx), or_x(p.vz, p.vx), p.ex, or_x(p.ey, p.ex),
        or_x(p.ez, p.ex), p.work, dv, dt_ / g.dx, dt_ / g.dy, dt_ / g.dz, static_cast<double>(g.nx),
        static_cast<double>(g.ny), static_cast<double>(g.nz), p.mass, move, g.dim, p.n);
    return StepSums{rtc::sum_of(p.work, p.n), rtc::momentum_of(p), 0};
  }

  double dt_;
};

}  // namespace

template <typename Real>
std::unique_ptr<ParticleStep<Real>> make_rtc_step(const Config& config, cn::Backend backend) {
  return std::make_unique<RtcStep<Real>>(config, backend);
}
template std::unique_ptr<ParticleStep<double>> make_rtc_step<double>(const Config&, cn::Backend);
template std::unique_ptr<ParticleStep<float>> make_rtc_step<float>(const Config&, cn::Backend);

}  // namespace pic
