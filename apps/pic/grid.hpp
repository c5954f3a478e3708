// apps/pic/grid.hpp: the one grid of the mini-app, a rank's guarded local grid.
//
// Every field layout (layout.hpp) gives its rank a block of the periodic nx x ny node grid with
// `guard` nodes on each side of each axis: node (i, j) of the block, i in [-guard, lnx + guard),
// at (i + guard) * row + (j + guard), row = lny + 2 guard (1D: row 1, j = 0).  Replicated: the
// block is the whole box, its guards the periodic images; decomposed: the rank's part of the
// box, its guards the neighbours' nodes.  Every particle step deposits into and gathers from
// this grid without wrapping an index (the layout sums the guards into their owners after a
// deposit and fills them before a gather), so every step runs on every layout.
#pragma once

#include "pic_kernels.hpp"

namespace pic {

struct LocalGrid {
  int dim = 1;                 // 1 or 2
  int order = 1;               // 1: CIC, 2: TSC
  long long nx = 0, ny = 1;    // the whole grid's nodes (ny = 1 in 1D)
  long long lnx = 0, lny = 1;  // the block's nodes
  long long x0 = 0, y0 = 0;    // its first node
  long long guard = 0;         // guard nodes on each side
  long long row = 1;           // the guarded row (lny + 2 guard; 1 in 1D)
  double lx = 0, ly = 1;       // the box
  double dx = 0, dy = 1;       // a cell
  bool whole_box = true;       // the block is the whole box (replicated)

  bool two() const noexcept { return dim == 2; }
  // Nodes of the guarded block (the arrays' size).
  long long nodes() const noexcept { return (lnx + 2 * guard) * row; }
  // The owned nodes' count.
  long long owned() const noexcept { return lnx * lny; }
  // The guarded index of owned node k (k in [0, owned()), row-major over the block).
  CUNUMPY_HD_INLINE long long owned_index(long long k) const {
    const long long i = k / lny, j = k % lny;
    return (i + guard) * row + (dim == 2 ? j + guard : 0);
  }
  // The per-particle math's view of it (kernels::for_each_node): local, no wrapping.
  kernels::Grid kernel_grid() const {
    kernels::Grid g = kernels::local_grid(order, dim == 2, 1.0 / dx, dim == 2 ? 1.0 / dy : 1.0, x0,
                                          y0, guard, row);
    g.nx = nx;
    g.ny = ny;
    return g;
  }
};

}  // namespace pic
