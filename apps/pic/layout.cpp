// The field layouts' shared part (layout.hpp): the guarded arrays, the solve, the fill and the
// diagnostics' sums.  Compiled as CUDA when the CUDA backend is built: the loops then run on
// the device for device arrays.
#include "layout.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "pic.hpp"

namespace pic {

namespace cn = cunumpy;

long long guard_width(int order) {
  return order + 1;
}

namespace layout_loops {

void charge(cn::Backend b, const double* ne, double* rho, long long nodes, double ne_scale) {
  CUNUMPY_FOR_ON(cn::on(b), "charge", nodes, c, rho[c] = 1.0 - ne[c] * ne_scale;);
}

namespace {
// The owned block as lines along its last axis (contiguous in memory), each cut into pieces of
// at most kPiece nodes.  A piece is summed by kLanes interleaved accumulators (independent
// adds that vectorise, no index arithmetic per node) combined in a fixed tree; the pieces'
// sums are then added in order.  The same bits whatever the thread count, on the host and on
// the emulated device alike.
constexpr long long kPiece = 4096;
struct Pieces {
  long long length, per_line, lny, row, col, guard;
  int dim;
  long long count;
};
Pieces pieces_of(const LocalGrid& g) {
  const long long length = g.dim == 3 ? g.lnz : g.dim == 2 ? g.lny : g.lnx;
  const long long per_line = (length + kPiece - 1) / kPiece;
  return {length, per_line, g.lny, g.row, g.col, g.guard, g.dim, g.owned() / length * per_line};
}
template <typename Term>
CUNUMPY_HD_INLINE double piece_sum(const Pieces& s, const Term& term, long long p) {
  constexpr int kLanes = 8;
  const long long line = p / s.per_line, begin = (p % s.per_line) * kPiece,
                  end = begin + kPiece < s.length ? begin + kPiece : s.length;
  long long first = s.guard;  // the line's first node
  if (s.dim == 3)
    first += (line / s.lny + s.guard) * s.row + (line % s.lny + s.guard) * s.col;
  else if (s.dim == 2)
    first += (line + s.guard) * s.row;
  double acc[kLanes] = {};
  long long k = begin;
  for (; k + kLanes <= end; k += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += term(first + k + l);
  for (int l = 0; k < end; ++k, ++l) acc[l] += term(first + k);
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}
// The sum of term over the owned nodes (a GPU: the library's reduction over them).
template <typename Term>
double owned_sum(cn::Backend b, const LocalGrid& g, const char* name, Term term) {
  const cn::Target t = cn::on(b);
  if (b == cn::Backend::cuda) {
    const LocalGrid::OwnedIndices owned = g.owned_indices();
    if (g.dim == 3)
      return CUNUMPY_REDUCE_ON(t, name, g.owned(), cn::ReduceOp::sum, k,
                               return term(owned.at<3>(k)););
    if (g.dim == 2)
      return CUNUMPY_REDUCE_ON(t, name, g.owned(), cn::ReduceOp::sum, k,
                               return term(owned.at<2>(k)););
    return CUNUMPY_REDUCE_ON(t, name, g.owned(), cn::ReduceOp::sum, k,
                             return term(owned.at<1>(k)););
  }
  const Pieces s = pieces_of(g);
  cn::Array<double> part = cn::empty<double>({s.count}, b);
  double* sums = part.data();
  CUNUMPY_FOR_ON(t, name, s.count, p, sums[p] = piece_sum(s, term, p););
  return CUNUMPY_REDUCE_ON(t, name, s.count, cn::ReduceOp::sum, p, return sums[p];);
}
// E's squares summed in axis order (a missing axis adds nothing), times the cell's volume.
template <int Dim>
struct EnergyTerm {
  const double *ex, *ey, *ez;
  double cell;
  CUNUMPY_HD_INLINE double operator()(long long c) const {
    if constexpr (Dim == 3) return 0.5 * (ex[c] * ex[c] + ey[c] * ey[c] + ez[c] * ez[c]) * cell;
    if constexpr (Dim == 2) return 0.5 * (ex[c] * ex[c] + ey[c] * ey[c]) * cell;
    return 0.5 * (ex[c] * ex[c]) * cell;
  }
};
struct ChargeTerm {
  const double* rho;
  double cell;
  CUNUMPY_HD_INLINE double operator()(long long c) const { return rho[c] * cell; }
};
}  // namespace

// The sums over the owned nodes (owned_sum), one loop per dimension.
double field_energy(cn::Backend b, const LocalGrid& g, const double* ex, const double* ey,
                    const double* ez) {
  const double cell = g.cell_volume();
  if (g.dim == 3) return owned_sum(b, g, "field energy", EnergyTerm<3>{ex, ey, ez, cell});
  if (g.dim == 2) return owned_sum(b, g, "field energy", EnergyTerm<2>{ex, ey, ez, cell});
  return owned_sum(b, g, "field energy", EnergyTerm<1>{ex, ey, ez, cell});
}

double total_charge(cn::Backend b, const LocalGrid& g, const double* rho) {
  return owned_sum(b, g, "total charge", ChargeTerm{rho, g.cell_volume()});
}

}  // namespace layout_loops

namespace {
cn::CartesianDecomposition decomposition_of(const Config& c, const cn::Comm& comm) {
  const cn::DecompositionOptions periodic{.periodic = {true, true, true}};
  const long long nx = c.cells_x, ny = c.cells_y, nz = c.cells_z;
  if (c.dim == 3) return cn::CartesianDecomposition(comm, {nx, ny, nz}, periodic);
  if (c.dim == 2) return cn::CartesianDecomposition(comm, {nx, ny}, periodic);
  return cn::CartesianDecomposition(comm, {nx}, periodic);
}
}  // namespace

FieldLayout::FieldLayout(const Config& config, const cn::Comm& world, const cn::Comm& halo_comm,
                         cn::Backend backend, bool whole_box)
    : world_(world),
      backend_(backend),
      decomposition_(decomposition_of(config, halo_comm)),
      sums_over_ranks_(!whole_box) {
  const cn::CartesianDecomposition& d = decomposition_;
  const BoxLengths box = box_of(config);
  LocalGrid& g = grid_;
  g.dim = config.dim;
  g.order = config.order;
  const int dim = config.dim;
  g.nx = config.cells_x;
  g.ny = dim >= 2 ? config.cells_y : 1;
  g.nz = dim == 3 ? config.cells_z : 1;
  g.lnx = d.local_cells(0);
  g.lny = dim >= 2 ? d.local_cells(1) : 1;
  g.lnz = dim == 3 ? d.local_cells(2) : 1;
  g.x0 = d.owned(0).begin;
  g.y0 = dim >= 2 ? d.owned(1).begin : 0;
  g.z0 = dim == 3 ? d.owned(2).begin : 0;
  g.guard = guard_width(config.order);
  g.col = dim == 3 ? g.lnz + 2 * g.guard : 1;
  g.row = dim >= 2 ? (g.lny + 2 * g.guard) * g.col : 1;
  g.lx = box.lx;
  g.ly = box.ly;
  g.lz = box.lz;
  g.dx = box.lx / static_cast<double>(g.nx);
  g.dy = dim >= 2 ? box.ly / static_cast<double>(g.ny) : 1.0;
  g.dz = dim == 3 ? box.lz / static_cast<double>(g.nz) : 1.0;
  g.whole_box = whole_box;
  const int guard = static_cast<int>(g.guard);
  halo_ = std::make_unique<cn::HaloExchange>(halo_comm, d, cn::HaloOptions{.guard = guard});
  fill_ = std::make_unique<cn::HaloExchange>(halo_comm, d, cn::HaloOptions{.guard = guard});
  mode_ = mode_of(config);
  solver_ = make_solver(config, SolverSetup{g, d, halo_comm, backend, mode_});
  const cn::Shape local = halo_->field_shape();
  for (cn::Array<double>* a : {&ne, &rho, &ex}) *a = cn::zeros<double>(local, backend);
  if (dim >= 2) ey = cn::zeros<double>(local, backend);
  if (dim == 3) ez = cn::zeros<double>(local, backend);
}

std::vector<cn::Array<double>> FieldLayout::fields() const {
  std::vector<cn::Array<double>> e{ex, ey, ez};
  e.resize(static_cast<std::size_t>(grid_.dim));
  return e;
}

FieldLayout::~FieldLayout() = default;

void FieldLayout::solve(double ne_scale) {
  layout_loops::charge(backend_, ne.data(), rho.data(), grid_.nodes(), ne_scale);
  solver_->solve(rho, ex, ey, ez);
}

void FieldLayout::begin_fill_fields() {
  if (grid_.has_y()) {
    const std::vector<cn::Array<double>> e = fields();
    fill_->begin_fill(std::span<const cn::Array<double>>(e));  // one round for every component
  } else
    fill_->begin_fill(ex);
}

void FieldLayout::end_fill_fields() {
  fill_->end();
}

double FieldLayout::field_energy() {
  const double mine =
      layout_loops::field_energy(backend_, grid_, ex.data(), grid_.has_y() ? ey.data() : nullptr,
                                 grid_.has_z() ? ez.data() : nullptr);
  return sums_over_ranks_ ? world_.allreduce(mine, cn::Op::sum) : mine;
}

double FieldLayout::total_charge() {
  const double mine = layout_loops::total_charge(backend_, grid_, rho.data());
  return sums_over_ranks_ ? world_.allreduce(mine, cn::Op::sum) : mine;
}

// The field energy of the perturbed mode: |E_k|^2 / cells^2 * volume, from rho_k (E_k = -i k
// rho_k / |k|^2), from the solver's last rho.
double FieldLayout::mode_energy() {
  const LocalGrid& g = grid_;
  const double lengths[] = {g.lx, g.ly, g.lz};
  double k2 = 0.0;
  for (int a = 0; a < 3; ++a) {
    const double ka = 2.0 * M_PI * mode_[a] / lengths[a];
    k2 += ka * ka;
  }
  const double cells = static_cast<double>(g.nx * g.ny * g.nz);
  const double scale = g.lx * g.ly * g.lz / (cells * cells * k2);
  const double mine = solver_->mode_power(scale);
  return sums_over_ranks_ ? world_.allreduce(mine, cn::Op::sum) : mine;
}

cn::Array<double> FieldLayout::owned_block(const cn::Array<double>& guarded) const {
  const LocalGrid& g = grid_;
  auto block = cn::empty<double>({g.owned()}, cn::Backend::host);
  const LocalGrid::OwnedIndices owned = g.owned_indices();
  for (long long k = 0; k < g.owned(); ++k) block.host_span()[k] = guarded.host_span()[owned(k)];
  return block;
}

std::unique_ptr<FieldLayout> make_layout(const Config& config, const cn::Comm& world,
                                         cn::Backend backend) {
  // The table of layouts: one row each (a new layout is a new file and a row here).
  struct Row {
    bool decompose;
    std::unique_ptr<FieldLayout> (*make)(const Config&, const cn::Comm&, cn::Backend);
  };
  constexpr Row rows[] = {{false, &make_replicated_layout}, {true, &make_decomposed_layout}};
  for (const Row& r : rows)
    if (r.decompose == config.decompose) return r.make(config, world, backend);
  throw cn::ValueError("pic: no field layout for this configuration");
}

}  // namespace pic
