// The tiled step (step.hpp): the device backends' one pass over particles kept sorted by tile
// (kernels/tiled_step.cu, compiled by NVRTC on cuda and run by the kernel emulator on emulated).
// Per step: tiled_push (gather, push, move and the next deposit, a thread block a tile, the
// density summed in shared memory and stored per tile), tiled_sum (the density's nodes from the
// tiles' slots: no atomic), and the reorder: each tile counts its particles by the neighbouring
// tile they went to, a scan over the tiles' new counts gives their new rows, and one warp a tile
// ranks its particles (stable) into the order every column of the set is permuted by.
#include <algorithm>
#include <array>
#include <filesystem>
#include <string>
#include <type_traits>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/reductions.hpp>

#include "layout.hpp"
#include "particles.hpp"
#include "pic.hpp"
#include "pic_catalog.hpp"
#include "step.hpp"

namespace pic {

namespace cn = cunumpy;

namespace {

// Cells a tile along each axis: at most 256 in 1D, 16 x 16 in 2D, 8 x 8 x 8 in 3D (the region's
// E and density in shared memory: 2D 3 x 21 x 21 doubles for TSC, 3D 4 x 13^3 for TSC, 70 KiB),
// fewer on a small block so that it still has several tiles along each axis (at least 4 cells).
constexpr long long kTile[4] = {0, 256, 16, 8};
constexpr long long kTilesAtLeast[4] = {0, 64, 8, 4};
long long tile_cells(int dim, long long cells) {
  return std::min(kTile[dim], std::max<long long>(4, cells / kTilesAtLeast[dim]));
}

// The kernels' geometry arguments (tiled_step.cu's TILED_GEOMETRY_PARAMETERS) of grid g.
#define GEOMETRY(g)                                                                              \
  dim_, (g).order, h_, tile_[0], tile_[1], tile_[2], count_[0], count_[1], count_[2], (g).guard, \
      (g).row, (g).col, (g).x0, (g).y0, (g).z0, inv_[0], inv_[1], inv_[2]

template <typename Real>
class TiledStep final : public ParticleStep<Real> {
 public:
  TiledStep(const Config& config, const FieldLayout& layout)
      : dt_(config.dt), module_(tiled_step_module<Real>()) {
    const LocalGrid& g = layout.grid();
    cells_ = stored_in_cells(config);
    exact_ = config.deterministic;
    // With cells the positions are in cell units: the grid's too, and the moves (move_along).
    const double d[3] = {g.dx, g.dy, g.dz},
                 cells_per_axis[3] = {static_cast<double>(g.nx), static_cast<double>(g.ny),
                                      static_cast<double>(g.nz)};
    const double box[3] = {g.lx, g.ly, g.lz};
    for (int a = 0; a < 3; ++a) {
      inv_[a] = cells_ ? 1.0 : 1.0 / d[a];
      step_[a] = cells_ ? config.dt / d[a] : config.dt;
      length_[a] = cells_ ? cells_per_axis[a] : box[a];
    }
    dim_ = g.dim;
    h_ = g.order + 1;  // (the guards' width: a particle may move a cell past its tile)
    const long long cells[3] = {g.lnx, g.lny, g.lnz};
    volume_ = 1;
    tiles_ = 1;
    for (int a = 0; a < 3; ++a) {
      tile_[a] = a < dim_ ? std::min(tile_cells(dim_, cells[a]), cells[a]) : 1;
      count_[a] = a < dim_ ? (cells[a] + tile_[a] - 1) / tile_[a] : 1;
      volume_ *= a < dim_ ? tile_[a] + 2 * h_ + 1 : 1;
      tiles_ *= count_[a];
    }
    directions_ = dim_ == 1 ? 3 : dim_ == 2 ? 9 : 27;
    const cn::Backend b = layout.backend();
    slots_ = cn::zeros<double>({tiles_ * volume_}, b);
    far_ = cn::zeros<double>({g.nodes()}, b);
    kinetic_ = cn::zeros<double>({tiles_}, b);
    momentum_ = cn::zeros<double>({tiles_}, b);
    undeposited_ = cn::zeros<double>({tiles_}, b);
    whole_box_ = g.whole_box;
    counts_ = cn::zeros<std::int32_t>({tiles_ * (directions_ + 1)}, b);
    far_counts_ = cn::zeros<std::int32_t>({tiles_}, b);
    misplaced_ = cn::zeros<std::int32_t>({1}, b);
    no_cells_ = cn::zeros<std::int32_t>({1}, b);
    far_cursor_ = cn::zeros<std::int32_t>({tiles_}, b);
    bases_ = cn::zeros<std::int64_t>({tiles_ * (directions_ + 1)}, b);
    new_counts_ = cn::zeros<std::int64_t>({tiles_ + 1}, b);
    module_.compile_for(b);
  }

