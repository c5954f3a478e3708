// The field layouts' shared part (layout.hpp): the guarded arrays, the solve, the fill and the
// diagnostics' sums.  Compiled as CUDA when the CUDA backend is built: the loops then run on
// the device for device arrays.
#include "layout.hpp"

#include <cmath>

#include "pic.hpp"

namespace pic {

namespace cn = cunumpy;

long long guard_width(int order) {
  return order + 1;
}

namespace layout_loops {

// E_k = -i k rho_k / |k|^2 (times `norm`, the inverse transform's 1 / cells) for the modes
// in `rk` (interleaved complex): mode m is global (i0 + m / cols, m % cols); axis 0's index
// maps to its signed frequency, axis 1 holds the non-negative ones (2D).
void poisson(cn::Backend b, const double* rk, double* exk, double* eyk, long long modes,
             long long i0, long long cols, long long nx, double kx0, double ky0, double norm,
             bool two) {
  CUNUMPY_FOR_ON(
      cn::on(b), "poisson", modes, m, const long long i = i0 + m / cols, j = m % cols;
      const double kx = kx0 * static_cast<double>(i <= nx / 2 ? i : i - nx);
      const double ky = two ? ky0 * static_cast<double>(j) : 0.0;
      const double k2 = kx * kx + ky * ky; const double f = k2 > 0.0 ? norm / k2 : 0.0;
      const double re = rk[2 * m], im = rk[2 * m + 1]; if (exk != nullptr) {
        exk[2 * m] = kx * im * f;
        exk[2 * m + 1] = -kx * re * f;
      } if (eyk != nullptr) {
        eyk[2 * m] = ky * im * f;
        eyk[2 * m + 1] = -ky * re * f;
      });
}

void charge(cn::Backend b, const double* ne, double* rho, long long nodes, double ne_scale) {
  CUNUMPY_FOR_ON(cn::on(b), "charge", nodes, c, rho[c] = 1.0 - ne[c] * ne_scale;);
}

double field_energy(cn::Backend b, const LocalGrid& g, const double* ex, const double* ey) {
  const double cell = g.dx * g.dy;
  return CUNUMPY_REDUCE_ON(cn::on(b), "field energy", g.owned(), cn::ReduceOp::sum, k,
                           const long long c = g.owned_index(k);
                           const double e2 = ex[c] * ex[c] + (ey != nullptr ? ey[c] * ey[c] : 0.0);
                           return 0.5 * e2 * cell;);
}

double total_charge(cn::Backend b, const LocalGrid& g, const double* rho) {
  const double cell = g.dx * g.dy;
  return CUNUMPY_REDUCE_ON(cn::on(b), "total charge", g.owned(), cn::ReduceOp::sum, k,
                           return rho[g.owned_index(k)] * cell;);
}

// |rho_k[m]|^2 * scale, read back like a reduction's result.
double mode_power(cn::Backend b, const double* rk, long long m, double scale) {
  return CUNUMPY_REDUCE_ON(cn::on(b), "mode energy", 1, cn::ReduceOp::sum, unused, (void)unused;
                           return (rk[2 * m] * rk[2 * m] + rk[2 * m + 1] * rk[2 * m + 1]) * scale;);
}

}  // namespace layout_loops

namespace {
double* interleaved(const cn::Array<std::complex<double>>& a) {
  return reinterpret_cast<double*>(a.data());
}

cn::CartesianDecomposition decomposition_of(const Config& c, const cn::Comm& comm) {
  const cn::DecompositionOptions periodic{.periodic = {true, true, true}};
  const long long nx = c.cells_x, ny = c.dim == 2 ? c.cells_y : 1;
  return c.dim == 2 ? cn::CartesianDecomposition(comm, {nx, ny}, periodic)
                    : cn::CartesianDecomposition(comm, {nx}, periodic);
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
  g.nx = config.cells_x;
  g.ny = config.dim == 2 ? config.cells_y : 1;
  g.lnx = d.local_cells(0);
  g.lny = config.dim == 2 ? d.local_cells(1) : 1;
  g.x0 = d.owned(0).begin;
  g.y0 = config.dim == 2 ? d.owned(1).begin : 0;
  g.guard = guard_width(config.order);
  g.row = config.dim == 2 ? g.lny + 2 * g.guard : 1;
  g.lx = box.lx;
  g.ly = box.ly;
  g.dx = box.lx / static_cast<double>(g.nx);
  g.dy = config.dim == 2 ? box.ly / static_cast<double>(g.ny) : 1.0;
  g.whole_box = whole_box;
  const int guard = static_cast<int>(g.guard);
  halo_ = std::make_unique<cn::HaloExchange>(halo_comm, d, cn::HaloOptions{.guard = guard});
  fill_ = std::make_unique<cn::HaloExchange>(halo_comm, d, cn::HaloOptions{.guard = guard});
  fft_ = std::make_unique<cn::DistributedFft>(halo_comm, d,
                                              cn::DistributedFftOptions{.guard = guard}, backend);
  const cn::Shape local = halo_->field_shape();
  for (cn::Array<double>* a : {&ne, &rho, &ex, &ey}) *a = cn::zeros<double>(local, backend);
  rho_k_ = cn::zeros<std::complex<double>>(fft_->spectrum().shape(), backend);
}

FieldLayout::~FieldLayout() = default;

void FieldLayout::solve(double ne_scale) {
  const LocalGrid& g = grid_;
  const bool two = g.two();
  const double kx0 = 2.0 * M_PI / g.lx, ky0 = 2.0 * M_PI / g.ly,
               norm = 1.0 / static_cast<double>(g.nx * g.ny);
  layout_loops::charge(backend_, ne.data(), rho.data(), g.nodes(), ne_scale);
  // The transform of rho; this rank's modes are kept for E_y and the mode energy while the
  // plan's spectrum takes E_x's, then E_y's modes.
  cn::DistributedFft& fft = *fft_;
  fft.forward(rho);
  const cn::Array<std::complex<double>>& k = fft.spectrum();
  cn::copy(rho_k_, k);
  const long long modes = k.size();
  const long long cols = two ? k.shape(1) : 1;
  layout_loops::poisson(backend_, interleaved(rho_k_), interleaved(k), nullptr, modes,
                        fft.spectrum_begin(), cols, g.nx, kx0, ky0, norm, two);
  fft.inverse(ex);
  if (two) {
    layout_loops::poisson(backend_, interleaved(rho_k_), nullptr, interleaved(k), modes,
                          fft.spectrum_begin(), cols, g.nx, kx0, ky0, norm, two);
    fft.inverse(ey);
  }
}

void FieldLayout::begin_fill_fields() {
  if (grid_.two())
    fill_->begin_fill({ex, ey});  // one round of messages for both components
  else
    fill_->begin_fill(ex);
}

void FieldLayout::end_fill_fields() {
  fill_->end();
}

double FieldLayout::field_energy() {
  const double mine =
      layout_loops::field_energy(backend_, grid_, ex.data(), grid_.two() ? ey.data() : nullptr);
  return sums_over_ranks_ ? world_.allreduce(mine, cn::Op::sum) : mine;
}

double FieldLayout::total_charge() {
  const double mine = layout_loops::total_charge(backend_, grid_, rho.data());
  return sums_over_ranks_ ? world_.allreduce(mine, cn::Op::sum) : mine;
}

// The field energy of mode (k, 0): |E_k|^2 / cells^2 * volume, from rho_k (E_k = -i k rho_k /
// k^2), on the rank whose modes hold row 1 of axis 0.
double FieldLayout::mode_energy() {
  const LocalGrid& g = grid_;
  const double k = 2.0 * M_PI / g.lx;
  const double cells = static_cast<double>(g.nx * g.ny);
  const double scale = g.lx * g.ly / (cells * cells * k * k);
  const long long begin = fft_->spectrum_begin(), rows = rho_k_.size() == 0 ? 0 : rho_k_.shape(0);
  double mine = 0.0;
  if (begin <= 1 && 1 < begin + rows) {
    const long long m = (1 - begin) * (g.two() ? rho_k_.shape(1) : 1);
    mine = layout_loops::mode_power(backend_, interleaved(rho_k_), m, scale);
  }
  return sums_over_ranks_ ? world_.allreduce(mine, cn::Op::sum) : mine;
}

cn::Array<double> FieldLayout::owned_block(const cn::Array<double>& guarded) const {
  const LocalGrid& g = grid_;
  auto block = cn::empty<double>({g.owned()}, cn::Backend::host);
  for (long long k = 0; k < g.owned(); ++k)
    block.host_span()[k] = guarded.host_span()[g.owned_index(k)];
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
