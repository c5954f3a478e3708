// pic: the electrostatic PIC mini-app.
//
//   mpiexec -n 2 ./pic --case landau --output out/landau
//   ./pic --case two_stream --particles 400000 --cells 64 --steps 500
//   CUNUMPY_BACKEND=cuda srun -n 4 ./pic --dim 2 --particles 10000000 --cells 256 --steps 50
//
//   ./pic --status                        # the kernel catalog: which kernels have CUDA sources
//   CUNUMPY_BACKEND=emulated ./pic --kernels rtc   # the catalog's CUDA kernels on the emulator
//
// The options are config_table.hpp's rows.  Prints a progress line (rank 0), the fitted and
// theoretical rates and a table of time per phase; writes energy.csv and summary.json to
// --output.  Bad input: a message and exit 2.  A run that completes exits 0, also when its
// rates could not be fitted (it prints "no fit" and why; summary.json: null rates and
// fit_failure) or it is not healthy (a warning; summary.json: diverged).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "checkpoint.hpp"
#include "config_table.hpp"
#include "pic.hpp"
#include "pic_catalog.hpp"

namespace {

namespace cn = cunumpy;

// The kernel catalog's porting status (--status).
int print_status() {
  const cn::KernelCatalog& catalog = pic::kernel_catalog();
  std::printf("%s\n", catalog.summary().c_str());
  int width = 0;  // the names in one column
  for (const std::string& name : catalog.names())
    width = std::max(width, static_cast<int>(name.size()));
  for (const std::string& name : catalog.names()) {
    const cn::KernelBase& k = catalog[name];
    std::printf("  %-*s %-4s %s\n", width, name.c_str(), k.has_cuda() ? "cuda" : "host",
                k.cuda_path().c_str());
  }
  catalog.check_signatures();
  std::printf("signatures: host and CUDA parameters agree\n");
  return 0;
}

void print_results(const pic::Config& config, const pic::Results& r, const pic::Health& health) {
  std::printf("\n%s, %dD, %lld particles, %d steps on %d rank(s), backend %s\n",
              config.case_name.c_str(), config.dim, config.particles, config.steps, r.ranks,
              r.backend.c_str());
  std::printf("  layout %s, particle step %s, solver %s\n", r.layout.c_str(), r.step.c_str(),
              r.solver.c_str());
  // The particles' precision and what it costs and keeps: bytes a particle, total energy.
  std::printf(
      "  particles in %s precision (%.0f bytes each); total energy within %.1e of its "
      "start\n",
      r.precision.c_str(), r.bytes_per_particle, health.max_relative_energy_error);
  if (!r.fit_failure.empty()) {
    std::printf("  gamma: no fit, theory %+.4f\n", r.gamma_theory);
    if (r.omega_theory > 1e-9) std::printf("  omega: no fit, theory %.4f\n", r.omega_theory);
    std::printf("  no fit: %s\n", r.fit_failure.c_str());
  } else {
    std::printf("  gamma: fit %+.4f, theory %+.4f (%+.1f%%)\n", r.gamma_fit, r.gamma_theory,
                100.0 * (r.gamma_fit / r.gamma_theory - 1.0));
    if (r.omega_theory > 1e-9)
      std::printf("  omega: fit %.4f, theory %.4f (%+.1f%%)\n", r.omega_fit, r.omega_theory,
                  100.0 * (r.omega_fit / r.omega_theory - 1.0));
    std::printf("  fit over t = %.1f .. %.1f (%d samples)\n", r.fit_t_begin, r.fit_t_end,
                r.fit_points);
  }
  std::printf("  %.3g particle-steps/s, %.2f ns per particle-step, transfers in the loop: %lld\n",
              r.particle_steps_per_second, r.ns_per_particle_step, r.transfers_in_loop);
  if (r.model_bytes_per_particle_step >= 0)
    std::printf("  global bytes per particle-step by the step's design: %.0f\n",
                r.model_bytes_per_particle_step);
  if (r.global_atomics_per_particle_step >= 0)
    std::printf(
        "  atomics per particle-step (emulated kernels): %.3g on global memory, %.3g on "
        "shared memory\n",
        r.global_atomics_per_particle_step, r.shared_atomics_per_particle_step);
  std::printf(
      "  grid %s: %.0f bytes sent per step per rank (max %.0f); the replicated grid's "
      "allreduce: %.0f\n",
      r.decomposed ? "decomposed" : "replicated", r.bytes_sent_per_step, r.max_bytes_sent_per_step,
      r.replicated_bytes_per_step);
  // Rank 0's seconds and share, and the slowest rank's seconds (an imbalance shows as a gap).
  std::printf("\n  %-12s %10s %8s %12s\n", "phase", "seconds", "share", "slowest rank");
  double total = 0.0;
  for (const auto& [name, seconds] : r.phase_seconds) total += seconds;
  for (const auto& [name, seconds] : r.phase_seconds) {
    const auto slowest = r.phase_seconds_max.find(name);
    std::printf("  %-12s %10.3f %7.1f%% %12.3f\n", name.c_str(), seconds, 100.0 * seconds / total,
                slowest != r.phase_seconds_max.end() ? slowest->second : seconds);
  }
  // How much of the halo exchanges' flight other work covered (summed over the ranks).
  const auto overlap = [](const char* what, const pic::Results::Overlap& o) {
    if (o.overlapped + o.waited > 0)
      std::printf(
          "  %-12s %5.1f%% of its messages' flight hidden under work (%.3f s overlapped, "
          "%.3f s waited, all ranks)\n",
          what, 100.0 * o.hidden(), o.overlapped, o.waited);
  };
  overlap("guard sum", r.guard_sum_overlap);
  overlap("field fill", r.field_fill_overlap);
}

}  // namespace

