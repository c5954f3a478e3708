// apps/pic/blocks.hpp: a rank's part of a snapshot, on the host: its block of the fields and
// its particles (what the openPMD writer of checkpoint.hpp takes).
#pragma once

#include <cstdint>
#include <vector>

#include <cunumpy/array.hpp>

namespace pic {

struct MeshBlock {
  std::vector<long long> global, offset, count;  // C order: x, then y
  std::vector<double> spacing;
  cunumpy::Array<double> rho;
  std::vector<cunumpy::Array<double>> e;  // one per axis
};

struct ParticleBlock {
  std::vector<cunumpy::Array<double>> position, velocity;     // one per axis (double particles)
  std::vector<cunumpy::Array<float>> position32, velocity32;  // or these (single precision)
  // Mixed precision: position32 holds the offsets in cell units within these cells, whose
  // lengths are cell_size (openPMD's positionOffset).
  std::vector<cunumpy::Array<std::int32_t>> cells;
  std::vector<double> cell_size;
  cunumpy::Array<std::int64_t> id;
  long long count = 0;
  double weight = 1.0;
  std::vector<double> patch_offset, patch_extent;  // the region of this rank's particles
};

}  // namespace pic
