// The table of particle steps (step.hpp): the first row that applies to a configuration, its
// backend and its layout is the run's step.  A new step is a new file and a row here.
#include "step.hpp"

#include "layout.hpp"
#include "pic.hpp"

namespace pic {

namespace cn = cunumpy;

template <typename Real>
std::unique_ptr<ParticleStep<Real>> make_step(const Config& config, cn::Backend backend,
                                              const FieldLayout& layout) {
  using Made = std::unique_ptr<ParticleStep<Real>>;
  struct Row {
    bool (*applies)(const Config&, cn::Backend, const FieldLayout&);
    Made (*make)(const Config&, cn::Backend, const FieldLayout&);
  };
  static constexpr Row rows[] = {
      // The device's tiled step (--particle-step tiled).
      {[](const Config& c, cn::Backend, const FieldLayout&) { return c.particle_step == "tiled"; },
       [](const Config& c, cn::Backend b, const FieldLayout& l) -> Made {
         return make_tiled_step<Real>(c, b, l);
       }},
      // The kernel catalog's kernels (the deterministic deposit is the builtin one).
      {[](const Config& c, cn::Backend, const FieldLayout&) {
         return c.kernels == "rtc" && !c.deterministic;
       },
       [](const Config& c, cn::Backend b, const FieldLayout&) -> Made {
         return make_rtc_step<Real>(c, b);
       }},
      // The host's one pass, plain or deterministic.
      {&fused_host_step_applies,
       [](const Config& c, cn::Backend, const FieldLayout& l) -> Made {
         return make_fused_host_step<Real>(c, l);
       }},
      // The device's (and the separate host passes') deterministic deposit.
      {[](const Config& c, cn::Backend, const FieldLayout&) { return c.deterministic; },
       [](const Config& c, cn::Backend b, const FieldLayout&) -> Made {
         return make_deterministic_step<Real>(c, b);
       }},
      // The separate parallel_for passes.
      {[](const Config&, cn::Backend, const FieldLayout&) { return true; },
       [](const Config& c, cn::Backend b, const FieldLayout&) -> Made {
         return make_builtin_step<Real>(c, b);
       }},
  };
  for (const Row& r : rows)
    if (r.applies(config, backend, layout)) return r.make(config, backend, layout);
  throw cn::ValueError("pic: no particle step for this configuration");
}

template std::unique_ptr<ParticleStep<double>> make_step<double>(const Config&, cn::Backend,
                                                                 const FieldLayout&);
template std::unique_ptr<ParticleStep<float>> make_step<float>(const Config&, cn::Backend,
                                                               const FieldLayout&);

}  // namespace pic
