// The particles (particles.hpp): their arrays and their initial positions and velocities.
// Compiled as CUDA when the CUDA backend is built: the loops then run on the device.
#include "particles.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "grid.hpp"
#include "pic.hpp"
#include "pic_kernels.hpp"

namespace pic {

namespace cn = cunumpy;

template <typename Real>
void Particles<Real>::follow() {
  const long long rows = capacity();
  const cn::Backend b = x.backend();
  for (cn::Array<double>* a : {&ex, &ey, &ez, &work})
    if (a->ndim() != 0 && a->shape(0) != rows) *a = cn::empty<double>({rows}, b);
}

template <typename Real>
void Particles<Real>::use_work_arrays(bool fields, bool energies) {
  const long long rows = capacity();
  const cn::Backend b = x.backend();
  auto use = [&](cn::Array<double>& a, bool wanted) {
    if (!wanted)
      a = cn::Array<double>();
    else if (a.ndim() == 0 || a.shape(0) != rows)
      a = cn::empty<double>({rows}, b);
  };
  use(ex, fields);
  use(ey, fields && dim >= 2);
  use(ez, fields && dim == 3);
  use(work, energies);
}

namespace {
// The particle arrays (positions, velocities, ids) of `rows` rows.
template <typename Real>
void allocate(Particles<Real>& p, long long rows, cn::Backend backend) {
  p.x = cn::empty<Real>({rows}, backend);
  p.vx = cn::empty<Real>({rows}, backend);
  p.id = cn::empty<std::int64_t>({rows}, backend);
  if (p.dim >= 2) {
    p.y = cn::empty<Real>({rows}, backend);
    p.vy = cn::empty<Real>({rows}, backend);
  }
  if (p.dim == 3) {
    p.z = cn::empty<Real>({rows}, backend);
    p.vz = cn::empty<Real>({rows}, backend);
  }
  if (p.cells) {
    p.cx = cn::empty<std::int32_t>({rows}, backend);
    if (p.dim >= 2) p.cy = cn::empty<std::int32_t>({rows}, backend);
    if (p.dim == 3) p.cz = cn::empty<std::int32_t>({rows}, backend);
  }
}

// Rows [0, p.n): the particles of ids first + i, or (given_ids) of the ids already in p.id.
template <typename Real>
void initialise(Particles<Real>& p, const Config& c, long long first, bool given_ids) {
  const long long n_global = p.global;
  const bool quiet = c.quiet, two = c.dim == 2, three = c.dim == 3, beams = c.beam_velocity > 0.0;
  const BoxLengths box = box_of(c);
  const double lx = box.lx, ly = box.ly, lz = box.lz, amp = c.amplitude, k = c.k, vth = c.vth,
               v0 = c.beam_velocity;
  const std::uint64_t seed = c.seed;
  // The wave vector's direction (x: the positions' perturbation along x alone, as always).
  const std::array<int, 3> mode = mode_of(c);
  const bool along_x = c.direction == "x";
  const double norm = std::sqrt(static_cast<double>(mode[0] + mode[1] + mode[2]));
  const double kx_hat = mode[0] / norm, ky_hat = mode[1] / norm, kz_hat = mode[2] / norm;
  const double wavelength = 2.0 * M_PI / k;
  Real* x = p.x.data();
  Real* vx = p.vx.data();
  Real* y = c.dim >= 2 ? p.y.data() : nullptr;
  Real* vy = c.dim >= 2 ? p.vy.data() : nullptr;
  Real* z = three ? p.z.data() : nullptr;
  Real* vz = three ? p.vz.data() : nullptr;
  // Mixed: the cells beside the offsets (else null), the cells per axis.
  std::int32_t* cx = p.cells ? p.cx.data() : nullptr;
  std::int32_t* cy = p.cells && c.dim >= 2 ? p.cy.data() : nullptr;
  std::int32_t* cz = p.cells && three ? p.cz.data() : nullptr;
  const double nx = c.cells_x, ny = c.cells_y, nz = c.cells_z;
  std::int64_t* ids = p.id.data();
  const cn::Target t = cn::on(p.x);
  if (!given_ids) CUNUMPY_FOR_ON(t, "particle ids", p.n, i, ids[i] = first + i;);
  // Every particle is a function of its global id only: the same particles for any number of
  // ranks.  Two beams alternate by id; each beam takes the velocity samples of id / 2.  Quiet:
  // x regular in the id, y and z and the velocities' probabilities van der Corput sequences of
  // distinct primes (a Hammersley set; 1D and 2D keep the bases they always had).
  CUNUMPY_FOR_ON(
      t, "initialise", p.n, i, const long long id = ids[i];
      const unsigned long long vid =
          beams ? static_cast<unsigned long long>(id / 2) : static_cast<unsigned long long>(id);
      const unsigned long long uid = static_cast<unsigned long long>(id);
      double ux, uy, uz = 0.0, gx, gy, gz = 0.0; if (quiet) {
        ux = (static_cast<double>(beams ? id / 2 : id) + 0.5) /
             static_cast<double>(beams ? (n_global + 1) / 2 : n_global);
        uy = kernels::van_der_corput(uid, 2);
        if (three) {
          uz = kernels::van_der_corput(uid, 3);
          gx = vth * kernels::inverse_normal(kernels::van_der_corput(vid, 5));
          gy = vth * kernels::inverse_normal(kernels::van_der_corput(vid, 7));
          gz = vth * kernels::inverse_normal(kernels::van_der_corput(vid, 11));
        } else {
          gx = vth * kernels::inverse_normal(kernels::van_der_corput(vid, two ? 3 : 2));
          gy = vth * kernels::inverse_normal(kernels::van_der_corput(vid, 5));
        }
      } else {
        cunumpy_uniform2(seed, uid, 0, &ux, &uy);
        cunumpy_normal2(seed, vid, 1, &gx, &gy);
        if (three) {
          double unused;
          cunumpy_uniform2(seed, uid, 2, &uz, &unused);
          cunumpy_normal2(seed, vid, 3, &gz, &unused);
        }
        gx *= vth;
        gy *= vth;
        gz *= vth;
      } const double beam = beams ? (id % 2 == 0 ? v0 : -v0) : 0.0;
      if (along_x) {
        kernels::store_position(kernels::perturbed_position(ux, lx, amp, k), lx, nx, x[i],
                                cx != nullptr ? cx + i : nullptr);
        if (y != nullptr)
          kernels::store_position(uy * ly, ly, ny, y[i], cy != nullptr ? cy + i : nullptr);
        if (three) kernels::store_position(uz * lz, lz, nz, z[i], cz != nullptr ? cz + i : nullptr);
      } else {
        // Uniform positions displaced along the wave vector: s = k_hat . r solves s + (a / k)
        // sin(k s) = s0, so the density is 1 + a cos(k . r) (the box holds whole wavelengths
        // along k's axes, so the map is periodic in it).
        const double rx = ux * lx, ry = uy * ly, rz = three ? uz * lz : 0.0;
        const double s0 = kx_hat * rx + ky_hat * ry + kz_hat * rz;
        const double d = kernels::perturbed_position(s0 / wavelength, wavelength, amp, k) - s0;
        kernels::store_position(rx + kx_hat * d, lx, nx, x[i], cx != nullptr ? cx + i : nullptr);
        kernels::store_position(ry + ky_hat * d, ly, ny, y[i], cy != nullptr ? cy + i : nullptr);
        if (three)
          kernels::store_position(rz + kz_hat * d, lz, nz, z[i], cz != nullptr ? cz + i : nullptr);
      } vx[i] = static_cast<Real>(gx + beam * kx_hat);
      if (y != nullptr) vy[i] = static_cast<Real>(ky_hat != 0.0 ? gy + beam * ky_hat : gy);
      if (three) vz[i] = static_cast<Real>(kz_hat != 0.0 ? gz + beam * kz_hat : gz););
}
}  // namespace

namespace {
// The ids of the particles whose initial position lies in this rank's block, by the
// migration's own rule (inside [0, L) by position, then the cell floor(x n / L) clamped, owned
// when in [x0, x0 + lnx)): every id's position is computed, a chunk at a time on the run's
// backend, and the owned ones are kept.
template <typename Real>
cn::Array<std::int64_t> owned_ids(const Config& config, const LocalGrid& g, cn::Backend backend,
                                  long long global) {
  const long long chunk = std::max<long long>(1, std::min<long long>(global, 1LL << 20));
  Particles<Real> t;
  t.dim = config.dim;
  t.cells = stored_in_cells(config);
  t.global = global;
  allocate(t, chunk, backend);
  auto owned = cn::empty<std::uint8_t>({chunk}, backend);
  const cn::Target on = cn::on(t.x);
  const double sx = static_cast<double>(g.nx) / g.lx, sy = static_cast<double>(g.ny) / g.ly,
               sz = static_cast<double>(g.nz) / g.lz;
  const long long nx = g.nx, ny = g.ny, nz = g.nz, x0 = g.x0, x1 = g.x0 + g.lnx, y0 = g.y0,
                  y1 = g.y0 + g.lny, z0 = g.z0, z1 = g.z0 + g.lnz;
  const bool has_y = g.has_y(), has_z = g.has_z();
  const double lx = g.lx, ly = g.ly, lz = g.lz;
  std::vector<cn::Array<std::int64_t>> parts;
  long long total = 0;
  for (long long first = 0; first < global; first += chunk) {
    t.n = std::min(chunk, global - first);
    initialise(t, config, first, false);
    const Real* x = t.x.data();
    const Real* y = has_y ? t.y.data() : nullptr;
    const Real* z = has_z ? t.z.data() : nullptr;
    // Mixed: by the cells alone (the migration's rule for cell indices as positions).
    const std::int32_t* kx = t.cells ? t.cx.data() : nullptr;
    const std::int32_t* ky = t.cells && has_y ? t.cy.data() : nullptr;
    const std::int32_t* kz = t.cells && has_z ? t.cz.data() : nullptr;
    std::uint8_t* own = owned.data();
    CUNUMPY_FOR_ON(
        on, "owned at birth", t.n, i,
        long long cx = kx != nullptr ? kx[i] : static_cast<long long>(x[i] * sx);
        cx = cx < nx ? cx : nx - 1;
        bool mine = (kx != nullptr || (x[i] >= 0.0 && x[i] < lx)) && cx >= x0 && cx < x1;
        if (has_y) {
          long long cy = ky != nullptr ? ky[i] : static_cast<long long>(y[i] * sy);
          cy = cy < ny ? cy : ny - 1;
          mine = mine && (ky != nullptr || (y[i] >= 0.0 && y[i] < ly)) && cy >= y0 && cy < y1;
        } if (has_z) {
          long long cz = kz != nullptr ? kz[i] : static_cast<long long>(z[i] * sz);
          cz = cz < nz ? cz : nz - 1;
          mine = mine && (kz != nullptr || (z[i] >= 0.0 && z[i] < lz)) && cz >= z0 && cz < z1;
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

template <typename Real>
Particles<Real> make_particles(const Config& config, const cn::Comm& comm, cn::Backend backend,
                               long long spare, const LocalGrid* block) {
  Particles<Real> p;
  p.dim = config.dim;
  p.cells = stored_in_cells(config);
  p.global = config.particles;
  const int r = comm.rank(), ranks = comm.size();
  // A rank of a decomposed grid creates the particles born in its block (no initial
  // migration); otherwise the ids are split evenly.
  const bool born_on_owner = block != nullptr && !block->whole_box && ranks > 1;
  cn::Array<std::int64_t> ids;
  long long first = 0;
  if (born_on_owner) {
    ids = owned_ids<Real>(config, *block, backend, p.global);
    p.n = ids.size();
  } else {
    first = p.global * r / ranks;
    p.n = p.global * (r + 1) / ranks - first;
  }
  p.charge_density = static_cast<double>(total_cells(config)) / static_cast<double>(p.global);
  p.mass = particle_weight(config);
  const long long rows = p.n + spare;
  allocate(p, rows, backend);
  if (born_on_owner) {
    std::int64_t* out = p.id.data();
    const std::int64_t* in = ids.data();
    CUNUMPY_FOR_ON(cn::on(p.id), "particle ids", p.n, i, out[i] = in[i];);
    ids = cn::Array<std::int64_t>();
  }
  initialise(p, config, first, born_on_owner);
  return p;
}

bool stored_in_cells(const Config& config) {
  return config.precision == "mixed";
}

template struct Particles<double>;
template struct Particles<float>;
template Particles<double> make_particles<double>(const Config&, const cn::Comm&, cn::Backend,
                                                  long long, const LocalGrid*);
template Particles<float> make_particles<float>(const Config&, const cn::Comm&, cn::Backend,
                                                long long, const LocalGrid*);

}  // namespace pic
