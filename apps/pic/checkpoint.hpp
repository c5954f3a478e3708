// apps/pic/checkpoint.hpp: the mini-app's checkpoints and openPMD output.
//
// A checkpoint is an openPMD file (<folder>/checkpoints/checkpoint_<step>.h5, written under a
// temporary name and renamed when complete) holding everything a run needs to continue: the
// particles with their ids in each rank's order (position, momentum = mass v at the half step,
// weighting), the step and time, the configuration and the diagnostics' histories so far (a
// "/cunumpy" group beside the openPMD tree), the ranks' particle counts, and a checksum of the
// particles.  Restarting at the same rank count gives every rank its particles back in the
// same order, so a deterministic run continues bit for bit; at another count, the particles
// are split evenly (and migrate to their owners on a decomposed grid).  A truncated, corrupted
// or foreign file is refused with an IoError naming it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "blocks.hpp"
#include "config.hpp"
#include "results.hpp"

namespace cunumpy {
class OpenPmdSeries;
}

namespace pic {

struct Checkpoint {
  Config config;
  int step = 0;  // the steps done: the run continues at this step
  Results history;
  // This rank's particles (rows in order): x[, y[, z]], vx[, vy[, vz]], id; mixed precision:
  // x, y, z the offsets within the cells cx[, cy[, cz]].
  std::vector<double> x, y, z, vx, vy, vz;
  std::vector<std::int32_t> cx, cy, cz;
  std::vector<std::int64_t> id;
  long long total = 0;
};

// Writes `c` (every rank its particles) as <folder>/checkpoints/checkpoint_<step>.h5.
// Collective; returns the file's path.
std::string write_checkpoint(const std::string& folder, const cunumpy::Comm& comm,
                             const Checkpoint& c);
// The configuration a checkpoint was written with.  Collective.
Config read_checkpoint_config(const std::string& path, const cunumpy::Comm& comm);
// Reads a checkpoint: this rank's share of the particles, and the rest.  Collective.
Checkpoint read_checkpoint(const std::string& path, const cunumpy::Comm& comm);

// The openPMD output of a run: fields (rho, E: this rank's cells) and particles every N
// steps, <folder>/openpmd/data_<step>.h5 (host arrays: the caller copies device data).
class SnapshotWriter {
 public:
  // Checks the folder before the first step (IoError naming it).  Collective.
  SnapshotWriter(const std::string& folder, const cunumpy::Comm& comm, bool overwrite);
  ~SnapshotWriter();
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;
  // Collective; returns the file written.
  std::string write(int step, double time, double dt, const MeshBlock& mesh,
                    const ParticleBlock& particles);

 private:
  std::shared_ptr<cunumpy::OpenPmdSeries> series_;  // shared_ptr: complete only in checkpoint.cpp
};

}  // namespace pic
