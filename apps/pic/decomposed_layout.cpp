// The decomposed layout (layout.hpp): each rank owns a block of cells and the particles in it;
// HaloExchange sums the deposit's guards into their owners and fills the field's,
// DistributedFft solves, ParticleMigration moves the particles that left the block.
#include <algorithm>
#include <array>

#include <cunumpy/cunumpy.hpp>

#include "layout.hpp"
#include "particles.hpp"
#include "pic.hpp"

namespace pic {

namespace cn = cunumpy;

namespace {

class DecomposedLayout final : public FieldLayout {
 public:
  DecomposedLayout(const Config& config, const cn::Comm& world, cn::Backend backend)
      : FieldLayout(config, world, world, backend, /*whole_box=*/false),
        migration_(world, decomposition_, std::array<double, 3>{0.0, 0.0, 0.0},
                   std::array<double, 3>{grid_.lx, grid_.ly, grid_.lz}) {}

  std::string name() const override { return "decomposed"; }

  void begin_reduce_density() override { halo_->begin_sum(ne); }
  void end_reduce_density() override { halo_->end(); }

  void migrate(Particles<double>& p) override { migrate_as(p); }
  void migrate(Particles<float>& p) override { migrate_as(p); }

  template <typename Real>
  void migrate_as(Particles<Real>& p) {
    if (p.leavers_known)
      cn::migrate(migration_, p, p.leavers);
    else
      cn::migrate(migration_, p);
    p.leavers_known = false;
    p.follow();
  }

  bool stay_region(double* lower, double* upper) const override {
    const cn::StayRegion r = migration_.stay_region();
    for (int a = 0; a < grid_.dim; ++a) {
      lower[a] = r.lower[a];
      upper[a] = r.upper[a];
    }
    return true;
  }

  // Particles are born on their owners, so the count moves only by the leavers' imbalance;
  // the migration grows the arrays when a rank needs more.
  long long spare_rows(long long particles) const override { return particles / 16 + 1024; }
  double bytes_sent_per_step(int steps) const override {
    const double sent = static_cast<double>(halo_->stats().bytes_sent + fill_->stats().bytes_sent +
                                            migration_.stats().bytes_sent + solver_->bytes_sent() -
                                            solver_bytes_at_reset_);
    return sent / std::max(1, steps);
  }
  void reset_stats() override {
    halo_->reset_stats();
    fill_->reset_stats();
    migration_.reset_stats();
    solver_bytes_at_reset_ = solver_->bytes_sent();  // the solver's counts do not reset
  }

  // Each rank writes its block.
  MeshBlock mesh_block(const std::vector<cn::Array<double>>& fields) const override {
    const LocalGrid& g = grid_;
    MeshBlock m;
    m.global = g.global_nodes();
    m.spacing = g.spacing();
    m.offset = g.block_origin();
    m.count = g.block_nodes();
    std::vector<cn::Array<double>> out;
    for (const auto& h : fields) out.push_back(owned_block(h));
    m.rho = out[0];
    m.e.assign(out.begin() + 1, out.end());
    return m;
  }

  // The rank's block of the box.
  void particle_region(std::vector<double>& offset, std::vector<double>& extent) const override {
    const LocalGrid& g = grid_;
    const std::vector<long long> origin = g.block_origin(), count = g.block_nodes();
    const std::vector<double> spacing = g.spacing();
    offset.clear();
    extent.clear();
    for (std::size_t a = 0; a < spacing.size(); ++a) {
      offset.push_back(static_cast<double>(origin[a]) * spacing[a]);
      extent.push_back(static_cast<double>(count[a]) * spacing[a]);
    }
  }

 private:
  cn::ParticleMigration migration_;
  long long solver_bytes_at_reset_ = 0;
};

}  // namespace

std::unique_ptr<FieldLayout> make_decomposed_layout(const Config& config, const cn::Comm& world,
                                                    cn::Backend backend) {
  return std::make_unique<DecomposedLayout>(config, world, backend);
}

}  // namespace pic
