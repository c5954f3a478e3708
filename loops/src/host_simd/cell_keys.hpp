// loops/src/host_simd/cell_keys.hpp: the Morton keys of particles' cells on a periodic grid
// (cunumpy::periodic_cell_keys): the scalar formula (the device's) and the vector loop
// (generators.cpp, one Highway source), which handles whole vectors from `begin` on and returns
// where it stopped.
#pragma once

#include <cstdint>

#include <cunumpy/morton.cuh>

namespace cunumpy::detail::host_simd {

// A particle's position columns (x[a]: offsets in cell units with `cell`), the inverse cell
// sizes (1 with cells) and the cells per axis; axes past the dimension unread.
template <typename R>
struct CellKeyColumns {
  const R* x[3];
  const std::int32_t* cell[3];  // nullptr: whole coordinates
  double inverse[3];
  long long cells[3];
};

// Row i's key: cunumpy_periodic_cell along each axis, Morton-encoded (1D: x's cell and 0).
template <typename R>
CUNUMPY_HD_INLINE unsigned long long cell_key(const CellKeyColumns<R>& c, int dim, long long i) {
  unsigned long long j[3] = {0, 0, 0};
  for (int a = 0; a < dim; ++a) {
    const double s = c.cell[a] != nullptr
                         ? static_cast<double>(c.cell[a][i]) + static_cast<double>(c.x[a][i])
                         : static_cast<double>(c.x[a][i]);
    j[a] = cunumpy_periodic_cell(s * c.inverse[a], c.cells[a]);
  }
  return dim == 3 ? cunumpy_morton_encode3(j[0], j[1], j[2]) : cunumpy_morton_encode2(j[0], j[1]);
}

long long cell_keys(const CellKeyColumns<float>& c, int dim, long long begin, long long end,
                    std::uint64_t* keys);
long long cell_keys(const CellKeyColumns<double>& c, int dim, long long begin, long long end,
                    std::uint64_t* keys);

}  // namespace cunumpy::detail::host_simd
