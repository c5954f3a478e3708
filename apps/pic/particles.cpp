// The particles (particles.hpp): their arrays and their initial positions and velocities.
// Compiled as CUDA when the CUDA backend is built: the loops then run on the device.
#include "particles.hpp"

#include "pic.hpp"
#include "pic_kernels.hpp"

namespace pic {

namespace cn = cunumpy;

void Particles::follow() {
  const long long rows = capacity();
  const cn::Backend b = x.backend();
  std::vector<cn::Array<double>*> work_arrays{&ex, &work};
  if (dim == 2) work_arrays.push_back(&ey);
  for (cn::Array<double>* a : work_arrays)
    if (a->ndim() == 0 || a->shape(0) != rows) *a = cn::empty<double>({rows}, b);
}

namespace {
void initialise(Particles& p, const Config& c, long long first) {
  const long long n_global = p.global;
  const bool quiet = c.quiet, two = c.dim == 2, beams = c.beam_velocity > 0.0;
  const BoxLengths box = box_of(c);
  const double lx = box.lx, ly = box.ly, amp = c.amplitude, k = c.k, vth = c.vth,
               v0 = c.beam_velocity;
  const std::uint64_t seed = c.seed;
  double* x = p.x.data();
  double* vx = p.vx.data();
  double* y = two ? p.y.data() : nullptr;
  double* vy = two ? p.vy.data() : nullptr;
  std::int64_t* ids = p.id.data();
  const cn::Target t = cn::on(p.x);
  CUNUMPY_FOR_ON(t, "particle ids", p.n, i, ids[i] = first + i;);
  // Every particle is a function of its global id only: the same particles for any number of
  // ranks.  Two beams alternate by id; each beam takes the velocity samples of id / 2.
  CUNUMPY_FOR_ON(
      t, "initialise", p.n, i, const long long id = first + i;
      const unsigned long long vid =
          beams ? static_cast<unsigned long long>(id / 2) : static_cast<unsigned long long>(id);
      double ux, uy, gx, gy; if (quiet) {
        ux = (static_cast<double>(beams ? id / 2 : id) + 0.5) /
             static_cast<double>(beams ? (n_global + 1) / 2 : n_global);
        uy = kernels::van_der_corput(static_cast<unsigned long long>(id), 2);
        gx = vth * kernels::inverse_normal(kernels::van_der_corput(vid, two ? 3 : 2));
        gy = vth * kernels::inverse_normal(kernels::van_der_corput(vid, 5));
      } else {
        cunumpy_uniform2(seed, static_cast<unsigned long long>(id), 0, &ux, &uy);
        cunumpy_normal2(seed, vid, 1, &gx, &gy);
        gx *= vth;
        gy *= vth;
      } x[i] = kernels::periodic(kernels::perturbed_position(ux, lx, amp, k), lx);
      vx[i] = gx + (beams ? (id % 2 == 0 ? v0 : -v0) : 0.0); if (two) {
        y[i] = kernels::periodic(uy * ly, ly);
        vy[i] = gy;
      });
}
}  // namespace

Particles make_particles(const Config& config, const cn::Comm& comm, cn::Backend backend,
                         long long spare) {
  Particles p;
  p.dim = config.dim;
  p.global = config.particles;
  const int r = comm.rank(), ranks = comm.size();
  const long long first = p.global * r / ranks;
  p.n = p.global * (r + 1) / ranks - first;
  const long long cells = static_cast<long long>(config.cells_x) *
                          (config.dim == 2 ? static_cast<long long>(config.cells_y) : 1LL);
  p.charge_density = static_cast<double>(cells) / static_cast<double>(p.global);
  p.mass = particle_weight(config);
  const long long rows = p.n + spare;
  p.x = cn::empty<double>({rows}, backend);
  p.vx = cn::empty<double>({rows}, backend);
  p.id = cn::empty<std::int64_t>({rows}, backend);
  if (p.dim == 2) {
    p.y = cn::empty<double>({rows}, backend);
    p.vy = cn::empty<double>({rows}, backend);
  }
  p.follow();
  initialise(p, config, first);
  return p;
}

}  // namespace pic
