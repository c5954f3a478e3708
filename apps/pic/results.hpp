// apps/pic/results.hpp: what a run measured, and its health.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace pic {

struct Results {
  // mode_energy: the field energy of the perturbed mode (k, 0) alone, which the fits use (the
  // other modes carry particle noise).
  std::vector<double> time, field_energy, mode_energy, kinetic_energy, momentum, total_charge;
  double gamma_fit = 0, omega_fit = 0, gamma_theory = 0, omega_theory = 0;
  double fit_t_begin = 0, fit_t_end = 0;
  int fit_points = 0;
  std::string fit_failure;  // why the rates could not be fitted (NaN then); empty when fitted
  double seconds = 0, ns_per_particle_step = 0, particle_steps_per_second = 0;
  std::string precision = "double";   // the particles' (Config::precision)
  double bytes_per_particle = 0;      // in the particle arrays: positions, velocities, id
  long long transfers_in_loop = 0;    // host/device transfers of the time loop (MPI staging aside)
  long long mpi_staging_in_loop = 0;  // copies through host memory for a non-CUDA-aware MPI
  // The atomic operations of the time loop's emulated kernels per particle-step, on global and
  // on shared memory (cunumpy::count_atomics; over the ranks): -1 where no emulated kernel ran
  // (another backend, or a step of loops rather than kernels).
  double global_atomics_per_particle_step = -1, shared_atomics_per_particle_step = -1;
  // The global bytes a particle-step moves by the step's design (its model; -1: none stated).
  double model_bytes_per_particle_step = -1;
  std::map<std::string, double> phase_seconds;      // this rank's (rank 0's in the reports)
  std::map<std::string, double> phase_seconds_max;  // the slowest rank's, phase by phase
  // A halo exchange's messages in flight under other work, and waited for (seconds summed
  // over the ranks): the density's guard sum (under the migration and the diagnostics) and the
  // field's fill (under the field diagnostics).  0 with one rank (no messages).
  struct Overlap {
    double overlapped = 0, waited = 0;
    double hidden() const {  // the share of the flight that work covered
      return overlapped + waited > 0 ? overlapped / (overlapped + waited) : 0.0;
    }
  };
  Overlap guard_sum_overlap, field_fill_overlap;
  // Steps whose density, deposited by the push and posted for reduction, was dropped and
  // deposited again after the migration (a particle had moved past the guards somewhere).
  long long redeposits = 0;
  int ranks = 1;
  int threads_per_rank = 1;  // OpenMP threads (the Runtime's share of the node when unset)
  std::string backend;
  std::string layout, step;  // the field layout and the particle step that ran (their names)
  std::string solver;        // the field solver that ran
  int steps_done = 0;        // steps in the histories (all of them once the run completes)
  bool decomposed = false;
  // Bytes sent to other ranks per step (the mean and the largest over the ranks): measured
  // when decomposed (halo, migration, FFT); replicated: the allreduce's 2 (P - 1) / P of the
  // grid per rank, which replicated_bytes_per_step gives for comparison in both cases.
  double bytes_sent_per_step = 0, max_bytes_sent_per_step = 0, replicated_bytes_per_step = 0;
  long long particles_final = 0;  // over all ranks
  double peak_memory_mb = 0;      // the largest peak resident memory of a rank (MiB)
  std::vector<long long> ids;     // keep_ids: this rank's particle ids at the end, sorted
  int first_step = 0;             // 0, or the checkpoint's step when restarted
  std::vector<std::string> checkpoints, snapshots;  // files written (rank 0)
  bool complete = false;                            // the run ended (not a flush during the run)
};

// What summary.json reports of a run's health: the largest relative change of the total energy
// (NaN-propagating: non-finite when the run produced NaN or inf, NaN when the initial energy
// is zero, subnormal or not finite), and whether the run is unhealthy ("diverged": a
// non-finite diagnostic at any step, an initial energy whose relative change means nothing,
// or a change of more than half the initial energy), with the first reason found.
struct Health {
  double max_relative_energy_error = 0.0;
  bool diverged = false;
  std::string reason;  // empty when healthy
};
Health health_of(const Results& results);

}  // namespace pic