  std::string name() const override { return "tiled"; }
  bool deposited_by_push() const override { return true; }
  bool sorts_particles() const override { return true; }
  // The push reads and writes positions (and cells) and velocities and writes the tile; the
  // count and the ranking read the tile again and write the order; the permutation reads it
  // and moves every column; per tile the region's E is read and its slot written and read, and
  // every node of the density written (far read and cleared).
  double bytes_per_particle_step(const Particles<Real>& p,
                                 const FieldLayout& layout) const override {
    if (p.n == 0) return 0.0;
    const double moved = 2.0 * dim_ * (2.0 * sizeof(Real) + (cells_ ? 4.0 : 0.0));
    const double order = 4.0 + 4.0 + 4.0 + 8.0 + 8.0;
    const double columns =
        2.0 * static_cast<double>(Particles<Real>::bytes_per_particle(dim_, cells_));
    const double grid = static_cast<double>(tiles_ * volume_) * 8.0 * (dim_ + 2) +
                        static_cast<double>(layout.grid().nodes()) * 24.0;
    return moved + order + columns + grid / static_cast<double>(p.n);
  }
  double density_scale(const Particles<Real>& p) const override {
    return exact_ ? p.charge_density / kernels::kQuantum : 1.0;
  }

  void deposit(const Particles<Real>& p, FieldLayout& layout, long long undeposited) override {
    if (!(pushed_ && undeposited == 0)) {  // a density of the particles where they are
      sort(const_cast<Particles<Real>&>(p), layout);
      launch_push(const_cast<Particles<Real>&>(p), layout, 0.0, 2);
    }
    pushed_ = false;
    module_.kernel("tiled_sum")(cn::threads(layout.grid().nodes()), slots_, far_, layout.ne,
                                GEOMETRY(layout.grid()), layout.grid().nodes());
  }

  StepSums push(Particles<Real>& p, FieldLayout& layout, double factor, bool move) override {
    p.use_work_arrays(false, false);
    sort(p, layout);
    launch_push(p, layout, -factor * dt_, move ? 1 : 0);
    const double kinetic = cn::sum(kinetic_), momentum = cn::sum(momentum_);  // over the tiles
    const double undeposited = move ? cn::sum(undeposited_) : 0.0;
    if (move) {
      // On a decomposed grid the migration then changes the rows (leavers out, arrivals in):
      // the next step sorts again instead.
      if (whole_box_)
        reorder(p, layout);
      else
        sorted_n_ = -1;
      pushed_ = true;
    }
    return StepSums{kinetic, momentum, undeposited};
  }

 private:
  // Axis a's cells with cells (axis 0's past the dimension), else an array never read.
  const cn::Array<std::int32_t>& cell(const Particles<Real>& p, int a) const {
    if (!cells_) return no_cells_;
    const cn::Array<std::int32_t>* c[3] = {&p.cx, &p.cy, &p.cz};
    return a < p.dim ? *c[a] : p.cx;
  }

  // A kernel template's name for the particles' precision.
  static std::string instance(const char* name) {
    return std::string(name) + (std::is_same_v<Real, float> ? "<float>" : "<double>");
  }

  void launch_push(Particles<Real>& p, FieldLayout& layout, double dv, int mode) {
    const LocalGrid& g = layout.grid();
    if (dest_.ndim() == 0 || dest_.shape(0) < p.capacity())
      dest_ = cn::zeros<std::int32_t>({std::max<long long>(p.capacity(), 1)}, layout.backend());
    const unsigned block = dim_ == 3 ? 256 : 128;
    cn::Launch launch;
    launch.grid = cn::Dim3{tiles_, 1, 1};
    launch.block = cn::Dim3{block, 1, 1};
    launch.shared_mem = static_cast<std::size_t>(((dim_ + 1) * volume_ + 3 * block) * 8);
    module_.kernel(instance("tiled_push"))(
        launch, p.x, or_x(p.y, p.x), or_x(p.z, p.x), p.vx, or_x(p.vy, p.vx), or_x(p.vz, p.vx),
        cell(p, 0), cell(p, 1), cell(p, 2), layout.ex, or_x(layout.ey, layout.ex),
        or_x(layout.ez, layout.ex), slots_, far_, dest_, misplaced_, kinetic_, momentum_,
        undeposited_, start_, GEOMETRY(g), g.nodes(), dv, step_[0], step_[1], step_[2], length_[0],
        length_[1], length_[2], p.mass, p.charge_density, cells_ ? 1 : 0, exact_ ? 1 : 0, mode);
  }

