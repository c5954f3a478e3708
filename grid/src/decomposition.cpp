// The Cartesian decomposition (decomposition.hpp).
#include <cunumpy/decomposition.hpp>

#include <algorithm>
#include <numeric>
#include <vector>

#include <cunumpy/errors.hpp>

namespace cunumpy {

namespace {

std::string triple(const std::array<long long, 3>& v, int n, const char* sep) {
  std::string s;
  for (int d = 0; d < n; ++d) s += (d > 0 ? sep : "") + std::to_string(v[d]);
  return s;
}

}  // namespace

std::array<int, 3> dims_create(int ranks, int ndim, std::array<long long, 3> cells) {
  if (ranks < 1)
    throw ValueError("dims_create: at least one rank is needed, got " + std::to_string(ranks));
  if (ndim < 1 || ndim > 3)
    throw ValueError("dims_create: 1 to 3 axes, got " + std::to_string(ndim));
  // The prime factors of ranks, largest first, each given to the axis whose share (dims so
  // far) is smallest: the factors come out as equal as possible, as MPI_Dims_create's.
  std::vector<int> factors;
  int r = ranks;
  for (int p = 2; static_cast<long long>(p) * p <= r; ++p)
    while (r % p == 0) {
      factors.push_back(p);
      r /= p;
    }
  if (r > 1) factors.push_back(r);
  std::sort(factors.rbegin(), factors.rend());
  std::array<int, 3> dims{1, 1, 1};
  for (int f : factors) {
    int best = 0;
    for (int d = 1; d < ndim; ++d)
      if (dims[d] < dims[best]) best = d;
    dims[best] *= f;
  }
  // MPI_Dims_create orders the factors non-increasing; we give the larger ones to the axes with
  // more cells, so each rank's part stays as square as the box allows.
  std::array<int, 3> order{0, 1, 2};
  std::stable_sort(order.begin(), order.begin() + ndim,
                   [&](int a, int b) { return cells[a] > cells[b]; });
  std::array<int, 3> sorted = dims;
  std::sort(sorted.begin(), sorted.begin() + ndim, std::greater<>());
  std::array<int, 3> out{1, 1, 1};
  for (int i = 0; i < ndim; ++i) out[order[i]] = sorted[i];
  return out;
}

CartesianDecomposition::CartesianDecomposition(const Comm& comm,
                                               std::initializer_list<long long> cells,
                                               DecompositionOptions options)
    : CartesianDecomposition(comm.rank(), comm.size(), cells, std::move(options)) {}

CartesianDecomposition::CartesianDecomposition(int rank, int ranks,
                                               std::initializer_list<long long> cells,
                                               DecompositionOptions options)
    : options_(std::move(options)) {
  if (cells.size() < 1 || cells.size() > 3)
    throw ValueError("CartesianDecomposition: a box of 1 to 3 axes, got " +
                     std::to_string(cells.size()) + " extents");
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw ValueError("CartesianDecomposition: rank " + std::to_string(rank) + " of " +
                     std::to_string(ranks) + " does not exist");
  ndim_ = static_cast<int>(cells.size());
  rank_ = rank;
  ranks_ = ranks;
  int d = 0;
  for (long long c : cells) {
    if (c < 1)
      throw ValueError("CartesianDecomposition: every axis needs at least one cell, axis " +
                       std::to_string(d) + " has " + std::to_string(c));
    cells_[d++] = c;
  }
  dims_ = options_.dims.value_or(dims_create(ranks, ndim_, cells_));
  long long product = 1;
  for (int a = 0; a < 3; ++a) {
    if (a >= ndim_ && dims_[a] != 1)
      throw ValueError("CartesianDecomposition: dims give " + std::to_string(dims_[a]) +
                       " ranks along axis " + std::to_string(a) + " of a " + std::to_string(ndim_) +
                       "D box");
    if (dims_[a] < 1) throw ValueError("CartesianDecomposition: dims must be positive");
    product *= dims_[a];
  }
  if (product != ranks)
    throw ValueError("CartesianDecomposition: dims " + std::to_string(dims_[0]) + " x " +
                     std::to_string(dims_[1]) + " x " + std::to_string(dims_[2]) + " make " +
                     std::to_string(product) + " ranks, the communicator has " +
                     std::to_string(ranks));
  for (int a = 0; a < ndim_; ++a)
    if (cells_[a] < dims_[a])
      throw ValueError("CartesianDecomposition: axis " + std::to_string(a) + " has " +
                       std::to_string(cells_[a]) + " cells for " + std::to_string(dims_[a]) +
                       " ranks; every rank needs at least one cell "
                       "(use fewer ranks along it or more cells)");
  // Row-major: the last axis fastest.
  int rest = rank;
  for (int a = 2; a >= 0; --a) {
    coords_[a] = rest % dims_[a];
    rest /= dims_[a];
  }
}

int CartesianDecomposition::checked_axis(int axis) const {
  if (axis < 0 || axis >= ndim_)
    throw ValueError("CartesianDecomposition: axis " + std::to_string(axis) + " of a " +
                     std::to_string(ndim_) + "D box does not exist");
  return axis;
}

IndexRange CartesianDecomposition::owned_by(int axis, int coord) const {
  checked_axis(axis);
  if (coord < 0 || coord >= dims_[axis])
    throw ValueError("CartesianDecomposition: coordinate " + std::to_string(coord) +
                     " along axis " + std::to_string(axis) + " is outside the rank grid (" +
                     std::to_string(dims_[axis]) + " ranks)");
  return split_range(cells_[axis], coord, dims_[axis]);
}

long long CartesianDecomposition::local_cells(int axis) const {
  const IndexRange r = owned(axis);
  return r.end - r.begin;
}

long long CartesianDecomposition::local_size() const {
  long long n = 1;
  for (int a = 0; a < ndim_; ++a) n *= local_cells(a);
  return n;
}

int CartesianDecomposition::rank_of(std::array<int, 3> coords) const {
  int rank = 0;
  for (int a = 0; a < 3; ++a) {
    int c = a < ndim_ ? coords[a] : 0;
    if (c < 0 || c >= dims_[a]) {
      if (a >= ndim_ || !options_.periodic[a]) return proc_null;
      c = ((c % dims_[a]) + dims_[a]) % dims_[a];
    }
    rank = rank * dims_[a] + c;
  }
  return rank;
}

int CartesianDecomposition::neighbour(int axis, int steps) const {
  checked_axis(axis);
  std::array<int, 3> c = coords_;
  c[axis] += steps;
  return rank_of(c);
}

int CartesianDecomposition::owner_of(std::array<long long, 3> cell) const {
  std::array<int, 3> coords{0, 0, 0};
  for (int a = 0; a < ndim_; ++a) {
    long long g = cell[a];
    if (g < 0 || g >= cells_[a]) {
      if (!options_.periodic[a])
        throw ValueError("CartesianDecomposition: cell " + std::to_string(g) + " along axis " +
                         std::to_string(a) + " is outside the non-periodic box [0, " +
                         std::to_string(cells_[a]) + ")");
      g = ((g % cells_[a]) + cells_[a]) % cells_[a];
    }
    // split_range's parts: part p holds [n p / P, n (p + 1) / P); invert, then correct.
    const long long n = cells_[a], parts = dims_[a];
    long long p = (g * parts + parts - 1) / n;
    p = std::clamp<long long>(p, 0, parts - 1);
    while (p > 0 && split_range(n, static_cast<int>(p), static_cast<int>(parts)).begin > g) --p;
    while (p + 1 < parts && split_range(n, static_cast<int>(p), static_cast<int>(parts)).end <= g)
      ++p;
    coords[a] = static_cast<int>(p);
  }
  return rank_of(coords);
}

std::string CartesianDecomposition::str() const {
  std::array<long long, 3> dims{dims_[0], dims_[1], dims_[2]};
  std::string s =
      triple(dims, ndim_, " x ") + " rank(s) over " + triple(cells_, ndim_, " x ") + " cells (";
  for (int a = 0; a < ndim_; ++a)
    s += (a > 0 ? ", " : "") + std::string(options_.periodic[a] ? "periodic" : "bounded");
  s += "); rank " + std::to_string(rank_) + " at (";
  for (int a = 0; a < ndim_; ++a) s += (a > 0 ? ", " : "") + std::to_string(coords_[a]);
  s += ") owns ";
  for (int a = 0; a < ndim_; ++a) {
    const IndexRange r = owned(a);
    s += (a > 0 ? " x " : "") + std::string("[") + std::to_string(r.begin) + ", " +
         std::to_string(r.end) + ")";
  }
  return s;
}

void CartesianDecomposition::check_communicator(const Comm& comm, const char* who) const {
  if (comm.size() != ranks_ || comm.rank() != rank_)
    throw ValueError(std::string(who) + ": the decomposition is for rank " + std::to_string(rank_) +
                     " of " + std::to_string(ranks_) + ", the communicator is rank " +
                     std::to_string(comm.rank()) + " of " + std::to_string(comm.size()) +
                     "; build the decomposition from the same communicator");
}

}  // namespace cunumpy
