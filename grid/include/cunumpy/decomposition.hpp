// cunumpy/decomposition.hpp: a Cartesian decomposition of a 1D/2D/3D box of cells over the
// ranks of a communicator: the rank grid, each rank's owned cells, its neighbours, and the
// global <-> local index maps.  The halo exchange and the particle migration build on it.
//
//   cunumpy::CartesianDecomposition d(world, {256, 256}, {.periodic = {true, true}});
//   auto [x0, x1] = d.owned(0);                    // this rank's cells along x: [x0, x1)
//   int right = d.neighbour(0, +1);                // proc_null past a non-periodic boundary
//   long long i = d.to_local(0, global_i);         // 0 for the first owned cell
//   int owner = d.owner_of({gx, gy});              // the rank that owns a global cell
//
// The rank grid is chosen as MPI_Dims_create does (as square as possible) unless given, with
// the larger factors along the longer axes; ranks are laid out row-major (the last axis
// fastest), as MPI_Cart_create does without reordering.  Cells split as split_range does:
// parts of nearly equal size, in order.  Pure arithmetic: it communicates nothing.
#pragma once

#include <array>
#include <optional>
#include <string>

#include <cunumpy/arithmetic.cuh>
#include <cunumpy/comm.hpp>

namespace cunumpy {

// Which axes are periodic, and the rank grid when it is given rather than chosen.
struct DecompositionOptions {
  std::array<bool, 3> periodic{true, true, true};  // per axis (the first ndim are used)
  std::optional<std::array<int, 3>> dims;          // the rank grid; nothing: chosen
};

// MPI_Dims_create's choice for `ranks` over the axes of `cells`: factors as equal as possible,
// the largest along the axis with the most cells.  ValueError for ranks < 1 or ndim not 1-3.
std::array<int, 3> dims_create(int ranks, int ndim, std::array<long long, 3> cells);

// A box of cells split over the ranks of a communicator into a Cartesian grid of blocks.
class CartesianDecomposition {
 public:
  // `cells`: the global box, 1 to 3 axes ({nx}, {nx, ny} or {nx, ny, nz}).
  CartesianDecomposition(const Comm& comm, std::initializer_list<long long> cells,
                         DecompositionOptions options = {});
  // The same for rank `rank` of `ranks` (what each rank of a communicator of that size sees).
  CartesianDecomposition(int rank, int ranks, std::initializer_list<long long> cells,
                         DecompositionOptions options = {});

  int ndim() const noexcept { return ndim_; }
  int rank() const noexcept { return rank_; }
  int ranks() const noexcept { return ranks_; }
  const std::array<int, 3>& dims() const noexcept { return dims_; }
  const std::array<long long, 3>& cells() const noexcept { return cells_; }
  bool periodic(int axis) const { return options_.periodic[checked_axis(axis)]; }
  // This rank's position in the rank grid.
  const std::array<int, 3>& coords() const noexcept { return coords_; }

  // The cells rank `coords` owns along `axis`: [begin, end).
  IndexRange owned(int axis) const { return owned_by(axis, coords_[checked_axis(axis)]); }
  IndexRange owned_by(int axis, int coord) const;
  // This rank's cell count along `axis`, and in all.
  long long local_cells(int axis) const;
  long long local_size() const;

  // The rank at `coords` (wrapped on periodic axes; proc_null outside a non-periodic one).
  int rank_of(std::array<int, 3> coords) const;
  // The neighbour `steps` ranks away along `axis` (+1 right, -1 left); proc_null past a
  // non-periodic boundary; this rank itself when the axis has one rank and is periodic.
  int neighbour(int axis, int steps) const;
  // The rank that owns a global cell (periodic axes wrap it; ValueError outside a
  // non-periodic axis).
  int owner_of(std::array<long long, 3> cell) const;
  // Global <-> local cell index along `axis` (local 0 is the first owned cell; no bounds check:
  // guard cells map outside [0, local_cells)).
  long long to_local(int axis, long long global) const { return global - owned(axis).begin; }
  long long to_global(int axis, long long local) const { return local + owned(axis).begin; }

  // ValueError unless `comm` is the communicator this decomposition describes (same rank and
  // size); `who` names the caller.
  void check_communicator(const Comm& comm, const char* who) const;

  // "2 x 2 ranks over 256 x 256 cells (periodic, periodic); rank 3 at (1, 1) owns [128, 256) x
  // [128, 256)".
  std::string str() const;

 private:
  int checked_axis(int axis) const;
  int ndim_ = 1, rank_ = 0, ranks_ = 1;
  std::array<long long, 3> cells_{1, 1, 1};
  std::array<int, 3> dims_{1, 1, 1};
  std::array<int, 3> coords_{0, 0, 0};
  DecompositionOptions options_;
};

}  // namespace cunumpy
