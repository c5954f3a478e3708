// The electrostatic PIC simulation (pic.hpp).  Compiled as CUDA when the CUDA backend is built,
// so that its parallel_for bodies run on the device.
#include "pic.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fftw3.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

#if CUNUMPY_CUDA_COMPILATION()
#include <cufft.h>
#endif

#include "checkpoint.hpp"
#include "dispersion.hpp"
#include "host_step.hpp"
#include "host_step_simd.hpp"
#include "pic_catalog.hpp"
#include "pic_kernels.hpp"

namespace pic {

namespace cn = cunumpy;

BoxLengths box_of(const Config& c) {
  const double lx = 2.0 * M_PI / c.k;
  return {lx,
          c.dim == 2 ? lx * static_cast<double>(c.cells_y) / static_cast<double>(c.cells_x) : 1.0};
}

double particle_weight(const Config& c) {
  const BoxLengths box = box_of(c);
  return box.lx * box.ly / static_cast<double>(c.particles);
}

void apply_case(Config& c) {
  if (c.case_name == "landau") {
    c.k = 0.5;
    c.amplitude = 0.01;
    c.vth = 1.0;
    c.beam_velocity = 0.0;
  } else if (c.case_name == "two_stream") {
    c.k = 0.2;
    c.amplitude = 0.001;
    c.vth = 1.0;
    c.beam_velocity = 2.4;
  } else if (c.case_name != "custom") {
    throw cn::ValueError("unknown case '" + c.case_name +
                         "'; expected landau, two_stream or custom");
  }
}

namespace {

void validate(const Config& c, int ranks) {
  auto fail = [](const std::string& m) { throw cn::ValueError(m); };
  if (c.dim != 1 && c.dim != 2) fail("--dim must be 1 or 2, got " + std::to_string(c.dim));
  if (c.particles < ranks)
    fail("--particles must be at least the number of ranks (" + std::to_string(ranks) + ")");
  if (c.cells_x < 4 || (c.dim == 2 && c.cells_y < 4))
    fail("--cells needs at least 4 cells per dimension");
  if (c.steps < 1) fail("--steps must be positive, got " + std::to_string(c.steps));
  if (!(c.dt > 0.0)) fail("--dt must be positive, got " + std::to_string(c.dt));
  if (c.flush_every < 0) fail("the flush period must be 0 (never) or positive");
  if (!(c.k > 0.0)) fail("--k must be positive");
  if (c.order != 1 && c.order != 2) fail("--shape must be cic or tsc");
  // Every physical option finite and in range (a NaN passes a "<= 0" test, and reaches
  // float-to-int casts that are undefined behaviour).
  auto finite = [&](double v, const char* name) {
    if (!std::isfinite(v))
      fail(std::string(name) + " must be a finite number, got " + std::to_string(v));
  };
  finite(c.dt, "--dt");
  finite(c.k, "--k");
  finite(c.amplitude, "--amplitude");
  finite(c.vth, "--vth");
  finite(c.beam_velocity, "--beam-velocity");
  if (!(c.vth > 0.0)) fail("--vth must be positive");
  if (!(std::abs(c.amplitude) < 1.0))
    fail("--amplitude must be below 1 in size (the density 1 + a cos(kx) stays positive)");
  if (c.beam_velocity < 0.0) fail("--beam-velocity must be 0 (one Maxwellian) or positive");
  if (c.sort_every < 0) fail("--sort-every must be 0 (never) or positive");
  if (c.kernels != "builtin" && c.kernels != "rtc")
    fail("--kernels must be builtin or rtc, got " + c.kernels);
  if (c.decompose && c.kernels == "rtc")
    fail(
        "--decompose runs the builtin kernels (the catalog's CUDA kernels take the replicated "
        "grid); drop --kernels rtc or --decompose");
  // Ranges in which the derived quantities (box length 2 pi / k, cell size, particle weight,
  // dt v) stay far from the double range's limits: beyond them products overflow or underflow
  // and the run computes nothing meaningful.
  auto within = [&](double v, double lo, double hi, const char* name, const char* why) {
    if (!(v >= lo && v <= hi)) {
      std::ostringstream m;
      m << name << " must be between " << lo << " and " << hi << " (" << why << "), got " << v;
      fail(m.str());
    }
  };
  within(c.k, 1e-8, 1e8, "--k", "the box length 2 pi / k sets the cell size and the weights");
  within(c.dt, 1e-12, 1e3, "--dt",
         "in units of 1 / omega_p; the leapfrog is stable for dt < 2, larger steps diverge");
  within(c.vth, 1e-12, 1e8, "--vth", "in units of the Debye length times omega_p");
  if (c.beam_velocity != 0.0)
    within(c.beam_velocity, 1e-12, 1e8, "--beam-velocity", "as --vth; 0 for one Maxwellian");
}

std::vector<Species> species_of(const Config& c) {
  if (c.beam_velocity > 0.0) return {{0.5, c.beam_velocity, c.vth}, {0.5, -c.beam_velocity, c.vth}};
  return {{1.0, 0.0, c.vth}};
}

}  // namespace

// The state of one rank.  Public members and free functions: parallel_for bodies (extended
// lambdas under nvcc) may not live in private member functions.
struct State {
  Config config;
  cn::Comm comm;
  cn::Backend backend;
  int dim;
  long long nx, ny, cells, nk;  // ny = 1 in 1D; nk complex modes
  double lx, ly, dx, dy;
  long long n_global, n_local, first_id;
  double density_per_particle;     // cells / N: a particle's contribution to n_e in cell units
  double particle_mass;            // volume / N
  double ne_scale = 1.0;           // n_e = ne * ne_scale (the deterministic deposit sums integers)
  cn::Array<double> x, y, vx, vy;  // particles (y, vy empty in 1D)
  cn::Array<double> ex_p, ey_p;    // field at the particles
  cn::Array<double> energy;        // per-particle kinetic energy (the rtc push)
  cn::Array<double> ne, rho, ex, ey;  // grid (nodes); decomposed: this rank's, with guards
  cn::Array<std::complex<double>> rho_k, ex_k, ey_k;  // Fourier space (replicated)
  std::unique_ptr<cn::FftPlan> fft;  // replicated: runs on any arrays of its layout
  std::map<std::string, double> phase;
  // The decomposed grid (config.decompose): each rank owns a block of cells, its particles
  // are those in the block; guards summed after the deposit and filled before the gather.
  std::unique_ptr<cn::CartesianDecomposition> decomposition;
  std::unique_ptr<cn::HaloExchange> halo, halo_y;  // halo_y: E_y's fill, beside E_x's
  std::unique_ptr<cn::DistributedFft> dfft;
  std::unique_ptr<cn::ParticleMigration> migration;
  cn::ParticleColumns columns;
  cn::Array<std::int64_t> id;
  long long lnx = 0, lny = 1, x0 = 0, y0 = 0, guard = 0, row = 1;  // row: guarded length of y
  cn::Array<std::complex<double>> rho_local_k;                     // this rank's modes of rho
  // The host's one-pass step (host_step.hpp), where it applies: the guarded fields (E_x, E_y
  // interleaved) and each thread's guarded density of the next step, deposited by the push.
  bool one_pass = false;
  host_step::GuardedGrid guarded;
  std::vector<double> exy, cell_fields;  // cell_fields: CIC's vector loop (host_step_simd.hpp)
  std::vector<std::vector<double>> next_density;
  bool next_density_ready = false;
  bool momentum_ready = false;  // the push summed the momentum too
  double pushed_momentum = 0.0;
};

bool decomposed(const State& s) {
  return s.decomposition != nullptr;
}

void initialise(State& s);
void deposit(State& s);
void solve(State& s);
void gather(State& s, bool one_pass = false);
double push(State& s, double velocity_factor, bool move);
double momentum(State& s);
void resort(State& s);

namespace {
std::unique_ptr<State> make_state(const Config& config, const cn::Comm& comm) {
  validate(config, comm.size());
  auto s = std::make_unique<State>(State{config, comm, cn::get_backend(), config.dim});
  s->nx = config.cells_x;
  s->ny = config.dim == 2 ? config.cells_y : 1;
  s->cells = s->nx * s->ny;
  s->nk = config.dim == 2 ? s->nx * (s->ny / 2 + 1) : s->nx / 2 + 1;
  const BoxLengths box = box_of(config);
  s->lx = box.lx;
  s->ly = box.ly;
  s->dx = s->lx / static_cast<double>(s->nx);
  s->dy = config.dim == 2 ? s->ly / static_cast<double>(s->ny) : 1.0;
  s->n_global = config.particles;
  const int r = comm.rank(), p = comm.size();
  s->first_id = s->n_global * r / p;
  s->n_local = s->n_global * (r + 1) / p - s->first_id;
  s->density_per_particle = static_cast<double>(s->cells) / static_cast<double>(s->n_global);
  s->particle_mass = particle_weight(config);
  const cn::Shape grid = config.dim == 2 ? cn::Shape{s->nx, s->ny} : cn::Shape{s->nx};
  // Decomposed: particles move between ranks, so their arrays keep spare rows.
  const long long capacity = config.decompose ? s->n_local + s->n_local / 4 + 64 : s->n_local;
  if (config.decompose) {
    const cn::DecompositionOptions periodic{.periodic = {true, true, true}};
    s->decomposition = std::make_unique<cn::CartesianDecomposition>(
        config.dim == 2 ? cn::CartesianDecomposition(comm, {s->nx, s->ny}, periodic)
                        : cn::CartesianDecomposition(comm, {s->nx}, periodic));
    const cn::CartesianDecomposition& d = *s->decomposition;
    // The stencil reaches order nodes past the particle's cell (and one before it for TSC); one
    // more on each side covers a cell index rounded across a rank's edge.
    s->guard = config.order + 1;
    s->halo = std::make_unique<cn::HaloExchange>(
        comm, d, cn::HaloOptions{.guard = static_cast<int>(s->guard)});
    s->halo_y = std::make_unique<cn::HaloExchange>(
        comm, d, cn::HaloOptions{.guard = static_cast<int>(s->guard), .tag = 7150});
    s->dfft = std::make_unique<cn::DistributedFft>(
        comm, d, cn::DistributedFftOptions{.guard = static_cast<int>(s->guard)}, s->backend);
    s->migration = std::make_unique<cn::ParticleMigration>(
        comm, d, std::array<double, 3>{0.0, 0.0, 0.0}, std::array<double, 3>{s->lx, s->ly, 1.0});
    s->lnx = d.local_cells(0);
    s->lny = config.dim == 2 ? d.local_cells(1) : 1;
    s->x0 = d.owned(0).begin;
    s->y0 = config.dim == 2 ? d.owned(1).begin : 0;
    s->row = config.dim == 2 ? s->lny + 2 * s->guard : 1;
    const cn::Shape local = s->halo->field_shape();
    for (cn::Array<double>* a : {&s->ne, &s->rho, &s->ex, &s->ey}) *a = cn::zeros<double>(local);
    s->rho_local_k = cn::zeros<std::complex<double>>(s->dfft->spectrum().shape());
  } else {
    for (cn::Array<double>* a : {&s->ne, &s->rho, &s->ex, &s->ey}) *a = cn::zeros<double>(grid);
    s->fft = std::make_unique<cn::FftPlan>(grid, s->backend);
    for (auto* a : {&s->rho_k, &s->ex_k, &s->ey_k})
      *a = cn::zeros<std::complex<double>>(s->fft->spectrum_shape());
  }
  s->x = cn::empty<double>({capacity});
  s->vx = cn::empty<double>({capacity});
  s->id = cn::empty<std::int64_t>({capacity});  // carried by sorts and migrations
  s->ex_p = cn::empty<double>({capacity});
  if (config.dim == 2) {
    s->y = cn::empty<double>({capacity});
    s->vy = cn::empty<double>({capacity});
    s->ey_p = cn::empty<double>({capacity});
  }
  if (config.decompose) {  // here: the columns refer to the state's arrays where they stay
    s->columns.position(s->x);
    if (config.dim == 2) s->columns.position(s->y);
    s->columns.column(s->vx);
    if (config.dim == 2) s->columns.column(s->vy);
    s->columns.column(s->id);
  }
  // The one-pass loops index nodes (and E_x, E_y pairs) with 32-bit integers.
  const bool int_nodes = 2 * (s->nx + 3) * (s->ny + 3) < (1LL << 31);
  s->one_pass = s->backend == cn::Backend::host && config.dim == 2 && config.host_step == "fused" &&
                config.kernels == "builtin" && !config.deterministic && !config.decompose &&
                int_nodes;
  if (s->one_pass) {
    s->guarded = host_step::guarded(s->nx, s->ny);
    int threads = 1;
#if defined(_OPENMP)
    threads = omp_get_max_threads();
#endif
    s->next_density.assign(static_cast<std::size_t>(threads),
                           std::vector<double>(static_cast<std::size_t>(s->guarded.nodes()), 0.0));
  }
  if (config.kernels == "rtc") {
    s->energy = cn::empty<double>({capacity});
    // At setup, so the first step pays no compilation; only the cuda backend runs the NVRTC
    // images (the host backend runs the host kernels, the emulated one compiles its own).
    if (s->backend == cn::Backend::cuda) kernel_catalog().compile_all(2);
  }
  return s;
}

// Runs `body` as the phase `name`: an NVTX range and a timed region, accumulated.
template <typename Body>
void phase(State& s, const char* name, Body&& body) {
  cn::TimedRegion region(name, true);
  body();
  s.phase[name] += *region.stop().elapsed;
}
}  // namespace

void initialise(State& s) {
  const Config& c = s.config;
  const long long first = s.first_id, n_global = s.n_global;
  const bool quiet = c.quiet, two = c.dim == 2, beams = c.beam_velocity > 0.0;
  const double lx = s.lx, ly = s.ly, amp = c.amplitude, k = c.k, vth = c.vth, v0 = c.beam_velocity;
  const std::uint64_t seed = c.seed;
  double* x = s.x.data();
  double* vx = s.vx.data();
  double* y = two ? s.y.data() : nullptr;
  double* vy = two ? s.vy.data() : nullptr;
  {
    std::int64_t* id = s.id.data();
    CUNUMPY_FOR("particle ids", s.n_local, i, id[i] = first + i;);
  }
  // Every particle is a function of its global id only: the same particles for any number of
  // ranks.  Two beams alternate by id; each beam takes the velocity samples of id / 2.
  CUNUMPY_FOR(
      "initialise", s.n_local, i, const long long id = first + i;
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

kernels::Grid grid_of(const State& s) {
  kernels::Grid g{s.nx, s.ny, s.config.order, s.dim == 2, 1.0 / s.dx, 1.0 / s.dy};
  if (decomposed(s)) {
    g.local = true;
    g.x0 = s.x0;
    g.y0 = s.y0;
    g.guard = s.guard;
    g.row = s.row;
  }
  return g;
}

// The field arrays' node count: the whole grid (replicated) or this rank's with its guards.
long long grid_nodes(const State& s) {
  return s.ne.size();
}

// The host backend's deposit: each OpenMP thread accumulates into a private grid (no
// atomics), then the grids are summed cell by cell in thread order.  Same per-particle math as
// the device's (kernels::stencil); only the accumulation differs, as on CPUs atomics cost
// more than they save.  The emulated device runs the device path (atomics).
void deposit_private_grids(State& s) {
  const kernels::Grid grid = grid_of(s);
  // The kernel catalog's host deposit: one implementation for both kernel modes.
  deposit_host(s.x, grid.two ? s.y : s.x, s.ne, grid.nx, grid.ny, grid.order, grid.two, grid.inv_dx,
               grid.inv_dy, s.density_per_particle, s.n_local);
}

void deposit(State& s) {
  const kernels::Grid grid = grid_of(s);
  const long long nx = s.nx, ny = s.ny, n = s.n_local;
  const int order = s.config.order;
  const bool two = grid.two;
  const double q = s.density_per_particle;
  const double* x = s.x.data();
  const double* y = two ? s.y.data() : x;  // y unused in 1D
  double* ne = s.ne.data();
  s.ne_scale = 1.0;
  if (s.next_density_ready) {  // deposited by the one-pass push
    host_step::fold_densities(s.guarded, s.next_density, ne);
    s.next_density_ready = false;
    return;
  }
  if (!s.config.deterministic && s.config.kernels == "rtc") {
    s.ne.fill(0.0);
    kernel_catalog().get<decltype(&deposit_host)>("deposit")(cn::threads(n), s.x, two ? s.y : s.x,
                                                             s.ne, nx, ny, order, two, grid.inv_dx,
                                                             grid.inv_dy, q, n);
    return;
  }
  if (!s.config.deterministic && s.backend == cn::Backend::host && !decomposed(s)) {
    deposit_private_grids(s);
    return;
  }
  s.ne.fill(0.0);
  if (!s.config.deterministic) {
    CUNUMPY_FOR("deposit", n, i,
                kernels::for_each_node(grid, x[i], y[i], [&](long long c, double w, int) {
                  cunumpy_atomic_add(&ne[c], q * w);
                }););
    return;
  }
  // Deterministic: each particle's stencil weights, quantised to multiples of 2^-24, summed
  // per base cell with segment_sum (integers below 2^53: exact in any order), then spread to
  // the stencil's cells, still as integers: the sum over the ranks is exact too, and the scale
  // is applied after it.  Exact sums make the density bit-identical over runs, backends and
  // rank counts.
  const int points = two ? (order + 1) * (order + 1) : order + 1;
  auto keys = cn::empty<std::int64_t>({n});
  auto values = cn::empty<std::int64_t>({n, points});
  std::int64_t* key = keys.data();
  std::int64_t* value = values.data();
  const double quantum = 16777216.0;  // 2^24
  CUNUMPY_FOR("deposit weights", n, i,
              kernels::for_each_node(grid, x[i], y[i], [&](long long c, double w, int point) {
                if (point == 0) key[i] = c;  // the stencil's first node is the particle's key
                value[i * points + point] = llround(w * quantum);
              }););
  const long long nodes = grid_nodes(s);
  const cn::Array<double> sums = cn::segment_sum(keys, values, nodes);
  const double* sum = sums.data();
  s.ne_scale = q / quantum;
  if (decomposed(s)) {
    // The same integer sums on the rank's guarded nodes, without wrapping (the halo sum adds
    // the periodic images, still exactly).
    const long long row = s.row;
    CUNUMPY_FOR(
        "deposit spread", nodes, c, const long long ci = c / row, cj = c % row; double acc = 0.0;
        for (int a = 0; a <= order; ++a) {
          if (ci - a < 0) continue;
          if (!two) {
            acc += sum[(ci - a) * points + a];
            continue;
          }
          for (int b = 0; b <= order; ++b)
            if (cj - b >= 0) acc += sum[((ci - a) * row + (cj - b)) * points + a * (order + 1) + b];
        } ne[c] = acc;);
    return;
  }
  CUNUMPY_FOR(
      "deposit spread", s.cells, c, const long long ci = c / ny, cj = c % ny; double acc = 0.0;
      for (int a = 0; a <= order; ++a) {
        if (!two) {
          acc += sum[kernels::wrap(ci - a, nx) * points + a];
          continue;
        }
        for (int b = 0; b <= order; ++b)
          acc += sum[(kernels::wrap(ci - a, nx) * ny + kernels::wrap(cj - b, ny)) * points +
                     a * (order + 1) + b];
      } ne[c] = acc;);
}

// E_k = -i k rho_k / |k|^2 (times `norm`, the inverse transform's 1 / cells) for the modes
// in `rk` (interleaved complex): mode m is global (i0 + m / cols, m % cols); axis 0's index
// maps to its signed frequency, axis 1 holds the non-negative ones (2D).
void poisson(const double* rk, double* exk, double* eyk, long long modes, long long i0,
             long long cols, long long nx, double kx0, double ky0, double norm, bool two) {
  CUNUMPY_FOR(
      "poisson", modes, m, const long long i = i0 + m / cols, j = m % cols;
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

double* interleaved(const cn::Array<std::complex<double>>& a) {
  return reinterpret_cast<double*>(a.data());
}

void solve(State& s) {
  const bool two = s.dim == 2;
  const double kx0 = 2.0 * M_PI / s.lx, ky0 = 2.0 * M_PI / s.ly,
               norm = 1.0 / static_cast<double>(s.cells);
  const double* ne = s.ne.data();
  double* rho = s.rho.data();
  const double ne_scale = s.ne_scale;
  CUNUMPY_FOR("charge", grid_nodes(s), c, rho[c] = 1.0 - ne[c] * ne_scale;);
  if (!decomposed(s)) {
    const long long cols = two ? s.ny / 2 + 1 : 1;
    s.fft->forward(s.rho, s.rho_k);
    poisson(interleaved(s.rho_k), interleaved(s.ex_k), two ? interleaved(s.ey_k) : nullptr, s.nk, 0,
            cols, s.nx, kx0, ky0, norm, two);
    s.fft->inverse(s.ex_k, s.ex);
    if (two) s.fft->inverse(s.ey_k, s.ey);
    return;
  }
  // Decomposed: the distributed transform; each rank multiplies its modes; E_x and E_y come
  // back one after the other through the plan's spectrum.
  cn::DistributedFft& fft = *s.dfft;
  fft.forward(s.rho);
  const cn::Array<std::complex<double>>& k = fft.spectrum();
  cn::copy(s.rho_local_k, k);
  const long long modes = k.size();
  const long long cols = two ? k.shape(1) : 1;
  poisson(interleaved(s.rho_local_k), interleaved(k), nullptr, modes, fft.spectrum_begin(), cols,
          s.nx, kx0, ky0, norm, two);
  fft.inverse(s.ex);
  if (two) {
    poisson(interleaved(s.rho_local_k), nullptr, interleaved(k), modes, fft.spectrum_begin(), cols,
            s.nx, kx0, ky0, norm, two);
    fft.inverse(s.ey);
  }
}

// Decomposed: the field at this rank's guards from their owners, E_x and E_y at once.
void fill_fields(State& s) {
  s.halo->begin_fill(s.ex);
  if (s.dim == 2) s.halo_y->begin_fill(s.ey);
  s.halo->end();
  if (s.dim == 2) s.halo_y->end();
}

// Decomposed: particles that left the rank's block go to its owner; the per-particle work
// arrays follow the particle arrays' capacity.
void migrate(State& s) {
  s.n_local = s.migration->migrate(s.columns, s.n_local);
  const long long capacity = s.x.shape(0);
  for (cn::Array<double>* a : {&s.ex_p, &s.ey_p, &s.energy})
    if (a->data() != nullptr && a->shape(0) != capacity) *a = cn::empty<double>({capacity});
}

// one_pass: the push that follows gathers itself (host_step.hpp); the fields are copied to
// their guarded layout for it.
void gather(State& s, bool one_pass) {
  if (one_pass) {
    host_step::fill_guarded_fields(s.guarded, s.ex.data(), s.ey.data(), s.exy);
    if (s.config.order == 1)
      host_step::fill_cell_fields(s.nx, s.ny, s.ex.data(), s.ey.data(), s.cell_fields);
    return;
  }
  const kernels::Grid grid = grid_of(s);
  const bool two = grid.two;
  const double* x = s.x.data();
  const double* y = two ? s.y.data() : x;  // y unused in 1D
  const double* ex = s.ex.data();
  const double* ey = two ? s.ey.data() : nullptr;
  double* exp_ = s.ex_p.data();
  double* eyp = two ? s.ey_p.data() : nullptr;
  if (s.config.kernels == "rtc") {
    kernel_catalog().get<decltype(&gather_host)>("gather")(
        cn::threads(s.n_local), s.x, two ? s.y : s.x, s.ex, two ? s.ey : s.ex, s.ex_p,
        two ? s.ey_p : s.ex_p, s.nx, s.ny, s.config.order, two, grid.inv_dx, grid.inv_dy,
        s.n_local);
    return;
  }
  CUNUMPY_FOR("gather", s.n_local, i, double e0 = 0.0, e1 = 0.0;
              kernels::for_each_node(grid, x[i], y[i],
                                     [&](long long c, double w, int) {
                                       e0 += w * ex[c];
                                       if (two) e1 += w * ey[c];
                                     });
              exp_[i] = e0; if (two) eyp[i] = e1;);
}

// v += factor * dt * (q/m) E (q/m = -1); then, if `move`, x += dt v.  Returns this rank's
// kinetic energy with time-centred velocities (v_old . v_new).
double push(State& s, double velocity_factor, bool move) {
  const bool two = s.dim == 2;
  const double dv = -velocity_factor * s.config.dt, dt = s.config.dt, lx = s.lx, ly = s.ly,
               mass = s.particle_mass;
  double* x = s.x.data();
  double* y = two ? s.y.data() : nullptr;
  double* vx = s.vx.data();
  double* vy = two ? s.vy.data() : nullptr;
  const double* exp_ = s.ex_p.data();
  const double* eyp = two ? s.ey_p.data() : nullptr;
  if (s.one_pass && move) {  // gather, push and the next step's deposit in one pass
    const host_step::Step step{x,
                               y,
                               vx,
                               vy,
                               s.n_local,
                               s.config.order,
                               1.0 / s.dx,
                               1.0 / s.dy,
                               lx,
                               ly,
                               dv,
                               dt,
                               s.density_per_particle,
                               s.exy.data(),
                               s.config.order == 1 ? s.cell_fields.data() : nullptr};
    const host_step::Sums sums = host_step::push_and_deposit(s.guarded, step, s.next_density);
    s.next_density_ready = true;
    s.momentum_ready = true;
    s.pushed_momentum = mass * sums.momentum;
    return 0.5 * mass * sums.energy;
  }
  if (s.config.kernels == "rtc") {
    kernel_catalog().get<decltype(&push_host)>("push")(
        cn::threads(s.n_local), s.x, two ? s.y : s.x, s.vx, two ? s.vy : s.vx, s.ex_p,
        two ? s.ey_p : s.ex_p, s.energy, dv, dt, lx, ly, mass, move, two, s.n_local);
    const double* e = s.energy.data();
    return CUNUMPY_REDUCE("kinetic energy", s.n_local, cn::ReduceOp::sum, i, return e[i];);
  }
  return CUNUMPY_REDUCE(
      "push", s.n_local, cn::ReduceOp::sum, i, const double old_x = vx[i];
      const double new_x = old_x + dv * exp_[i]; vx[i] = new_x; double energy = old_x * new_x;
      if (move) x[i] = kernels::periodic(x[i] + dt * new_x, lx); if (two) {
        const double old_y = vy[i];
        const double new_y = old_y + dv * eyp[i];
        vy[i] = new_y;
        energy += old_y * new_y;
        if (move) y[i] = kernels::periodic(y[i] + dt * new_y, ly);
      } return 0.5 * mass * energy;);
}

double momentum(State& s) {
  if (s.momentum_ready) {
    s.momentum_ready = false;
    return s.pushed_momentum;
  }
  const double* vx = s.vx.data();
  const double mass = s.particle_mass;
  return CUNUMPY_REDUCE("momentum", s.n_local, cn::ReduceOp::sum, i, return mass * vx[i];);
}

void resort(State& s) {
  const bool two = s.dim == 2;
  const long long nx = s.nx, ny = s.ny;
  const double inv_dx = 1.0 / s.dx, inv_dy = 1.0 / s.dy;
  const double* x = s.x.data();
  const double* y = two ? s.y.data() : nullptr;
  auto keys = cn::empty<std::uint64_t>({s.n_local});
  std::uint64_t* k = keys.data();
  CUNUMPY_FOR("morton keys", s.n_local, i,
              const unsigned long long cx = static_cast<unsigned long long>(
                  kernels::wrap(static_cast<long long>(x[i] * inv_dx), nx));
              const unsigned long long cy = two ? static_cast<unsigned long long>(kernels::wrap(
                                                      static_cast<long long>(y[i] * inv_dy), ny))
                                                : 0ull;
              k[i] = cunumpy_morton_encode2(cx, cy););
  if (decomposed(s)) {
    // The arrays have spare rows: the first n_local are sorted and put back in place (the
    // migration's columns refer to these arrays).
    const long long n = s.n_local;
    auto head = [&](const auto& a) {
      using T = typename std::decay_t<decltype(a)>::value_type;
      cn::Array<T> h = cn::empty<T>({n});
      cn::detail::copy_memory(h.data(), h.backend(), a.data(), a.backend(), n * sizeof(T));
      return h;
    };
    auto back = [&](const auto& sorted, const auto& a) {
      using T = typename std::decay_t<decltype(a)>::value_type;
      cn::detail::copy_memory(a.data(), a.backend(), sorted.data(), sorted.backend(),
                              n * sizeof(T));
    };
    if (two) {
      auto [sk, order, x2, y2, vx2, vy2, id2] =
          cn::sort_by_key(keys, head(s.x), head(s.y), head(s.vx), head(s.vy), head(s.id));
      back(x2, s.x);
      back(y2, s.y);
      back(vx2, s.vx);
      back(vy2, s.vy);
      back(id2, s.id);
    } else {
      auto [sk, order, x2, vx2, id2] = cn::sort_by_key(keys, head(s.x), head(s.vx), head(s.id));
      back(x2, s.x);
      back(vx2, s.vx);
      back(id2, s.id);
    }
    return;
  }
  if (two) {
    auto [sk, order, x2, y2, vx2, vy2, id2] = cn::sort_by_key(keys, s.x, s.y, s.vx, s.vy, s.id);
    s.x = x2;
    s.y = y2;
    s.vx = vx2;
    s.vy = vy2;
    s.id = id2;
  } else {
    auto [sk, order, x2, vx2, id2] = cn::sort_by_key(keys, s.x, s.vx, s.id);
    s.x = x2;
    s.vx = vx2;
    s.id = id2;
  }
}

namespace {
// Sums f(node) over the nodes this rank owns: all of them (replicated), or its block without
// the guards (decomposed); summed over the ranks when decomposed.
template <typename F>
double owned_sum(State& s, const char* name, F f) {
  if (!decomposed(s)) return cn::parallel_reduce(name, s.cells, cn::ReduceOp::sum, f);
  const long long ny = s.lny, g = s.guard, row = s.row;
  const bool two = s.dim == 2;
  const double local = cn::parallel_reduce(
      name, s.lnx * s.lny, cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long c) {
        const long long i = c / ny + g, j = c % ny + (two ? g : 0);
        return f(i * row + j);
      });
  return s.comm.allreduce(local, cn::Op::sum);
}

double field_energy(State& s) {
  const double* ex = s.ex.data();
  const double* ey = s.dim == 2 ? s.ey.data() : nullptr;
  const double cell = s.dx * s.dy;
  return owned_sum(
      s, "field energy", CUNUMPY_LAMBDA(long long c) {
        const double e2 = ex[c] * ex[c] + (ey != nullptr ? ey[c] * ey[c] : 0.0);
        return 0.5 * e2 * cell;
      });
}
// The field energy of mode (k, 0): |E_k|^2 / cells^2 * volume, from rho_k (E_k = -i k rho_k / k^2).
double mode_energy(State& s) {
  const double k = 2.0 * M_PI / s.lx;
  const double scale =
      s.lx * s.ly / (static_cast<double>(s.cells) * static_cast<double>(s.cells) * k * k);
  long long m = s.dim == 2 ? (s.ny / 2 + 1) : 1;  // index of (i = 1, j = 0)
  const double* rk = interleaved(s.rho_k);
  if (decomposed(s)) {  // on the rank whose modes hold row 1 of axis 0
    const cn::Array<std::complex<double>>& local = s.rho_local_k;
    const long long begin = s.dfft->spectrum_begin(), rows = local.size() == 0 ? 0 : local.shape(0);
    double mine = 0.0;
    if (begin <= 1 && 1 < begin + rows) {
      m = (1 - begin) * (s.dim == 2 ? local.shape(1) : 1);
      rk = interleaved(local);
      mine = cn::parallel_reduce(
          "mode energy", 1, cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long) {
            return (rk[2 * m] * rk[2 * m] + rk[2 * m + 1] * rk[2 * m + 1]) * scale;
          });
    }
    return s.comm.allreduce(mine, cn::Op::sum);
  }
  return cn::parallel_reduce(
      "mode energy", 1, cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long) {
        return (rk[2 * m] * rk[2 * m] + rk[2 * m + 1] * rk[2 * m + 1]) * scale;
      });
}

double total_charge(State& s) {
  const double* rho = s.rho.data();
  const double cell = s.dx * s.dy;
  return owned_sum(
      s, "total charge", CUNUMPY_LAMBDA(long long c) { return rho[c] * cell; });
}

void deposit_and_sum(State& s) {
  phase(s, "deposit", [&] { deposit(s); });
  if (decomposed(s))
    phase(s, "halo", [&] { s.halo->sum(s.ne); });
  else
    phase(s, "comm", [&] { cn::allreduce(s.comm, s.ne, cn::Op::sum); });
}

// Bytes this rank sent to others since the statistics were reset (decomposed), or what one
// step's allreduce of the replicated grid sends per rank with the ring algorithm,
// 2 (P - 1) / P of the grid.
double bytes_sent(const State& s) {
  if (!decomposed(s)) {
    const double p = s.comm.size();
    return 2.0 * (p - 1.0) / p * static_cast<double>(s.cells) * sizeof(double);
  }
  return static_cast<double>(s.halo->stats().bytes_sent + s.halo_y->stats().bytes_sent +
                             s.migration->stats().bytes_sent + s.dfft->stats().bytes_sent);
}
}  // namespace

namespace {
// Rows [0, n) of a particle array, on the host.
template <typename T>
std::vector<T> rows_of(const cn::Array<T>& a, long long n) {
  const auto h = cn::to_host(a);
  return std::vector<T>(h.host_span().begin(), h.host_span().begin() + n);
}
Checkpoint checkpoint_of(const State& s, const Results& r, int steps_done) {
  Checkpoint c;
  c.config = s.config;
  c.step = steps_done;
  c.history = r;
  c.total = s.n_global;
  c.x = rows_of(s.x, s.n_local);
  c.vx = rows_of(s.vx, s.n_local);
  if (s.dim == 2) {
    c.y = rows_of(s.y, s.n_local);
    c.vy = rows_of(s.vy, s.n_local);
  }
  c.id = rows_of(s.id, s.n_local);
  return c;
}

// The checkpoint's particles into the state's arrays (spare rows when decomposed).
void load_particles(State& s, const Checkpoint& c) {
  const long long n = static_cast<long long>(c.id.size());
  const long long capacity = decomposed(s) ? n + n / 4 + 64 : n;
  auto put = [&](auto& a, const auto& v) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    auto h = cn::zeros<T>({capacity}, cn::Backend::host);
    std::copy(v.begin(), v.end(), h.host_span().begin());
    a = cn::empty<T>({capacity});
    cn::copy(a, h);
  };
  put(s.x, c.x);
  put(s.vx, c.vx);
  if (s.dim == 2) {
    put(s.y, c.y);
    put(s.vy, c.vy);
  }
  put(s.id, c.id);
  for (cn::Array<double>* a : {&s.ex_p, &s.ey_p, &s.energy})
    if (a->data() != nullptr) *a = cn::empty<double>({capacity});
  s.n_local = n;
}

// The output of one step, staged: the device arrays are copied to pinned host buffers by
// HostStaging (two per array) while the step goes on, and written at the end of the step.
struct StagedOutput {
  // One staging per array, remade when an array's shape changes (a particle array that grew).
  std::vector<std::unique_ptr<cn::HostStaging<double>>> doubles;
  std::unique_ptr<cn::HostStaging<std::int64_t>> ids;
  struct Pending {
    int step = 0;
    long long n = 0;
    std::vector<cn::StagedCopy<double>> fields, columns;  // rho, ex[, ey]; x, vx[, y, vy]
    std::optional<cn::StagedCopy<std::int64_t>> id;
  };
  std::optional<Pending> pending;

  template <typename T>
  static cn::StagedCopy<T> stage(std::unique_ptr<cn::HostStaging<T>>& staging,
                                 const cn::Array<T>& a) {
    if (!staging || !(staging->shape() == a.shape()))
      staging = std::make_unique<cn::HostStaging<T>>(a.shape(), 2);
    return staging->copy(a);
  }

  // Starts the copies of E_n, rho_n and the particles at x_n.
  void start(const State& s, int step) {
    Pending p;
    p.step = step;
    p.n = s.n_local;
    std::vector<const cn::Array<double>*> arrays{&s.rho, &s.ex};
    if (s.dim == 2) arrays.push_back(&s.ey);
    const std::size_t n_fields = arrays.size();
    arrays.push_back(&s.x);
    arrays.push_back(&s.vx);
    if (s.dim == 2) {
      arrays.push_back(&s.y);
      arrays.push_back(&s.vy);
    }
    doubles.resize(std::max(doubles.size(), arrays.size()));
    for (std::size_t k = 0; k < arrays.size(); ++k)
      (k < n_fields ? p.fields : p.columns).push_back(stage(doubles[k], *arrays[k]));
    p.id = stage(ids, s.id);
    pending = std::move(p);
  }
};

// This rank's cells of rho and E on the host (the staged copies): all of them on rank 0
// (replicated), or the rank's block (decomposed).
MeshBlock mesh_block(const State& s, const std::vector<cn::Array<double>>& fields) {
  MeshBlock m;
  const bool two = s.dim == 2;
  m.global = two ? std::vector<long long>{s.nx, s.ny} : std::vector<long long>{s.nx};
  m.spacing = two ? std::vector<double>{s.dx, s.dy} : std::vector<double>{s.dx};
  std::vector<cn::Array<double>> out;
  if (!decomposed(s)) {
    const bool mine = s.comm.rank() == 0;
    m.offset = std::vector<long long>(m.global.size(), 0);
    m.count = mine ? m.global : std::vector<long long>(m.global.size(), 0);
    for (const auto& h : fields)
      out.push_back(mine ? h : cn::empty<double>({0}, cn::Backend::host));
  } else {
    m.offset = two ? std::vector<long long>{s.x0, s.y0} : std::vector<long long>{s.x0};
    m.count = two ? std::vector<long long>{s.lnx, s.lny} : std::vector<long long>{s.lnx};
    for (const auto& h : fields) {
      auto block = cn::empty<double>({s.lnx * s.lny}, cn::Backend::host);
      for (long long i = 0; i < s.lnx; ++i)
        for (long long j = 0; j < s.lny; ++j)
          block.host_span()[i * s.lny + j] =
              h.host_span()[(i + s.guard) * s.row + j + (two ? s.guard : 0)];
      out.push_back(block);
    }
  }
  m.rho = out[0];
  m.e.assign(out.begin() + 1, out.end());
  return m;
}

// Waits for the staged copies (they landed during the step, on a GPU) and writes them.
std::string write_staged(StagedOutput& out, const State& s, SnapshotWriter& writer) {
  StagedOutput::Pending p = std::move(*out.pending);
  out.pending.reset();
  std::vector<cn::Array<double>> fields;
  for (const auto& c : p.fields) fields.push_back(c.result());
  ParticleBlock b;
  auto head = [&](const cn::Array<double>& a) {
    return cn::from_host<double>(std::span<const double>(a.data(), p.n), {p.n}, cn::Backend::host);
  };
  b.position.push_back(head(p.columns[0].result()));
  b.velocity.push_back(head(p.columns[1].result()));
  if (s.dim == 2) {
    b.position.push_back(head(p.columns[2].result()));
    b.velocity.push_back(head(p.columns[3].result()));
  }
  const cn::Array<std::int64_t> ids = p.id->result();
  b.id = cn::from_host<std::int64_t>(std::span<const std::int64_t>(ids.data(), p.n), {p.n},
                                     cn::Backend::host);
  b.count = p.n;
  b.weight = s.particle_mass;
  if (decomposed(s)) {  // the rank's block of the box
    b.patch_offset = {static_cast<double>(s.x0) * s.dx};
    b.patch_extent = {static_cast<double>(s.lnx) * s.dx};
    if (s.dim == 2) {
      b.patch_offset.push_back(static_cast<double>(s.y0) * s.dy);
      b.patch_extent.push_back(static_cast<double>(s.lny) * s.dy);
    }
  } else {  // replicated: any rank's particles are anywhere
    b.patch_offset = std::vector<double>(static_cast<std::size_t>(s.dim), 0.0);
    b.patch_extent = s.dim == 2 ? std::vector<double>{s.lx, s.ly} : std::vector<double>{s.lx};
  }
  return writer.write(p.step, p.step * s.config.dt, s.config.dt, mesh_block(s, fields), b);
}
}  // namespace

Results run(const Config& config, const cn::Comm& comm) {
  if ((config.output_every > 0 || config.checkpoint_every > 0) && config.output_folder.empty())
    throw cn::ValueError("--output-every and --checkpoint-every need --output <folder>");
  if (config.output_every < 0 || config.checkpoint_every < 0)
    throw cn::ValueError("--output-every and --checkpoint-every must be 0 (never) or positive");
  auto s = make_state(config, comm);
  // The output folders are checked before the first step.
  std::unique_ptr<SnapshotWriter> snapshots;
  StagedOutput staged;
  if (config.output_every > 0)
    snapshots = std::make_unique<SnapshotWriter>(config.output_folder, comm, config.overwrite);
  Results r;
  r.ranks = comm.size();
#if defined(_OPENMP)
  r.threads_per_rank = omp_get_max_threads();
#endif
  r.backend = std::string(cn::to_string(cn::get_backend()));
  const std::complex<double> theory = solve_dispersion(config.k, species_of(config));
  r.omega_theory = theory.real();
  r.gamma_theory = theory.imag();

  int first_step = 0;
  if (!config.restart.empty()) {
    // Continue: the particles at x_n, v_{n-1/2} and the histories so far.
    const Checkpoint c = read_checkpoint(config.restart, comm);
    first_step = c.step;
    if (first_step > config.steps)
      throw cn::ValueError("the checkpoint is at step " + std::to_string(first_step) +
                           ", past --steps " + std::to_string(config.steps));
    for (auto m : {&Results::time, &Results::field_energy, &Results::mode_energy,
                   &Results::kinetic_energy, &Results::momentum, &Results::total_charge})
      r.*m = c.history.*m;
    load_particles(*s, c);
    if (decomposed(*s)) migrate(*s);  // to their owners (another rank count, or none moves)
  } else {
    initialise(*s);
    if (decomposed(*s)) migrate(*s);        // every particle to the rank that owns its cell
    if (config.sort_every > 0) resort(*s);  // start in cell order: the grid accesses stay local
    // t = 0: fields of the initial particles, then velocities back by half a step (leapfrog).
    deposit_and_sum(*s);
    solve(*s);
    if (decomposed(*s)) fill_fields(*s);
    gather(*s);
    push(*s, -0.5, false);
  }
  r.first_step = first_step;
  r.steps_done = first_step;
  s->phase.clear();
  if (decomposed(*s)) {
    s->halo->reset_stats();
    s->halo_y->reset_stats();
    s->migration->reset_stats();
  }
  const double bytes_before = decomposed(*s) ? bytes_sent(*s) : 0.0;

  const int report_every = std::max(1, config.steps / 10);
  const auto start = std::chrono::steady_clock::now();
  auto counter = cn::count_transfers();
  for (int step = first_step; step < config.steps; ++step) {
    if (config.sort_every > 0 && step > 0 && step % config.sort_every == 0)
      phase(*s, "sort", [&] { resort(*s); });
    // Fields at t_n from x_n.
    deposit_and_sum(*s);
    phase(*s, "solve", [&] { solve(*s); });
    if (decomposed(*s)) phase(*s, "halo", [&] { fill_fields(*s); });
    phase(*s, "gather", [&] { gather(*s, s->one_pass); });
    if (snapshots && step % config.output_every == 0)  // E_n and the particles at x_n
      phase(*s, "output", [&] { staged.start(*s, step); });
    double kinetic = 0.0, p = 0.0;
    phase(*s, "push", [&] { kinetic = push(*s, 1.0, true); });
    if (decomposed(*s)) phase(*s, "migration", [&] { migrate(*s); });
    phase(*s, "diagnostics", [&] {
      p = momentum(*s);
      const double local[2] = {kinetic, p};
      double global[2];
      comm.allreduce<double>(local, std::span<double>(global), cn::Op::sum);
      r.time.push_back(step * config.dt);
      r.field_energy.push_back(field_energy(*s));
      r.mode_energy.push_back(mode_energy(*s));
      r.kinetic_energy.push_back(global[0]);
      r.momentum.push_back(global[1]);
      r.total_charge.push_back(total_charge(*s));
    });
    r.steps_done = step + 1;
    if (staged.pending)  // the copies started after the gather, written now
      phase(*s, "output", [&] {
        const std::string file = write_staged(staged, *s, *snapshots);
        if (comm.rank() == 0) r.snapshots.push_back(file);
      });
    if (config.checkpoint_every > 0 && (step + 1) % config.checkpoint_every == 0)
      phase(*s, "output", [&] {
        const std::string file =
            write_checkpoint(config.output_folder, comm, checkpoint_of(*s, r, step + 1));
        if (comm.rank() == 0) r.checkpoints.push_back(file);
      });
    if (config.flush_every > 0 && config.on_flush && comm.rank() == 0 &&
        (step + 1) % config.flush_every == 0 && step + 1 < config.steps)
      config.on_flush(r);
    if (config.progress && comm.rank() == 0 &&
        ((step + 1) % report_every == 0 || step + 1 == config.steps)) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double rate = static_cast<double>(config.particles) * (step + 1 - first_step) / elapsed;
      std::printf("step %d/%d (%3.0f%%)  %.3g particle-steps/s  ETA %.1f s\n", step + 1,
                  config.steps, 100.0 * (step + 1) / config.steps, rate,
                  elapsed / (step + 1) * (config.steps - step - 1));
      std::fflush(stdout);
    }
  }
  counter.stop();
  r.mpi_staging_in_loop = counter.mpi_stagings();
  r.transfers_in_loop = counter.total() - r.mpi_staging_in_loop;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double particle_steps =
      static_cast<double>(config.particles) * std::max(1, config.steps - first_step);
  r.particle_steps_per_second = particle_steps / r.seconds;
  r.ns_per_particle_step = 1e9 * r.seconds / particle_steps;
  r.phase_seconds = s->phase;
  r.decomposed = decomposed(*s);
  {
    const double mine =
        decomposed(*s) ? (bytes_sent(*s) - bytes_before) / std::max(1, config.steps - first_step)
                       : bytes_sent(*s);
    r.bytes_sent_per_step = comm.allreduce(mine, cn::Op::sum) / comm.size();
    r.max_bytes_sent_per_step = comm.allreduce(mine, cn::Op::max);
    r.replicated_bytes_per_step =
        2.0 * (comm.size() - 1.0) / comm.size() * static_cast<double>(s->cells) * sizeof(double);
    r.particles_final = comm.allreduce(s->n_local, cn::Op::sum);
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);  // ru_maxrss: kilobytes on Linux
    r.peak_memory_mb = comm.allreduce(static_cast<double>(usage.ru_maxrss) / 1024.0, cn::Op::max);
    if (config.keep_ids) {
      const auto ids = cn::to_host(s->id);
      r.ids.assign(ids.host_span().begin(), ids.host_span().begin() + s->n_local);
      std::sort(r.ids.begin(), r.ids.end());
    }
  }

  const Fit fit =
      r.gamma_theory < 0.0 ? fit_damped(r.time, r.mode_energy) : fit_growing(r.time, r.mode_energy);
  r.gamma_fit = fit.gamma;
  r.omega_fit = fit.omega;
  r.fit_points = fit.points;
  r.fit_t_begin = fit.t_begin;
  r.fit_t_end = fit.t_end;
  r.complete = true;
  return r;
}

