// apps/pic/step.hpp: how the particles advance, one interface, a type per strategy (a file
// each):
//
//   fused host (fused_host_step.cpp): the host backend's one pass (host_step.hpp): gather at
//     x_n, push, move and the deposit at x_{n+1}, 1D to 3D, CIC and TSC, plain or
//     deterministic (integer grids).
//   builtin (builtin_step.cpp): separate parallel_for passes compiled with the program (nvcc
//     on cuda): the deposit by atomics on the device, into private per-thread grids on the host;
//     1D to 3D (the 3D step on every backend).
//   deterministic (deterministic_step.cpp): builtin, with the deposit's weights quantised to
//     2^-24 and summed exactly by segment_sum (the device's deterministic mode); 1D to 3D.
//   rtc (rtc_step.cpp): the kernel catalog's kernels (pic_catalog.hpp): their host versions on
//     host, their CUDA sources compiled at run time on cuda, the kernel emulator on emulated.
//   tiled (tiled_step.cpp): the device backends' one pass over particles kept sorted by tile
//     (kernels/tiled_step.cu): the deposit summed in shared memory, the tiles reordered each
//     step by a scan of their neighbours' counts.
//
// Every step deposits into and gathers from the layout's guarded local grid (grid.hpp), so each
// runs on every layout.  The per-particle math is pic_kernels.hpp's, shared by all of them.
#pragma once

#include <memory>
#include <string>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>

namespace pic {

struct Config;
template <typename Real>
struct Particles;
class FieldLayout;

// What a push leaves for the diagnostics (summed over the ranks by the driver).
struct StepSums {
  double kinetic = 0;      // mass / 2 v_old . v_new, summed
  double momentum = 0;     // mass v_x after the push, summed
  double undeposited = 0;  // particles a pushing deposit left out (a count)
};

// An axis's array of the particles or the grid, or the x one in its place past the dimension
// (the kernels take three axes and read the first `dim`).
template <typename T>
const cunumpy::Array<T>& or_x(const cunumpy::Array<T>& a, const cunumpy::Array<T>& x) {
  return a.ndim() == 0 ? x : a;
}

// Real: the particles' precision (double or float, particles.hpp).
template <typename Real>
class ParticleStep {
 public:
  virtual ~ParticleStep() = default;
  // The row of the table below.
  virtual std::string name() const = 0;
  // layout.ne (guards included) = the density of this rank's particles at their positions.
  // A step that deposits in push() keeps that deposit unless `undeposited_anywhere` (the ranks'
  // sum of StepSums::undeposited) is not 0, or there was no push since the last deposit (-1).
  virtual void deposit(const Particles<Real>& particles, FieldLayout& layout,
                       long long undeposited_anywhere) = 0;
  // Whether the last push deposited the next density already (deposit() with no particle left
  // out only folds it into layout.ne): the driver then starts the density's reduction before
  // the migration, whose work overlaps its messages.
  virtual bool deposited_by_push() const { return false; }
  // Whether the step keeps the particles in an order of its own (the driver's re-sort is then
  // skipped).
  virtual bool sorts_particles() const { return false; }
  // The global memory bytes a particle-step reads and writes by the step's design (a model,
  // docs/mini-app.md), for the particles and grid as they are; -1 where the step states none.
  virtual double bytes_per_particle_step(const Particles<Real>&, const FieldLayout&) const {
    return -1.0;
  }
  // The factor of ne in the charge (1; the deterministic deposit sums integers).
  virtual double density_scale(const Particles<Real>&) const { return 1.0; }
  // The field at x_n gathered, v += factor * dt * (q/m) E (q/m = -1), then, if `move`,
  // x += dt v (wrapped into the box).  This rank's sums.
  virtual StepSums push(Particles<Real>& particles, FieldLayout& layout, double velocity_factor,
                        bool move) = 0;
};

// The step of a configuration on a backend, from the table in step.cpp (instantiated for
// double and float particles).
template <typename Real>
std::unique_ptr<ParticleStep<Real>> make_step(const Config& config, cunumpy::Backend backend,
                                              const FieldLayout& layout);

// The steps (one file each).
template <typename Real>
std::unique_ptr<ParticleStep<Real>> make_fused_host_step(const Config& config,
                                                         const FieldLayout& layout);
template <typename Real>
std::unique_ptr<ParticleStep<Real>> make_builtin_step(const Config& config,
                                                      cunumpy::Backend backend);
template <typename Real>
std::unique_ptr<ParticleStep<Real>> make_deterministic_step(const Config& config,
                                                            cunumpy::Backend backend);
template <typename Real>
std::unique_ptr<ParticleStep<Real>> make_rtc_step(const Config& config, cunumpy::Backend backend);
template <typename Real>
std::unique_ptr<ParticleStep<Real>> make_tiled_step(const Config& config, cunumpy::Backend backend,
                                                    const FieldLayout& layout);
// The tiled step's kernels for particles of precision Real (kernels/tiled_step.cu), not yet
// compiled: a test compiles them with NVRTC where there is no GPU to run them.
template <typename Real>
cunumpy::CudaModule tiled_step_module();

// Whether the fused host step can run this configuration on this layout (the host backend,
// builtin kernels, --host-step fused, a grid whose node indices fit 32 bits).
bool fused_host_step_applies(const Config& config, cunumpy::Backend backend,
                             const FieldLayout& layout);

}  // namespace pic