  // The particles sorted by tile and each tile's first row, unless they still are (the rows this
  // step ordered last, unchanged).
  void sort(Particles<Real>& p, FieldLayout& layout) {
    if (p.n == sorted_n_ && p.x.data() == sorted_x_) return;
    const LocalGrid& g = layout.grid();
    cn::Array<std::int64_t> keys = cn::empty<std::int64_t>({p.n}, layout.backend());
    module_.kernel(instance("tiled_tile_of"))(cn::threads(p.n), p.x, or_x(p.y, p.x), or_x(p.z, p.x),
                                              cell(p, 0), cell(p, 1), cell(p, 2), cells_ ? 1 : 0,
                                              keys, GEOMETRY(g), p.n);
    auto [sorted, order] = cn::sort_by_key(keys);
    keys = cn::Array<std::int64_t>();
    start_ = cn::empty<std::int64_t>({tiles_ + 1}, layout.backend());
    module_.kernel("tiled_starts")(cn::threads(tiles_ + 1), sorted, start_, tiles_, p.n);
    sorted = cn::Array<std::int64_t>();
    p.permute(order);
    sorted_n_ = p.n;
    sorted_x_ = p.x.data();
  }

  // Every column in the order of the particles' new tiles (stable), and the tiles' new starts.
  void reorder(Particles<Real>& p, FieldLayout& layout) {
    const LocalGrid& g = layout.grid();
    far_counts_.fill(0);
    cn::Launch per_tile;
    per_tile.grid = cn::Dim3{tiles_, 1, 1};
    per_tile.block = cn::Dim3{128, 1, 1};
    per_tile.shared_mem = static_cast<std::size_t>((directions_ + 1) * 4);
    module_.kernel("tiled_count")(per_tile, dest_, start_, counts_, far_counts_, GEOMETRY(g));
    module_.kernel("tiled_bases")(cn::threads(tiles_), counts_, far_counts_, new_counts_, bases_,
                                  far_cursor_, GEOMETRY(g));
    const cn::Array<std::int64_t> new_start = cn::exclusive_scan(new_counts_);
    cn::Array<std::int64_t> order = cn::empty<std::int64_t>({p.n}, layout.backend());
    cn::Launch warps;
    warps.grid = cn::Dim3{tiles_, 1, 1};
    warps.block = cn::Dim3{32, 1, 1};
    module_.kernel("tiled_order")(warps, dest_, start_, new_start, bases_, far_cursor_, order,
                                  GEOMETRY(g));
    p.permute(order);
    start_ = new_start;
    sorted_n_ = p.n;
    sorted_x_ = p.x.data();
  }

  double dt_;
  cn::CudaModule module_;
  int dim_ = 1, h_ = 1, directions_ = 3;
  long long tile_[3] = {1, 1, 1}, count_[3] = {1, 1, 1}, volume_ = 1, tiles_ = 1;
  cn::Array<double> slots_, far_, kinetic_, momentum_, undeposited_;
  bool cells_ = false;                   // mixed precision: positions as cells and offsets
  bool exact_ = false;                   // --deterministic: the density's sums in quanta, exact
  double inv_[3], step_[3], length_[3];  // the kernels' grid, moves and box, per axis
  cn::Array<std::int32_t> no_cells_;     // (the cell arguments without cells: not read)
  bool whole_box_ = true;                // replicated: no particle leaves the rank
  cn::Array<std::int32_t> dest_, counts_, far_counts_, far_cursor_, misplaced_;
  cn::Array<std::int64_t> start_, bases_, new_counts_;
  long long sorted_n_ = -1;
  const Real* sorted_x_ = nullptr;
  bool pushed_ = false;  // the last push deposited into the slots
};

#undef GEOMETRY

}  // namespace

template <typename Real>
cn::CudaModule tiled_step_module() {
  return cn::CudaModule::from_file(
      kernel_folder() / "tiled_step.cu",
      {cn::ModuleKernel("tiled_push", {cn::dtype_of<Real>()}), "tiled_sum", "tiled_count",
       "tiled_bases", "tiled_order", cn::ModuleKernel("tiled_tile_of", {cn::dtype_of<Real>()}),
       "tiled_starts"},
      {.block_size = 128,
       // The gather and push round as the other steps' (no fused multiply-add).
       .options = {"--fmad=false"},
       .include_dirs = kernel_include_dirs()});
}
template cn::CudaModule tiled_step_module<double>();
template cn::CudaModule tiled_step_module<float>();

template <typename Real>
std::unique_ptr<ParticleStep<Real>> make_tiled_step(const Config& config, cn::Backend backend,
                                                    const FieldLayout& layout) {
  if (backend != cn::Backend::cuda && backend != cn::Backend::emulated)
    throw cn::ValueError(std::string("--particle-step tiled runs on the device backends (cuda, "
                                     "or emulated for the kernel emulator), not on ") +
                         std::string(cn::to_string(backend)) +
                         "; choose --backend cuda or emulated, or --particle-step auto");
  return std::make_unique<TiledStep<Real>>(config, layout);
}
template std::unique_ptr<ParticleStep<double>> make_tiled_step<double>(const Config&, cn::Backend,
                                                                       const FieldLayout&);
template std::unique_ptr<ParticleStep<float>> make_tiled_step<float>(const Config&, cn::Backend,
                                                                     const FieldLayout&);

}  // namespace pic