cn::Array<double> initial_density(const Config& config, const cn::Comm& comm) {
  auto s = make_state(config, comm);
  initialise(*s);
  if (decomposed(*s)) {
    // Each rank's owned nodes after the halo sum, put together into the whole grid.
    migrate(*s);
    deposit(*s);
    s->halo->sum(s->ne);
    const auto ne = cn::to_host(s->ne);
    std::vector<double> block;
    for (long long i = 0; i < s->lnx; ++i)
      for (long long j = 0; j < s->lny; ++j)
        block.push_back(ne.host_span()[(i + s->guard) * s->row + j + (s->dim == 2 ? s->guard : 0)] *
                        s->ne_scale);
    const long long mine[4] = {s->x0, s->lnx, s->y0, s->lny};
    std::vector<long long> shapes(4 * static_cast<std::size_t>(comm.size()));
    comm.allgather<long long>(std::span<const long long>(mine, 4), std::span<long long>(shapes));
    std::vector<long long> counts(comm.size()), displs(comm.size());
    for (int r = 0; r < comm.size(); ++r) {
      counts[r] = shapes[4 * r + 1] * shapes[4 * r + 3];
      displs[r] = r == 0 ? 0 : displs[r - 1] + counts[r - 1];
    }
    std::vector<double> all(static_cast<std::size_t>(s->cells));
    comm.allgatherv<double>(block, std::span<double>(all), counts, displs);
    auto out = cn::empty<double>(s->dim == 2 ? cn::Shape{s->nx, s->ny} : cn::Shape{s->nx},
                                 cn::Backend::host);
    for (int r = 0; r < comm.size(); ++r)
      for (long long i = 0; i < shapes[4 * r + 1]; ++i)
        for (long long j = 0; j < shapes[4 * r + 3]; ++j)
          out.host_span()[(shapes[4 * r] + i) * s->ny + shapes[4 * r + 2] + j] =
              all[displs[r] + i * shapes[4 * r + 3] + j];
    return out;
  }
  deposit(*s);
  cn::allreduce(comm, s->ne, cn::Op::sum);
  auto host = cn::to_host(s->ne);
  auto out = cn::empty<double>(host.shape(), cn::Backend::host);
  for (long long c = 0; c < host.size(); ++c)
    out.host_span()[c] = host.host_span()[c] * s->ne_scale;
  return out;
}

