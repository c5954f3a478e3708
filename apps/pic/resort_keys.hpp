// apps/pic/resort_keys.hpp: the Morton keys of the re-sort (pic.cpp's resort): each particle's
// cell along each axis, encoded by cunumpy_morton_encode2/3; on the host by whole vectors
// (resort_keys.cpp, one Google Highway source, the instruction set chosen at run time).
#pragma once

#include <cstdint>

#include <cunumpy/morton.cuh>

#include "pic_kernels.hpp"

namespace pic {

// A particle's cell along axis a: floor(x / dx) wrapped into the grid (inv: 1 / dx), or with
// stored cells (inv 1) the cell itself.
template <typename Real>
struct CellOf {
  kernels::Positions<Real> pos;
  double inv[3];
  long long cells[3];
  CUNUMPY_HD_INLINE unsigned long long operator()(int a, long long i) const {
    return static_cast<unsigned long long>(
        kernels::wrap(kernels::node_of(pos.at(a, i) * inv[a]), cells[a]));
  }
  // The key of particle i's cell in `dim` dimensions (1D: its cell along x and 0).
  CUNUMPY_HD_INLINE unsigned long long key(int dim, long long i) const {
    if (dim == 3) return cunumpy_morton_encode3((*this)(0, i), (*this)(1, i), (*this)(2, i));
    return cunumpy_morton_encode2((*this)(0, i), dim == 2 ? (*this)(1, i) : 0ull);
  }
};

// keys[i] = cell.key(dim, i) for i in [0, n), on the host (OpenMP threads, whole vectors of
// particles on the host's vector target, the rest and any lane whose cell needs the wrap one at
// a time): the same keys, bit for bit.  `baseline`: on the baseline target, as under the
// portable choice (CUNUMPY_HOST_SIMD).
void morton_keys(const CellOf<float>& cell, int dim, long long n, std::uint64_t* keys,
                 bool baseline = false);
void morton_keys(const CellOf<double>& cell, int dim, long long n, std::uint64_t* keys,
                 bool baseline = false);

}  // namespace pic