int main(int argc, char** argv) {
  pic::Config config;
  CLI::App app{"cunumpy electrostatic PIC mini-app (1D to 3D, periodic, normalised units)"};
  pic::add_options(app, config);
  bool status = false;
  app.add_flag("--status", status, "print the kernel catalog's porting status and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const cn::Error& e) {  // a value outside its row, from an option's callback
    std::fprintf(stderr, "pic: error: %s\n", e.what());
    return 2;
  }
  try {
    if (status) return print_status();
    auto was_given = [&](const pic::Option& o) { return pic::given(app, o); };
    // The named cases' physics (custom keeps the options given); the defaults that follow from
    // other options.
    pic::apply_case(config);
    pic::apply_defaults(config, was_given);
    cn::RuntimeOptions options;
    if (!config.backend.empty()) options.backend = cn::parse_backend(config.backend);
#if CUNUMPY_HAS_MPI()
    // PETSc runs on MPI: started here for a run without a launcher (one rank).
    if (config.solver == "petsc") options.mpi = true;
#endif
    cn::Runtime runtime(argc, argv, options);
    const cn::Comm& world = runtime.world();
    if (world.rank() == 0) std::printf("%s\n", runtime.summary().c_str());
    if (!config.restart.empty()) {
      // The checkpoint's configuration, with what this call may change (how long, what to
      // write, how to report) applied and said; a changed physics option is an error.
      std::vector<std::string> changes;
      config = pic::merge_restart(pic::read_checkpoint_config(config.restart, world), config,
                                  was_given, changes);
      if (world.rank() == 0)
        for (const std::string& c : changes) std::printf("restart: %s\n", c.c_str());
    }
    const std::string& output = config.output_folder;
    // The output folder is checked before the first step (rank 0 writes; every rank stops on
    // a bad one).
    if (!output.empty()) {
      int ok = 1;
      std::string why;
      if (world.rank() == 0) {
        try {
          pic::prepare_output(output, config.overwrite);
        } catch (const std::exception& e) {
          ok = 0;
          why = e.what();
        }
      }
      ok = world.bcast(ok, 0);
      if (!ok) {
        if (world.rank() == 0) std::fprintf(stderr, "%s\n", why.c_str());
        return 2;
      }
      if (!was_given(pic::option("flush-every")))
        config.flush_every = std::max(1, config.steps / 10);
      config.on_flush = [&](const pic::Results& partial) {
        pic::write_outputs(output, config, partial);
      };
    } else {
      config.flush_every = 0;
    }
    if (world.rank() == 0 && config.restart.empty())
      if (const std::string w = pic::few_particles_warning(config); !w.empty())
        std::fprintf(stderr, "pic: warning: %s\n", w.c_str());
    const pic::Results r = pic::run(config, world);
    const pic::Health health = pic::health_of(r);
    if (world.rank() == 0 && health.diverged)
      std::fprintf(stderr,
                   "pic: warning: the run is not healthy: %s; the physics is not resolved "
                   "(reduce --dt, check --k, --vth and the cells)\n",
                   health.reason.c_str());
    if (world.rank() == 0) {
      print_results(config, r, health);
      if (!output.empty()) {
        pic::write_outputs(output, config, r);
        std::printf("\n  wrote %s/energy.csv and %s/summary.json\n", output.c_str(),
                    output.c_str());
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pic: error: %s\n", e.what());
    return 2;
  } catch (...) {
    std::fprintf(stderr, "pic: error: an unknown exception ended the run\n");
    return 2;
  }
}