cn::Array<double> initial_particles(const Config& config, const cn::Comm& comm) {
  auto s = make_state(config, comm);
  initialise(*s);
  const int cols = 2 * config.dim;
  auto out = cn::zeros<double>({s->n_local, cols}, cn::Backend::host);
  const cn::Array<double>* columns[] = {&s->x, &s->vx, &s->y, &s->vy};
  for (int c = 0; c < cols; ++c) {
    auto h = cn::to_host(*columns[c]);
    for (long long i = 0; i < s->n_local; ++i) out(i, c) = h(i);
  }
  return out;
}

Health health_of(const Results& r) {
  Health h;
  if (r.field_energy.empty()) return h;
  auto unhealthy = [&](std::string why) {
    h.diverged = true;
    if (h.reason.empty()) h.reason = std::move(why);
  };
  // Every diagnostic finite at every step.
  const std::pair<const char*, const std::vector<double>*> series[] = {
      {"field energy", &r.field_energy},
      {"mode energy", &r.mode_energy},
      {"kinetic energy", &r.kinetic_energy},
      {"momentum", &r.momentum},
      {"total charge", &r.total_charge}};
  for (const auto& [name, values] : series)
    for (std::size_t i = 0; i < values->size(); ++i)
      if (!std::isfinite((*values)[i])) {
        const double v = (*values)[i];
        unhealthy("the " + std::string(name) + " is " +
                  (std::isnan(v) ? "NaN"
                   : v > 0       ? "+Inf"
                                 : "-Inf") +
                  " at step " + std::to_string(i));
        break;
      }
  const double e0 = r.field_energy.front() + r.kinetic_energy.front();
  if (!std::isnormal(e0) || !(e0 > 0.0)) {
    // Zero, subnormal, negative or not finite: a relative change of it measures nothing.
    std::ostringstream m;
    m << "the initial total energy is ";
    if (std::isfinite(e0))
      m << e0;
    else
      m << (std::isnan(e0) ? "NaN" : e0 > 0 ? "+Inf" : "-Inf");
    m << ", so its relative change cannot be measured";
    unhealthy(m.str());
    h.max_relative_energy_error = std::numeric_limits<double>::quiet_NaN();
    return h;
  }
  for (std::size_t i = 0; i < r.field_energy.size(); ++i) {
    const double e = r.field_energy[i] + r.kinetic_energy[i];
    const double change = std::abs(e - e0) / e0;
    // NaN-propagating: std::max would drop a NaN change.
    if (!(change <= h.max_relative_energy_error)) h.max_relative_energy_error = change;
  }
  if (!std::isfinite(h.max_relative_energy_error))
    unhealthy("the total energy stopped being a finite number");
  else if (h.max_relative_energy_error > 0.5) {
    std::ostringstream m;
    m << "the total energy changed by " << h.max_relative_energy_error << " of its initial value";
    unhealthy(m.str());
  }
  return h;
}

