// The deterministic step (step.hpp): the builtin gather and push, and a deposit whose sums are
// exact.  Each particle's stencil weights are quantised to multiples of 2^-24 and summed per
// base node with segment_sum (integers below 2^53: exact in any order), then spread to the
// stencil's nodes, still as integers: the layout's sums over the guards and the ranks are exact
// too, and the scale is applied in the solve.  Exact sums make the density bit-identical over
// runs, backends, thread and rank counts, and equal to the fused host step's integer grids.
// Compiled as CUDA when the CUDA backend is built.
#include <cstdint>

#include "builtin_step.hpp"
#include "pic.hpp"
#include "pic_kernels.hpp"

namespace pic {

namespace cn = cunumpy;

namespace deterministic {

template <typename Real>
void deposit(const Particles<Real>& p, FieldLayout& layout) {
  const LocalGrid& g = layout.grid();
  const kernels::Grid grid = p.grid_for(g.kernel_grid());
  const long long n = p.n;
  const int order = g.order;
  const int dim = g.dim, width = order + 1;
  const int points = dim == 3 ? width * width * width : dim == 2 ? width * width : width;
  const kernels::Positions<Real> pos = p.positions();
  const cn::Backend b = p.x.backend();
  auto keys = cn::empty<std::int64_t>({n}, b);
  auto values = cn::empty<std::int64_t>({n, points}, b);
  std::int64_t* key = keys.data();
  std::int64_t* value = values.data();
  CUNUMPY_FOR_ON(cn::on(b), "deposit weights", n, i,
                 kernels::for_each_node(grid, pos, i, [&](long long c, double w, int point) {
                   if (point == 0) key[i] = c;  // the stencil's first node is the particle's key
                   value[i * points + point] = kernels::quanta(w);
                 }););
  const long long nodes = g.nodes();
  const cn::Array<double> sums = cn::segment_sum(keys, values, nodes);
  const double* sum = sums.data();
  double* ne = layout.ne.data();
  const long long row = g.row, col = g.col;
  // Node c gets, from the base node of each stencil point that lands on it, that point's sum
  // (node (ci, cj, cl) at ci row + cj col + cl in 3D, ci row + cj in 2D).
  CUNUMPY_FOR_ON(
      cn::on(b), "deposit spread", nodes, c, const long long ci = c / row, rest = c % row;
      const long long cj = dim == 3 ? rest / col : rest, cl = dim == 3 ? rest % col : 0;
      double acc = 0.0; for (int a = 0; a <= order; ++a) {
        if (ci - a < 0) continue;
        if (dim == 1) {
          acc += sum[(ci - a) * points + a];
          continue;
        }
        for (int bb = 0; bb <= order; ++bb) {
          if (cj - bb < 0) continue;
          if (dim == 2) {
            acc += sum[((ci - a) * row + (cj - bb)) * points + a * width + bb];
            continue;
          }
          for (int cc = 0; cc <= order; ++cc)
            if (cl - cc >= 0)
              acc += sum[((ci - a) * row + (cj - bb) * col + (cl - cc)) * points +
                         (a * width + bb) * width + cc];
        }
      } ne[c] = acc;);
}

}  // namespace deterministic

namespace {

template <typename Real>
class DeterministicStep final : public ParticleStep<Real> {
 public:
  explicit DeterministicStep(const Config& config) : dt_(config.dt) {}
  std::string name() const override { return "deterministic"; }
  void deposit(const Particles<Real>& p, FieldLayout& layout, long long) override {
    deterministic::deposit(p, layout);
  }
  double density_scale(const Particles<Real>& p) const override {
    return p.charge_density / kernels::kQuantum;
  }
  StepSums push(Particles<Real>& p, FieldLayout& layout, double factor, bool move) override {
    builtin::gather(p, layout);
    return builtin::push(p, layout, -factor * dt_, dt_, move);
  }

 private:
  double dt_;
};

}  // namespace

template <typename Real>
std::unique_ptr<ParticleStep<Real>> make_deterministic_step(const Config& config, cn::Backend) {
  return std::make_unique<DeterministicStep<Real>>(config);
}
template std::unique_ptr<ParticleStep<double>> make_deterministic_step<double>(const Config&,
                                                                               cn::Backend);
template std::unique_ptr<ParticleStep<float>> make_deterministic_step<float>(const Config&,
                                                                             cn::Backend);

}  // namespace pic
