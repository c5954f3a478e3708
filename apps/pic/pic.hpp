// apps/pic/pic.hpp: an electrostatic particle-in-cell simulation on cunumpy, 1D and 2D,
// periodic, in normalised units (omega_p = 1, lambda_D = 1, electrons of charge -1 and mass 1
// on a fixed neutralising ion background).
//
// One step: deposit the electron density (CIC or TSC; by atomics on the device, private
// per-thread grids on the host, or deterministically by quantised per-particle contributions
// summed with segment_sum), sum it over the ranks, solve Poisson's equation by FFT
// (cunumpy::FftPlan: FFTW on host and emulated, cuFFT on cuda), gather the field at the
// particles, leapfrog push, and every `sort_every` steps re-sort the particles along a Morton
// curve of their cells.  Two layouts: replicated (the grid on every rank, the particles split
// by id, the density summed with an allreduce of the whole grid) and decomposed (--decompose:
// each rank owns a block of cells and the particles in it; cunumpy::HaloExchange sums the
// deposit's guards and fills the field's, cunumpy::DistributedFft solves, and
// cunumpy::ParticleMigration moves the particles that left).  The loop makes no host/device
// transfer (decomposed on several ranks, a device's FFT data is staged: see
// DistributedFft); each phase is an NVTX range and a timed region.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace pic {

struct Results;

struct Config {
  std::string case_name = "landau";  // landau | two_stream | custom
  int dim = 1;                       // 1 or 2
  long long particles = 200000;      // over all ranks
  int cells_x = 64;
  int cells_y = 1;  // 2D only
  int steps = 300;
  double dt = 0.1;
  double k = 0.5;           // wave number of the perturbation along x; box 2 pi / k
  double amplitude = 0.01;  // density perturbation
  double vth = 1.0;
  double beam_velocity = 0.0;  // two streams at +-beam_velocity when > 0
  std::uint64_t seed = 1;
  bool quiet = true;  // quiet start (regular positions, van der Corput velocities)
  int order = 1;      // 1: CIC, 2: TSC
  bool deterministic =
      false;  // deposit by sort + segment_sum, bit-identical over runs, backends and ranks
  int sort_every = 20;   // Morton re-sort period (0: never)
  bool progress = true;  // rank 0 prints progress
  // builtin: the parallel_for loops compiled with the program (nvcc on cuda); rtc: the kernel
  // catalog's deposit, gather and push (host versions on host, their CUDA sources compiled at
  // run time on cuda, the kernel emulator on emulated).  The deterministic deposit is builtin.
  std::string kernels = "builtin";
  // The host backend's particle step, 2D, builtin kernels, not deterministic, replicated:
  // fused (host_step.hpp: gather, push and the next deposit in one pass over the particles) or
  // separate (three passes, as on every other path).
  std::string host_step = "fused";
  // The grid split over the ranks (each owns a block of cells and the particles in it: halo
  // sum and fill, particle migration and a distributed FFT every step), instead of replicated
  // on every rank with an allreduce of the whole density.
  bool decompose = false;
  bool keep_ids = false;  // Results::ids gets this rank's particle ids at the end
  // Output in `output_folder`: openPMD fields and particles every `output_every` steps
  // (openpmd/data_<step>.h5), checkpoints every `checkpoint_every` steps
  // (checkpoints/checkpoint_<step>.h5); `restart`: continue from that checkpoint.
  std::string output_folder;
  int output_every = 0;
  int checkpoint_every = 0;
  std::string restart;
  bool overwrite = false;  // the openPMD output may replace an earlier series in the folder
  // Called on rank 0 with the results so far every `flush_every` steps (0: never), e.g. to
  // write them, so that a run killed later keeps what it computed.
  int flush_every = 0;
  std::function<void(const Results&)> on_flush;
};

// The presets of the named cases (landau: k 0.5, amplitude 0.01; two_stream: k 0.2, beams
// +-2.4, amplitude 0.001); `custom` keeps what was given.
void apply_case(Config& config);

struct Results {
  // mode_energy: the field energy of the perturbed mode (k, 0) alone, which the fits use (the
  // other modes carry particle noise).
  std::vector<double> time, field_energy, mode_energy, kinetic_energy, momentum, total_charge;
  double gamma_fit = 0, omega_fit = 0, gamma_theory = 0, omega_theory = 0;
  double fit_t_begin = 0, fit_t_end = 0;
  int fit_points = 0;
  double seconds = 0, ns_per_particle_step = 0, particle_steps_per_second = 0;
  long long transfers_in_loop = 0;    // host/device transfers of the time loop (MPI staging aside)
  long long mpi_staging_in_loop = 0;  // copies through host memory for a non-CUDA-aware MPI
  std::map<std::string, double> phase_seconds;
  int ranks = 1;
  int threads_per_rank = 1;  // OpenMP threads (the Runtime's share of the node when unset)
  std::string backend;
  int steps_done = 0;  // steps in the histories (all of them once the run completes)
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

// The box's lengths (2 pi / k along x; y in proportion to the cells in 2D, 1 in 1D) and the
// physical electrons per macro-particle (the box's volume over the particle count, in units of
// the mean density: the particles' mass and openPMD weighting).
struct BoxLengths {
  double lx, ly;
};
BoxLengths box_of(const Config& config);
double particle_weight(const Config& config);

// Runs the simulation on the active backend over `comm`.
Results run(const Config& config, const cunumpy::Comm& comm);

// The electron density per cell after the initial deposit (summed over the ranks), as a host
// array: for the rank-count comparison.
cunumpy::Array<double> initial_density(const Config& config, const cunumpy::Comm& comm);
// This rank's initial particles (x[, y], vx[, vy] rows), as a host array (n_local, 2 * dim).
cunumpy::Array<double> initial_particles(const Config& config, const cunumpy::Comm& comm);

// Creates `folder` (and its parents) and checks that files can be written there: before the
// first step, so that a bad --output fails at once, not after the run.  An existing folder that
// holds earlier outputs is refused unless `overwrite`.  cunumpy::Error naming the folder.
void prepare_output(const std::string& folder, bool overwrite);

// Writes energy.csv and summary.json into `folder`: each to a temporary file in the folder,
// flushed to disk, then renamed into place (summary.json last), so a reader never sees a
// partial file; a failed write is an Error naming the file.  Non-finite values are JSON null.
void write_outputs(const std::string& folder, const Config& config, const Results& results);

}  // namespace pic
