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
#include <cunumpy/particles.hpp>

#include "blocks.hpp"
#include "config.hpp"
#include "results.hpp"

namespace cunumpy {
class OpenPmdSeries;
}

namespace pic {

template <typename Real>
struct Checkpoint {
  Config config;
  int step = 0;  // the steps done: the run continues at this step
  Results history;
  long long total = 0;
  // This rank's particles, rows [0, n) in order, on any backend: every column of the set (the
  // application's named ones too) is written and read back.
  cunumpy::ParticleSet<Real> particles;
};

// Writes `c` (every rank its particles) as <folder>/checkpoints/checkpoint_<step>.h5.
// Collective; returns the file's path.  Instantiated for double and float.
template <typename Real>
std::string write_checkpoint(const std::string& folder, const cunumpy::Comm& comm,
                             const Checkpoint<Real>& c);
// Reads a checkpoint: this rank's share of the particles (on `backend`, capacity n), and the
// rest.  Collective.  Instantiated for double and float.
template <typename Real>
Checkpoint<Real> read_checkpoint(const std::string& path, const cunumpy::Comm& comm,
                                 cunumpy::Backend backend);
// The configuration a checkpoint was written with.  Collective.
Config read_checkpoint_config(const std::string& path, const cunumpy::Comm& comm);

// The openPMD output of a run: fields (rho, E: this rank's cells) and particles every N
// steps, <folder>/openpmd/data_<step>.h5 (host arrays: the caller copies device data).
class SnapshotWriter {
 public:
  // Checks the folder before the first step (IoError naming it).  Collective.
  SnapshotWriter(const std::string& folder, const cunumpy::Comm& comm, bool overwrite);
  ~SnapshotWriter();
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;
  // Collective; returns the file written.  Instantiated for double and float.
  template <typename Real>
  std::string write(int step, double time, double dt, const MeshBlock& mesh,
                    const cunumpy::ParticleSet<Real>& particles,
                    const cunumpy::ParticleSpecies& species);

 private:
  std::shared_ptr<cunumpy::OpenPmdSeries> series_;  // shared_ptr: complete only in checkpoint.cpp
};

}  // namespace pic
