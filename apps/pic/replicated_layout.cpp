// The replicated layout (layout.hpp): every rank holds the whole grid, its guards the periodic
// images (a HaloExchange over this rank alone sums and fills them), the density of every
// rank's particles summed by an allreduce of the grid; no particle migrates.
#include <cunumpy/cunumpy.hpp>

#include "layout.hpp"
#include "particles.hpp"
#include "pic.hpp"

namespace pic {

namespace cn = cunumpy;

namespace {

class ReplicatedLayout final : public FieldLayout {
 public:
  ReplicatedLayout(const Config& config, const cn::Comm& world, cn::Backend backend)
      : FieldLayout(config, world, cn::Comm::serial(), backend, /*whole_box=*/true) {}

  std::string name() const override { return "replicated"; }

  void begin_reduce_density() override {
    cn::allreduce(world_, ne, cn::Op::sum);  // every rank's particles, guards included
    halo_->sum(ne);                          // the guards into their periodic owners
  }
  void end_reduce_density() override {}

  void migrate(Particles<double>&) override {}
  void migrate(Particles<float>&) override {}

  long long spare_rows(long long) const override { return 0; }
  double bytes_sent_per_step(int) const override {
    const double p = world_.size();
    return 2.0 * (p - 1.0) / p * static_cast<double>(grid_.nodes()) * sizeof(double);
  }
  void reset_stats() override {  // the guards' exchanges (on this rank alone)
    halo_->reset_stats();
    fill_->reset_stats();
  }

  // Rank 0 writes the whole grid.
  MeshBlock mesh_block(const std::vector<cn::Array<double>>& fields) const override {
    const LocalGrid& g = grid_;
    MeshBlock m;
    m.global = g.global_nodes();
    m.spacing = g.spacing();
    const bool mine = world_.rank() == 0;
    m.offset = std::vector<long long>(m.global.size(), 0);
    m.count = mine ? m.global : std::vector<long long>(m.global.size(), 0);
    std::vector<cn::Array<double>> out;
    for (const auto& h : fields)
      out.push_back(mine ? owned_block(h) : cn::empty<double>({0}, cn::Backend::host));
    m.rho = out[0];
    m.e.assign(out.begin() + 1, out.end());
    return m;
  }

  // Any rank's particles lie anywhere in the box.
  void particle_region(std::vector<double>& offset, std::vector<double>& extent) const override {
    offset.assign(static_cast<std::size_t>(grid_.dim), 0.0);
    extent = grid_.lengths();
  }
};

}  // namespace

std::unique_ptr<FieldLayout> make_replicated_layout(const Config& config, const cn::Comm& world,
                                                    cn::Backend backend) {
  return std::make_unique<ReplicatedLayout>(config, world, backend);
}

}  // namespace pic
