// apps/pic/config.hpp: the mini-app's configuration, the named cases, and what follows from
// them (the box, a particle's weight).  config_table.hpp defines each option once.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

namespace pic {

struct Results;

struct Config {
  std::string case_name = "landau";  // landau | two_stream | custom
  int dim = 1;                       // 1, 2 or 3
  long long particles = 200000;      // over all ranks
  int cells_x = 64;
  int cells_y = 1;  // 2D and 3D
  int cells_z = 1;  // 3D only
  int steps = 300;
  double dt = 0.1;
  double k = 0.5;  // wave number of the perturbation; box 2 pi / k along it
  // The perturbation's wave vector: along x, the xy diagonal (k (1, 1, 0) / sqrt 2: 2D and 3D)
  // or the xyz diagonal (k (1, 1, 1) / sqrt 3: 3D); the box spans one wavelength along each
  // axis the vector has a component on.
  std::string direction = "x";
  double amplitude = 0.01;  // density perturbation
  double vth = 1.0;
  double beam_velocity = 0.0;  // two streams at +-beam_velocity when > 0
  std::uint64_t seed = 1;
  bool quiet = true;  // quiet start (regular positions, van der Corput velocities)
  int order = 1;      // 1: CIC, 2: TSC
  bool deterministic =
      false;  // deposit by sort + segment_sum, bit-identical over runs, backends and ranks
  // The particles' precision: double, single (float positions and velocities: half the
  // particle memory and traffic; fields and sums stay double, and each particle's arithmetic
  // too but in the fused host step's 2D and 3D CIC loops on real grids, which compute in float:
  // twice the vector lanes, host_step.hpp) or mixed (per axis an int32 cell and a float offset
  // within it, float velocities: particles.hpp).
  std::string precision = "double";
  // Morton re-sort period (0: never).  50, PICKSC pic2's and ppic2's sortime: a re-sort costs
  // about three particle-steps, and the step after 50 is within a few percent of the step
  // after 20 (scripts/compare_picksc.sh's problem, docs/mini-app.md).
  int sort_every = 50;
  bool progress = true;  // rank 0 prints progress
  // builtin: the parallel_for loops compiled with the program (nvcc on cuda); rtc: the kernel
  // catalog's deposit, gather and push (host versions on host, their CUDA sources compiled at
  // run time on cuda, the kernel emulator on emulated).  The deterministic deposit is builtin.
  std::string kernels = "builtin";
  // The host backend's particle step with the builtin kernels (1D to 3D, CIC and TSC, on either
  // layout, deterministic included): fused (host_step.hpp: gather, push and the next deposit in
  // one pass over the particles) or separate (three passes, as on every other path).
  std::string host_step = "fused";
  // The device backends' particle step: auto (the separate passes of `kernels`) or tiled
  // (tiled_step.cpp: particles kept sorted by tile, one thread block a tile, the deposit summed
  // in shared memory; every precision, both layouts).
  std::string particle_step = "auto";
  // The grid split over the ranks (each owns a block of cells and the particles in it: halo
  // sum and fill, particle migration and a distributed FFT every step), instead of replicated
  // on every rank with an allreduce of the whole density.
  bool decompose = false;
  // The field solver (solver.hpp): fft (spectral, DistributedFft) or petsc (finite differences,
  // PETSc's conjugate gradients with multigrid; host backend).
  std::string solver = "fft";
  std::string backend;    // host | cuda | emulated; empty: CUNUMPY_BACKEND (the Runtime's)
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

// The box's lengths (2 pi / k along x; y and z in proportion to their cells, 1 past the
// dimension) and the physical electrons per macro-particle (the box's volume over the particle
// count, in units of the mean density: the particles' mass and openPMD weighting).
struct BoxLengths {
  double lx, ly, lz;
};
// The grid's cells over the box (cells_x * cells_y * cells_z of the dimension).
long long total_cells(const Config& config);
// The perturbed mode's index per axis (1 on the axes of --direction, 0 elsewhere).
std::array<int, 3> mode_of(const Config& config);
BoxLengths box_of(const Config& config);
double particle_weight(const Config& config);

// Every option within what config_table.hpp's rows accept, and the rules between options
// (particles at least the ranks, 2D and 3D cells, what 3D runs so far, output folder for
// output); ValueError saying what is allowed.
void validate(const Config& config, int ranks);

}  // namespace pic
