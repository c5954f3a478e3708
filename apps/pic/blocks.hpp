// apps/pic/blocks.hpp: a rank's part of a snapshot's fields, on the host (what the openPMD writer
// of checkpoint.hpp takes beside the particles).
#pragma once

#include <vector>

#include <cunumpy/array.hpp>

namespace pic {

struct MeshBlock {
  std::vector<long long> global, offset, count;  // C order: x, then y
  std::vector<double> spacing;
  cunumpy::Array<double> rho;
  std::vector<cunumpy::Array<double>> e;  // one per axis
};

}  // namespace pic
