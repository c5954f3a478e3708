// apps/pic/pic.hpp: an electrostatic particle-in-cell simulation on cunumpy, 1D to 3D,
// periodic, in normalised units (omega_p = 1, lambda_D = 1, electrons of charge -1 and mass 1
// on a fixed neutralising ion background).
//
// The program is two choices and a loop (pic.cpp):
//   a field layout (layout.hpp): replicated (the whole grid on every rank, the density summed
//     by an allreduce) or decomposed (each rank owns a block of cells and its particles: halo
//     exchange, distributed FFT, particle migration).  Either gives a guarded local grid.
//   a particle step (step.hpp): fused host (one pass), builtin (separate parallel_for passes),
//     deterministic (exact density sums) or rtc (the kernel catalog's run-time compiled
//     kernels), each running on either layout.
// One step: deposit, reduce the density, solve Poisson's equation by FFT, fill the field's
// guards, gather and push, move, migrate, diagnose, output; every `sort_every` steps a re-sort
// of the particles along a Morton curve of their cells.  The options are config_table.hpp's
// rows (the command line, the checkpoint, summary.json); the per-particle math is
// pic_kernels.hpp's, shared by the host loops, nvcc and NVRTC.  The loop makes no host/device
// transfer of its own (MPI staging aside, counted apart); each phase is an NVTX range and a
// timed region.
#pragma once

#include <cunumpy/cunumpy.hpp>

#include "config.hpp"
#include "grid.hpp"
#include "particles.hpp"
#include "results.hpp"

namespace pic {

// Runs the simulation on the active backend over `comm`.
Results run(const Config& config, const cunumpy::Comm& comm);

// The electron density per cell after the initial deposit (summed over the ranks), as a host
// array: for the rank-count comparison.
cunumpy::Array<double> initial_density(const Config& config, const cunumpy::Comm& comm);
// The particles [0, n) re-sorted along a Morton curve of their cells (each column's rows
// gathered in the new order; the spare rows' values are not kept): every `sort_every` steps.
template <typename Real>
void resort(Particles<Real>& p, const LocalGrid& grid);
// This rank's initial particles (x[, y], vx[, vy] rows), as a host array (n_local, 2 * dim);
// mixed precision's positions as (cell + offset) * cell size.
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
