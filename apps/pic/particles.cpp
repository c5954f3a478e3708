// The particles (particles.hpp): their arrays and their initial positions and velocities.
// Compiled as CUDA when the CUDA backend is built: the loops then run on the device.
#include "particles.hpp"

#include <algorithm>
#include <vector>

#include "grid.hpp"
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
// The particle arrays (positions, velocities, ids) of `rows` rows.
void allocate(Particles& p, long long rows, cn::Backend backend) {
  p.x = cn::empty<double>({rows}, backend);
  p.vx = cn::empty<double>({rows}, backend);
  p.id = cn::empty<std::int64_t>({rows}, backend);
  if (p.dim == 2) {
    p.y = cn::empty<double>({rows}, backend);
    p.vy = cn::empty<double>({rows}, backend);
  }
}

// Rows [0, p.n): the particles of ids first + i, or (given_ids) of the ids already in p.id.
void initialise(Particles& p, const Config& c, long long first, bool given_ids) {
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
  if (!given_ids) CUNUMPY_FOR_ON(t, "particle ids", p.n, i, ids[i] = first + i;);
  // Every particle is a function of its global id only: the same particles for any number of
  // ranks.  Two beams alternate by id; each beam takes the velocity samples of id / 2.
  CUNUMPY_FOR_ON(
      t, "initialise", p.n, i, const long long id = ids[i];
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

namespace {
// The ids of the particles whose initial position lies in this rank's block, by the
// migration's own rule (inside [0, L) by position, then the cell floor(x n / L) clamped, owned
// when in [x0, x0 + lnx)): every id's position is computed, a chunk at a time on the run's
// backend, and the owned ones are kept.
cn::Array<std::int64_t> owned_ids(const Config& config, const LocalGrid& g, cn::Backend backend,
                                  long long global) {
  const long long chunk = std::max<long long>(1, std::min<long long>(global, 1LL << 20));
  Particles t;
  t.dim = config.dim;
  t.global = global;
  allocate(t, chunk, backend);
  auto owned = cn::empty<std::uint8_t>({chunk}, backend);
  const cn::Target on = cn::on(t.x);
  const double sx = static_cast<double>(g.nx) / g.lx, sy = static_cast<double>(g.ny) / g.ly;
  const long long nx = g.nx, ny = g.ny, x0 = g.x0, x1 = g.x0 + g.lnx, y0 = g.y0, y1 = g.y0 + g.lny;
  const bool two = g.two();
  const double lx = g.lx, ly = g.ly;
  std::vector<cn::Array<std::int64_t>> parts;
  long long total = 0;
  for (long long first = 0; first < global; first += chunk) {
    t.n = std::min(chunk, global - first);
    initialise(t, config, first, false);
    const double* x = t.x.data();
    const double* y = two ? t.y.data() : nullptr;
    std::uint8_t* own = owned.data();
    CUNUMPY_FOR_ON(
        on, "owned at birth", t.n, i, long long cx = static_cast<long long>(x[i] * sx);
        cx = cx < nx ? cx : nx - 1; bool mine = x[i] >= 0.0 && x[i] < lx && cx >= x0 && cx < x1;
        if (two) {
          long long cy = static_cast<long long>(y[i] * sy);
          cy = cy < ny ? cy : ny - 1;
          mine = mine && y[i] >= 0.0 && y[i] < ly && cy >= y0 && cy < y1;
        } own[i] = mine ? 1 : 0;);
    cn::Array<std::int64_t> rows = cn::flatnonzero(owned.leading(t.n));
    std::int64_t* r = rows.data();
    CUNUMPY_FOR_ON(cn::on(rows), "owned ids", rows.size(), j, r[j] += first;);
    total += rows.size();
    parts.push_back(std::move(rows));
  }
  cn::Array<std::int64_t> ids = cn::empty<std::int64_t>({total}, backend);
  long long at = 0;
  for (const auto& part : parts) {
    std::int64_t* out = ids.data() + at;
    const std::int64_t* in = part.data();
    CUNUMPY_FOR_ON(cn::on(ids), "owned ids gathered", part.size(), j, out[j] = in[j];);
    at += part.size();
  }
  return ids;
}
}  // namespace

Particles make_particles(const Config& config, const cn::Comm& comm, cn::Backend backend,
                         long long spare, const LocalGrid* block) {
  Particles p;
  p.dim = config.dim;
  p.global = config.particles;
  const int r = comm.rank(), ranks = comm.size();
  // A rank of a decomposed grid creates the particles born in its block (no initial
  // migration); otherwise the ids are split evenly.
  const bool born_on_owner = block != nullptr && !block->whole_box && ranks > 1;
  cn::Array<std::int64_t> ids;
  long long first = 0;
  if (born_on_owner) {
    ids = owned_ids(config, *block, backend, p.global);
    p.n = ids.size();
  } else {
    first = p.global * r / ranks;
    p.n = p.global * (r + 1) / ranks - first;
  }
  const long long cells = static_cast<long long>(config.cells_x) *
                          (config.dim == 2 ? static_cast<long long>(config.cells_y) : 1LL);
  p.charge_density = static_cast<double>(cells) / static_cast<double>(p.global);
  p.mass = particle_weight(config);
  const long long rows = p.n + spare;
  allocate(p, rows, backend);
  p.follow();
  if (born_on_owner) {
    std::int64_t* out = p.id.data();
    const std::int64_t* in = ids.data();
    CUNUMPY_FOR_ON(cn::on(p.id), "particle ids", p.n, i, out[i] = in[i];);
    ids = cn::Array<std::int64_t>();
  }
  initialise(p, config, first, born_on_owner);
  return p;
}

}  // namespace pic