namespace {
namespace fs = std::filesystem;

// Text as a JSON string's contents.
std::string json_escape(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      out += ' ';
      continue;
    }
    out += ch;
  }
  return out;
}

// A JSON number, or null for NaN and infinities.
std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

// Writes `text` to `path` through a temporary file of the same folder: written, flushed to
// the disk (fsync), renamed into place.  A reader sees the old file or the new one, never a
// part; a process killed meanwhile leaves the old file and a temporary one.
void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp =
      path.parent_path() / ("." + path.filename().string() + ".tmp." + std::to_string(getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw cn::Error("pic: cannot create " + tmp.string() + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw cn::Error("pic: writing " + path.string() + " failed: " + std::strerror(e) +
                      "; the previous file (if any) is unchanged");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw cn::Error("pic: writing " + path.string() + " failed: " + std::strerror(e) +
                    "; the previous file (if any) is unchanged");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw cn::Error("pic: cannot put " + path.string() + " in place: " + std::strerror(e));
  }
}
}  // namespace

void prepare_output(const std::string& folder, bool overwrite) {
  const fs::path dir(folder);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw cn::Error("pic: --output " + folder +
                    " is a file, not a folder; give a folder to write into");
  fs::create_directories(dir, ec);
  if (ec)
    throw cn::Error("pic: cannot create the output folder " + folder + ": " + ec.message() +
                    "; check the path and its permissions");
  if (!overwrite && (fs::exists(dir / "summary.json", ec) || fs::exists(dir / "energy.csv", ec)))
    throw cn::Error("pic: " + folder +
                    " holds the outputs of an earlier run; choose another folder or pass "
                    "--overwrite");
  // A probe: the folder must take a file now, not only after the run.
  const fs::path probe = dir / (".pic-probe." + std::to_string(getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw cn::Error("pic: cannot write into " + folder + ": " + std::strerror(errno) +
                    "; check its permissions or choose another folder");
  ::close(fd);
  ::unlink(probe.c_str());
}

void write_outputs(const std::string& folder, const Config& config, const Results& r) {
  const fs::path dir(folder);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw cn::Error("pic: cannot create the output folder " + folder + ": " + ec.message());
  std::ostringstream csv;
  csv << "step,time,field_energy,mode_energy,kinetic_energy,total_energy,momentum,total_charge\n";
  csv.precision(17);
  for (std::size_t i = 0; i < r.time.size(); ++i)
    csv << i << ',' << r.time[i] << ',' << r.field_energy[i] << ',' << r.mode_energy[i] << ','
        << r.kinetic_energy[i] << ',' << r.field_energy[i] + r.kinetic_energy[i] << ','
        << r.momentum[i] << ',' << r.total_charge[i] << '\n';
  const Health health = health_of(r);
  double max_momentum = 0.0, max_charge = 0.0;
  for (std::size_t i = 0; i < r.time.size(); ++i) {
    if (!(std::abs(r.momentum[i]) <= max_momentum)) max_momentum = std::abs(r.momentum[i]);
    if (!(std::abs(r.total_charge[i]) <= max_charge)) max_charge = std::abs(r.total_charge[i]);
  }
  std::ostringstream json;
  json.precision(10);
  json << "{\n"
       << "  \"case\": \"" << config.case_name << "\",\n"
       << "  \"complete\": " << (r.complete ? "true" : "false") << ",\n"
       << "  \"steps_done\": " << r.steps_done << ",\n"
       << "  \"diverged\": " << (health.diverged ? "true" : "false") << ",\n"
       << "  \"health\": \"" << (health.diverged ? json_escape(health.reason) : "ok") << "\",\n"
       << "  \"backend\": \"" << r.backend << "\",\n"
       << "  \"ranks\": " << r.ranks << ",\n"
       << "  \"threads_per_rank\": " << r.threads_per_rank << ",\n"
       << "  \"dim\": " << config.dim << ",\n"
       << "  \"particles\": " << config.particles << ",\n"
       << "  \"cells\": "
       << (config.dim == 2 ? static_cast<long long>(config.cells_x) * config.cells_y
                           : config.cells_x)
       << ",\n"
       << "  \"steps\": " << config.steps << ",\n"
       << "  \"dt\": " << json_number(config.dt) << ",\n"
       << "  \"k\": " << json_number(config.k) << ",\n"
       << "  \"shape\": \"" << (config.order == 1 ? "cic" : "tsc") << "\",\n"
       << "  \"deposit\": \""
       << (config.deterministic                   ? "deterministic"
           : r.backend == "host" && !r.decomposed ? "private grids"
                                                  : "atomic")
       << "\",\n"
       << "  \"kernels\": \"" << config.kernels << "\",\n"
       << "  \"quiet_start\": " << (config.quiet ? "true" : "false") << ",\n"
       << "  \"gamma_fit\": " << json_number(r.gamma_fit) << ",\n"
       << "  \"omega_fit\": " << json_number(r.omega_fit) << ",\n"
       << "  \"gamma_theory\": " << json_number(r.gamma_theory) << ",\n"
       << "  \"omega_theory\": " << json_number(r.omega_theory) << ",\n"
       << "  \"fit_window\": [" << json_number(r.fit_t_begin) << ", " << json_number(r.fit_t_end)
       << "],\n"
       << "  \"fit_points\": " << r.fit_points << ",\n"
       << "  \"max_relative_energy_error\": " << json_number(health.max_relative_energy_error)
       << ",\n"
       << "  \"max_abs_momentum\": " << json_number(max_momentum) << ",\n"
       << "  \"max_abs_total_charge\": " << json_number(max_charge) << ",\n"
       << "  \"seconds\": " << json_number(r.seconds) << ",\n"
       << "  \"ns_per_particle_step\": " << json_number(r.ns_per_particle_step) << ",\n"
       << "  \"particle_steps_per_second\": " << json_number(r.particle_steps_per_second) << ",\n"
       << "  \"transfers_in_loop\": " << r.transfers_in_loop << ",\n"
       << "  \"mpi_staging_in_loop\": " << r.mpi_staging_in_loop << ",\n"
       << "  \"grid\": \"" << (r.decomposed ? "decomposed" : "replicated") << "\",\n"
       << "  \"bytes_sent_per_step_per_rank\": " << json_number(r.bytes_sent_per_step) << ",\n"
       << "  \"max_bytes_sent_per_step\": " << json_number(r.max_bytes_sent_per_step) << ",\n"
       << "  \"peak_memory_mb_per_rank\": " << json_number(r.peak_memory_mb) << ",\n"
       << "  \"replicated_allreduce_bytes_per_step\": " << json_number(r.replicated_bytes_per_step)
       << ",\n"
       << "  \"phase_seconds\": {";
  bool first = true;
  for (const auto& [name, seconds] : r.phase_seconds) {
    json << (first ? "" : ", ") << '"' << name << "\": " << json_number(seconds);
    first = false;
  }
  json << "}\n}\n";
  // energy.csv first, summary.json last: a summary in place describes the energy.csv beside it.
  write_atomically(dir / "energy.csv", csv.str());
  write_atomically(dir / "summary.json", json.str());
}

}  // namespace pic
