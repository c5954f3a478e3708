// pic: the electrostatic PIC mini-app.
//
//   mpiexec -n 2 ./pic --case landau --output out/landau
//   ./pic --case two_stream --particles 400000 --cells 64 --steps 500
//   CUNUMPY_BACKEND=cuda srun -n 4 ./pic --dim 2 --particles 10000000 --cells 256 --steps 50
//
//   ./pic --status                        # the kernel catalog: which kernels have CUDA sources
//   CUNUMPY_BACKEND=emulated ./pic --kernels rtc   # the catalog's CUDA kernels on the emulator
//
// Prints a progress line (rank 0), the fitted and theoretical rates and a table of time per
// phase; writes energy.csv and summary.json to --output.  Bad input: a message and exit 2.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "checkpoint.hpp"
#include "cli_checks.hpp"
#include "pic.hpp"
#include "pic_catalog.hpp"

int main(int argc, char** argv) {
  namespace cn = cunumpy;
  pic::Config config;
  std::string backend, start = "quiet", shape = "cic", output;
  int cells = 64, cells_y = 0;
  bool no_progress = false;
  CLI::App app{"cunumpy electrostatic PIC mini-app (1D/2D, periodic, normalised units)"};
  app.add_option("--case", config.case_name, "landau | two_stream | custom")
      ->check(CLI::IsMember({"landau", "two_stream", "custom"}));
  app.add_option("--dim", config.dim, "1 or 2")->check(CLI::IsMember({1, 2}));
  app.add_option("--particles", config.particles, "particles over all ranks")
      ->check(pic::cli::at_least(1));
  app.add_option("--cells", cells, "cells along x (and y in 2D unless --cells-y)")
      ->check(pic::cli::between(4, 1 << 24));
  app.add_option("--cells-y", cells_y, "cells along y (2D)")->check(pic::cli::between(4, 1 << 24));
  app.add_option("--steps", config.steps, "time steps")->check(pic::cli::at_least(1));
  app.add_option("--dt", config.dt, "time step (1/omega_p)")->check(pic::cli::positive());
  app.add_option("--backend", backend, "host | cuda | emulated (default: CUNUMPY_BACKEND)")
      ->check(CLI::IsMember({"host", "cuda", "emulated"}));
  app.add_option("--seed", config.seed, "random seed (random start)");
  app.add_option("--start", start, "quiet | random")->check(CLI::IsMember({"quiet", "random"}));
  app.add_option("--shape", shape, "cic | tsc")->check(CLI::IsMember({"cic", "tsc"}));
  app.add_flag("--deterministic", config.deterministic,
               "deposit by sort + segment_sum: bit-identical results");
  app.add_option("--host-step", config.host_step,
                 "host 2D particle step: fused (one pass: gather, push, next deposit) | separate")
      ->check(CLI::IsMember({"fused", "separate"}));
  app.add_option("--sort-every", config.sort_every, "Morton re-sort period in steps (0: never)")
      ->check(pic::cli::at_least(0));
  app.add_option("--k", config.k, "custom case: wave number")->check(pic::cli::positive());
  app.add_option("--amplitude", config.amplitude, "custom case: density perturbation")
      ->check(pic::cli::finite());
  app.add_option("--vth", config.vth, "custom case: thermal velocity")->check(pic::cli::positive());
  app.add_option("--beam-velocity", config.beam_velocity,
                 "custom case: two streams at +-v (0: one Maxwellian)")
      ->check(pic::cli::finite());
  app.add_option("--output", output,
                 "folder for energy.csv and summary.json (checked before the first step)");
  bool overwrite = false;
  app.add_flag("--overwrite", overwrite, "replace the outputs of an earlier run in --output");
  int flush_every = -1;
  app.add_option(
         "--flush-every", flush_every,
         "with --output: rewrite the outputs every N steps during the run (default: a tenth of "
         "the steps; 0: only at the end)")
      ->check(pic::cli::at_least(0));
  app.add_flag("--no-progress", no_progress, "no progress lines");
  app.add_option(
         "--kernels", config.kernels,
         "builtin (parallel_for loops compiled with the program) | rtc (the kernel catalog: "
         "host versions, CUDA sources compiled at run time)")
      ->check(CLI::IsMember({"builtin", "rtc"}));
  app.add_option(
         "--output-every", config.output_every,
         "with --output: openPMD fields and particles every N steps (openpmd/data_<step>.h5)")
      ->check(pic::cli::at_least(0));
  app.add_option("--checkpoint-every", config.checkpoint_every,
                 "with --output: a checkpoint every N steps (checkpoints/checkpoint_<step>.h5)")
      ->check(pic::cli::at_least(0));
  std::string restart;
  app.add_option("--restart", restart,
                 "continue from a checkpoint (its configuration, particles and histories; "
                 "--steps may extend the run)");
  bool replicate = false;
  auto* decompose = app.add_flag(
      "--decompose", config.decompose,
      "split the grid over the ranks (halo exchange, particle migration, distributed FFT) "
      "instead of replicating it on every rank");
  app.add_flag("--replicate", replicate,
               "the whole grid on every rank, the density summed by an allreduce (the default; "
               "for small grids)")
      ->excludes(decompose);
  bool status = false;
  app.add_flag("--status", status, "print the kernel catalog's porting status and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (status) {
    try {
      const cn::KernelCatalog& catalog = pic::kernel_catalog();
      std::printf("%s\n", catalog.summary().c_str());
      for (const std::string& name : catalog.names()) {
        const cn::KernelBase& k = catalog[name];
        std::printf("  %-8s %-4s %s\n", name.c_str(), k.has_cuda() ? "cuda" : "host",
                    k.cuda_path().c_str());
      }
      catalog.check_signatures();
      std::printf("signatures: host and CUDA parameters agree\n");
      return 0;
    } catch (const cn::Error& e) {
      std::fprintf(stderr, "pic: error: %s\n", e.what());
      return 2;
    }
  }
  try {
    pic::apply_case(config);  // the named cases' physics; custom keeps the options given
    config.cells_x = cells;
    config.cells_y = cells_y > 0 ? cells_y : cells;
    config.quiet = start == "quiet";
    config.order = shape == "cic" ? 1 : 2;
    config.progress = !no_progress;
    cn::RuntimeOptions options;
    if (!backend.empty()) options.backend = cn::parse_backend(backend);
    cn::Runtime runtime(argc, argv, options);
    const cn::Comm& world = runtime.world();
    if (world.rank() == 0) std::printf("%s\n", runtime.summary().c_str());
    if (!restart.empty()) {
      // The run's physics is the checkpoint's; what to write and for how long is this call's.
      pic::Config resumed = pic::read_checkpoint_config(restart, world);
      if (app.count("--steps") > 0) resumed.steps = config.steps;
      resumed.progress = config.progress;
      resumed.output_every = config.output_every;
      resumed.checkpoint_every = config.checkpoint_every;
      resumed.keep_ids = config.keep_ids;
      config = resumed;
      config.restart = restart;
    }
    config.output_folder = output;
    config.overwrite = overwrite;
    // The output folder is checked before the first step (rank 0 writes; every rank stops on
    // a bad one).
    if (!output.empty()) {
      int ok = 1;
      std::string why;
      if (world.rank() == 0) {
        try {
          pic::prepare_output(output, overwrite);
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
      config.flush_every = flush_every >= 0 ? flush_every : std::max(1, config.steps / 10);
      config.on_flush = [&](const pic::Results& partial) {
        pic::write_outputs(output, config, partial);
      };
    }
    const pic::Results r = pic::run(config, world);
    const pic::Health health = pic::health_of(r);
    if (world.rank() == 0 && health.diverged)
      std::fprintf(stderr,
                   "pic: warning: the run is not healthy: %s; the physics is not resolved "
                   "(reduce --dt, check --k, --vth and the cells)\n",
                   health.reason.c_str());
    if (world.rank() == 0) {
      std::printf("\n%s, %dD, %lld particles, %d steps on %d rank(s), backend %s\n",
                  config.case_name.c_str(), config.dim, config.particles, config.steps, r.ranks,
                  r.backend.c_str());
      std::printf("  gamma: fit %+.4f, theory %+.4f (%+.1f%%)\n", r.gamma_fit, r.gamma_theory,
                  100.0 * (r.gamma_fit / r.gamma_theory - 1.0));
      if (r.omega_theory > 1e-9)
        std::printf("  omega: fit %.4f, theory %.4f (%+.1f%%)\n", r.omega_fit, r.omega_theory,
                    100.0 * (r.omega_fit / r.omega_theory - 1.0));
      std::printf("  fit over t = %.1f .. %.1f (%d samples)\n", r.fit_t_begin, r.fit_t_end,
                  r.fit_points);
      std::printf(
          "  %.3g particle-steps/s, %.2f ns per particle-step, transfers in the loop: %lld\n",
          r.particle_steps_per_second, r.ns_per_particle_step, r.transfers_in_loop);
      std::printf(
          "  grid %s: %.0f bytes sent per step per rank (max %.0f); the replicated grid's "
          "allreduce: %.0f\n",
          r.decomposed ? "decomposed" : "replicated", r.bytes_sent_per_step,
          r.max_bytes_sent_per_step, r.replicated_bytes_per_step);
      std::printf("\n  %-12s %10s %8s\n", "phase", "seconds", "share");
      double total = 0.0;
      for (const auto& [name, seconds] : r.phase_seconds) total += seconds;
      for (const auto& [name, seconds] : r.phase_seconds)
        std::printf("  %-12s %10.3f %7.1f%%\n", name.c_str(), seconds, 100.0 * seconds / total);
      if (!output.empty()) {
        pic::write_outputs(output, config, r);
        std::printf("\n  wrote %s/energy.csv and %s/summary.json\n", output.c_str(),
                    output.c_str());
      }
    }
    return 0;
  } catch (const cn::Error& e) {
    std::fprintf(stderr, "pic: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pic: error: %s\n", e.what());
    return 2;
  } catch (...) {
    std::fprintf(stderr, "pic: error: an unknown exception ended the run\n");
    return 2;
  }
}
