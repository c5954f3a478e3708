// cunumpy/particle_io.hpp: a ParticleSet as openPMD particle records, and back (needs HDF5).
//
//   cunumpy::OpenPmdSeries series("out", world);
//   auto it = series.iteration(step, time, dt);
//   cunumpy::write_particles(it, "electrons", p, {.charge = -1, .weighting = "w"});
//   it.close();
//   ...
//   cunumpy::OpenPmdParticleReader r("out/data_100.h5", "electrons", world);
//   auto mine = cunumpy::read_particles<float>(r, first, n, cunumpy::Backend::cuda);
//
// Every column of the set is a record: positions as position/x, y, z (in the set's precision);
// with `cells`, the int32 cells as positionOffset/x, ... and the offsets within them as position,
// both in cell units (unitSI: the cell's length, so a reader's position + positionOffset is the
// coordinate); velocities as momentum/x, ... as they are (per unit mass: the species' mass is
// the mass record); ids as id (uint64, as openPMD asks); the named columns as scalar records of
// their names and types, but for the one named as the weighting, written as openPMD's weighting
// record.  Reading builds the set back: its layout from the records (the axes, cells, ids), every
// other per-particle record as a named column of its type, so a set written and read back has
// the same columns, rows and bits (in another precision, converted by HDF5).
#pragma once

#include <string>
#include <vector>

#include <cunumpy/openpmd.hpp>
#include <cunumpy/particles.hpp>

namespace cunumpy {

// Writes rows [0, p.n) of every column of `p` as species `species` of the iteration, each rank
// its particles (a device set is copied to the host, counted).  Collective.  ValueError for a
// weighting column that is missing or not double, or a set with cells and no cell_size.
template <typename Real>
void write_particles(OpenPmdIteration& iteration, const std::string& species,
                     const ParticleSet<Real>& p, const ParticleSpecies& info = ParticleSpecies());

// Rows [first, first + n) of the reader's species as a set on `backend` of `capacity` rows (at
// least n; 0: n), p.n = n.  Collective.  IoError for rows past the file's particles or a record
// of a type no column takes.
template <typename Real>
ParticleSet<Real> read_particles(const OpenPmdParticleReader& reader, long long first, long long n,
                                 Backend backend, long long capacity = 0);

}  // namespace cunumpy
