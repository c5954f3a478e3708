// apps/pic/grid.hpp: the one grid of the mini-app, a rank's guarded local grid.
//
// Every field layout (layout.hpp) gives its rank a block of the periodic nx x ny x nz node grid
// with `guard` nodes on each side of each axis: node (i, j, l) of the block, i in [-guard, lnx +
// guard), at (i + guard) * row + (j + guard) * col + (l + guard) in 3D, col = lnz + 2 guard and
// row = (lny + 2 guard) col; in 2D at (i + guard) * row + (j + guard), row = lny + 2 guard; in
// 1D at i + guard.  Replicated: the block is the whole box, its guards the periodic images;
// decomposed: the rank's part of the box, its guards the neighbours' nodes.  Every particle
// step deposits into and gathers from this grid without wrapping an index (the layout sums the
// guards into their owners after a deposit and fills them before a gather), so every step runs
// on every layout.
#pragma once

#include <vector>

#include "pic_kernels.hpp"

namespace pic {

struct LocalGrid {
  int dim = 1;                          // 1, 2 or 3
  int order = 1;                        // 1: CIC, 2: TSC
  long long nx = 0, ny = 1, nz = 1;     // the whole grid's nodes (1 past the dimension)
  long long lnx = 0, lny = 1, lnz = 1;  // the block's nodes
  long long x0 = 0, y0 = 0, z0 = 0;     // its first node
  long long guard = 0;                  // guard nodes on each side
  long long row = 1;                    // the stride of axis 0 (1 in 1D)
  long long col = 1;                    // the stride of axis 1 in 3D (1 in 2D)
  double lx = 0, ly = 1, lz = 1;        // the box
  double dx = 0, dy = 1, dz = 1;        // a cell
  bool whole_box = true;                // the block is the whole box (replicated)

  bool two() const noexcept { return dim == 2; }
  bool has_y() const noexcept { return dim >= 2; }
  bool has_z() const noexcept { return dim == 3; }
  // Nodes of the guarded block (the arrays' size).
  long long nodes() const noexcept { return (lnx + 2 * guard) * row; }
  // The owned nodes' count.
  long long owned() const noexcept { return lnx * lny * lnz; }
  // A cell's volume (its length in 1D, area in 2D).
  double cell_volume() const noexcept { return dx * dy * dz; }
  // owned_indices()(k): the guarded index of owned node k (k in [0, owned()), row-major over the
  // block), for loops over the owned nodes: the block's extents' reciprocals computed once.
  struct OwnedIndices {
    long long lny, lnz, row, col, guard;
    double inv_lny, inv_lnz;
    int dim;
    CUNUMPY_HD_INLINE long long operator()(long long k) const {
      return dim == 3 ? at<3>(k) : dim == 2 ? at<2>(k) : at<1>(k);
    }
    // The same for a grid of Dim dimensions known at compile time (no test of the dimension
    // per index: the loops over every owned node; quotient by an extent of 1 is exact).
    template <int Dim>
    CUNUMPY_HD_INLINE long long at(long long k) const {
      if constexpr (Dim == 1) {
        return k + guard;
      } else if constexpr (Dim == 2) {
        const long long i = kernels::quotient(k, lny, inv_lny), j = k - i * lny;
        return (i + guard) * row + (j + guard);
      } else {
        const long long ij = kernels::quotient(k, lnz, inv_lnz), l = k - ij * lnz;
        const long long i = kernels::quotient(ij, lny, inv_lny), j = ij - i * lny;
        return (i + guard) * row + (j + guard) * col + (l + guard);
      }
    }
  };
  CUNUMPY_HD_INLINE OwnedIndices owned_indices() const {
    return {
        lny, lnz, row, col, guard, 1.0 / static_cast<double>(lny), 1.0 / static_cast<double>(lnz),
        dim};
  }
  // Per axis, the first `dim` of them: the whole grid's nodes, the block's, its first node, a
  // cell's size, the box's length.
  std::vector<long long> global_nodes() const { return first_axes<long long>(nx, ny, nz); }
  std::vector<long long> block_nodes() const { return first_axes<long long>(lnx, lny, lnz); }
  std::vector<long long> block_origin() const { return first_axes<long long>(x0, y0, z0); }
  std::vector<double> spacing() const { return first_axes<double>(dx, dy, dz); }
  std::vector<double> lengths() const { return first_axes<double>(lx, ly, lz); }
  // The per-particle math's view of it (kernels::for_each_node): local, no wrapping.
  kernels::Grid kernel_grid() const {
    kernels::Grid g = kernels::local_grid(order, dim >= 2, 1.0 / dx, dim >= 2 ? 1.0 / dy : 1.0, x0,
                                          y0, guard, row);
    g.nx = nx;
    g.ny = ny;
    g.nz = nz;
    return dim == 3 ? kernels::with_axis_z(g, 1.0 / dz, z0, col) : g;
  }

 private:
  template <typename T>
  std::vector<T> first_axes(T a, T b, T c) const {
    std::vector<T> v{a, b, c};
    v.resize(static_cast<std::size_t>(dim));
    return v;
  }
};

}  // namespace pic
