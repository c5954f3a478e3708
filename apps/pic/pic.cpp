// The electrostatic PIC simulation (pic.hpp).  Compiled as CUDA when the CUDA backend is built,
// so that its parallel_for bodies run on the device.
#include "pic.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
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

#include "dispersion.hpp"
#include "pic_catalog.hpp"
#include "pic_kernels.hpp"

namespace pic {

namespace cn = cunumpy;

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
}

std::vector<Species> species_of(const Config& c) {
  if (c.beam_velocity > 0.0) return {{0.5, c.beam_velocity, c.vth}, {0.5, -c.beam_velocity, c.vth}};
  return {{1.0, 0.0, c.vth}};
}

// The FFTs of the Poisson solve: FFTW plans over host-addressable memory (host and the
// emulated device), cuFFT plans on cuda.  Both execute on the arrays given at each call
// (same layout and alignment as the planned ones), so one object serves E_x and E_y.
class Fft {
 public:
  Fft(int dim, int nx, int ny, double* real, double* complex_in, double* real_out,
      double* complex_out, cn::Backend b)
      : backend_(b) {
    if (b == cn::Backend::cuda) {
#if CUNUMPY_CUDA_COMPILATION()
      if (dim == 1) {
        check(cufftPlan1d(&forward_, nx, CUFFT_D2Z, 1), "cufftPlan1d");
        check(cufftPlan1d(&inverse_, nx, CUFFT_Z2D, 1), "cufftPlan1d");
      } else {
        check(cufftPlan2d(&forward_, nx, ny, CUFFT_D2Z), "cufftPlan2d");
        check(cufftPlan2d(&inverse_, nx, ny, CUFFT_Z2D), "cufftPlan2d");
      }
      return;
#else
      throw cn::BackendError("the PIC mini-app was compiled without CUDA");
#endif
    }
    auto* cin = reinterpret_cast<fftw_complex*>(complex_in);
    auto* cout = reinterpret_cast<fftw_complex*>(complex_out);
    if (dim == 1) {
      plan_forward_ = fftw_plan_dft_r2c_1d(nx, real, cin, FFTW_ESTIMATE);
      plan_inverse_ = fftw_plan_dft_c2r_1d(nx, cout, real_out, FFTW_ESTIMATE);
    } else {
      plan_forward_ = fftw_plan_dft_r2c_2d(nx, ny, real, cin, FFTW_ESTIMATE);
      plan_inverse_ = fftw_plan_dft_c2r_2d(nx, ny, cout, real_out, FFTW_ESTIMATE);
    }
  }
  ~Fft() {
    if (plan_forward_) fftw_destroy_plan(plan_forward_);
    if (plan_inverse_) fftw_destroy_plan(plan_inverse_);
#if CUNUMPY_CUDA_COMPILATION()
    if (backend_ == cn::Backend::cuda) {
      cufftDestroy(forward_);
      cufftDestroy(inverse_);
    }
#endif
  }
  Fft(const Fft&) = delete;
  Fft& operator=(const Fft&) = delete;

  void forward(double* real, double* complex) {
#if CUNUMPY_CUDA_COMPILATION()
    if (backend_ == cn::Backend::cuda) {
      check(
          cufftSetStream(forward_, static_cast<cudaStream_t>(cn::current_stream().native_handle())),
          "cufftSetStream");
      check(cufftExecD2Z(forward_, real, reinterpret_cast<cufftDoubleComplex*>(complex)),
            "cufftExecD2Z");
      return;
    }
#endif
    fftw_execute_dft_r2c(plan_forward_, real, reinterpret_cast<fftw_complex*>(complex));
  }
  void inverse(double* complex, double* real) {
#if CUNUMPY_CUDA_COMPILATION()
    if (backend_ == cn::Backend::cuda) {
      check(
          cufftSetStream(inverse_, static_cast<cudaStream_t>(cn::current_stream().native_handle())),
          "cufftSetStream");
      check(cufftExecZ2D(inverse_, reinterpret_cast<cufftDoubleComplex*>(complex), real),
            "cufftExecZ2D");
      return;
    }
#endif
    fftw_execute_dft_c2r(plan_inverse_, reinterpret_cast<fftw_complex*>(complex), real);
  }

 private:
#if CUNUMPY_CUDA_COMPILATION()
  static void check(cufftResult r, const char* what) {
    if (r != CUFFT_SUCCESS)
      throw cn::CudaError(std::string(what) + " failed with cuFFT error " + std::to_string(r), r);
  }
  cufftHandle forward_ = 0, inverse_ = 0;
#endif
  cn::Backend backend_;
  fftw_plan plan_forward_ = nullptr, plan_inverse_ = nullptr;
};

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
  cn::Array<double> ne, rho, ex, ey;    // grid (nodes)
  cn::Array<double> rho_k, ex_k, ey_k;  // Fourier space, interleaved complex
  std::unique_ptr<Fft> fft;  // plans run on any arrays of their layout: one for E_x and E_y
  std::map<std::string, double> phase;
};

void initialise(State& s);
void deposit(State& s);
void solve(State& s);
void gather(State& s);
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
  s->lx = 2.0 * M_PI / config.k;
  s->ly = config.dim == 2 ? s->lx * static_cast<double>(s->ny) / static_cast<double>(s->nx) : 1.0;
  s->dx = s->lx / static_cast<double>(s->nx);
  s->dy = config.dim == 2 ? s->ly / static_cast<double>(s->ny) : 1.0;
  s->n_global = config.particles;
  const int r = comm.rank(), p = comm.size();
  s->first_id = s->n_global * r / p;
  s->n_local = s->n_global * (r + 1) / p - s->first_id;
  s->density_per_particle = static_cast<double>(s->cells) / static_cast<double>(s->n_global);
  s->particle_mass = s->lx * s->ly / static_cast<double>(s->n_global);
  const cn::Shape grid = config.dim == 2 ? cn::Shape{s->nx, s->ny} : cn::Shape{s->nx};
  for (cn::Array<double>* a : {&s->ne, &s->rho, &s->ex, &s->ey}) *a = cn::zeros<double>(grid);
  for (cn::Array<double>* a : {&s->rho_k, &s->ex_k, &s->ey_k}) *a = cn::zeros<double>({2 * s->nk});
  s->fft = std::make_unique<Fft>(config.dim, s->nx, s->ny, s->rho.data(), s->rho_k.data(),
                                 s->ex.data(), s->ex_k.data(), s->backend);
  s->x = cn::empty<double>({s->n_local});
  s->vx = cn::empty<double>({s->n_local});
  s->ex_p = cn::empty<double>({s->n_local});
  if (config.dim == 2) {
    s->y = cn::empty<double>({s->n_local});
    s->vy = cn::empty<double>({s->n_local});
    s->ey_p = cn::empty<double>({s->n_local});
  }
  if (config.kernels == "rtc") {
    s->energy = cn::empty<double>({s->n_local});
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
  return {s.nx, s.ny, s.config.order, s.dim == 2, 1.0 / s.dx, 1.0 / s.dy};
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
  if (!s.config.deterministic && s.config.kernels == "rtc") {
    s.ne.fill(0.0);
    kernel_catalog().get<decltype(&deposit_host)>("deposit")(cn::threads(n), s.x, two ? s.y : s.x,
                                                             s.ne, nx, ny, order, two, grid.inv_dx,
                                                             grid.inv_dy, q, n);
    return;
  }
  if (!s.config.deterministic && s.backend == cn::Backend::host) {
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
  const cn::Array<double> sums = cn::segment_sum(keys, values, s.cells);
  const double* sum = sums.data();
  s.ne_scale = q / quantum;
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

void solve(State& s) {
  const long long nx = s.nx, nyh = s.dim == 2 ? s.ny / 2 + 1 : 1;
  const bool two = s.dim == 2;
  const double kx0 = 2.0 * M_PI / s.lx, ky0 = 2.0 * M_PI / s.ly,
               norm = 1.0 / static_cast<double>(s.cells);
  const double* ne = s.ne.data();
  double* rho = s.rho.data();
  const double ne_scale = s.ne_scale;
  CUNUMPY_FOR("charge", s.cells, c, rho[c] = 1.0 - ne[c] * ne_scale;);
  s.fft->forward(s.rho.data(), s.rho_k.data());
  const double* rk = s.rho_k.data();
  double* exk = s.ex_k.data();
  double* eyk = two ? s.ey_k.data() : nullptr;
  // E_k = -i k rho_k / |k|^2, with the inverse transform's 1 / cells folded in.
  CUNUMPY_FOR(
      "poisson", s.nk, m, const long long i = m / nyh, j = m % nyh;
      const double kx = kx0 * static_cast<double>(i <= nx / 2 ? i : i - nx);
      const double ky = two ? ky0 * static_cast<double>(j) : 0.0;
      const double k2 = kx * kx + ky * ky; const double f = k2 > 0.0 ? norm / k2 : 0.0;
      const double re = rk[2 * m], im = rk[2 * m + 1]; exk[2 * m] = kx * im * f;
      exk[2 * m + 1] = -kx * re * f; if (two) {
        eyk[2 * m] = ky * im * f;
        eyk[2 * m + 1] = -ky * re * f;
      });
  s.fft->inverse(s.ex_k.data(), s.ex.data());
  if (two) s.fft->inverse(s.ey_k.data(), s.ey.data());
}

void gather(State& s) {
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
  if (two) {
    auto [sk, order, x2, y2, vx2, vy2] = cn::sort_by_key(keys, s.x, s.y, s.vx, s.vy);
    s.x = x2;
    s.y = y2;
    s.vx = vx2;
    s.vy = vy2;
  } else {
    auto [sk, order, x2, vx2] = cn::sort_by_key(keys, s.x, s.vx);
    s.x = x2;
    s.vx = vx2;
  }
}

namespace {
double field_energy(State& s) {
  const double* ex = s.ex.data();
  const double* ey = s.dim == 2 ? s.ey.data() : nullptr;
  const double cell = s.dx * s.dy;
  return CUNUMPY_REDUCE("field energy", s.cells, cn::ReduceOp::sum, c,
                        const double e2 = ex[c] * ex[c] + (ey != nullptr ? ey[c] * ey[c] : 0.0);
                        return 0.5 * e2 * cell;);
}
// The field energy of mode (k, 0): |E_k|^2 / cells^2 * volume, from rho_k (E_k = -i k rho_k / k^2).
double mode_energy(State& s) {
  const long long m = s.dim == 2 ? (s.ny / 2 + 1) : 1;  // index of (i = 1, j = 0)
  const double* rk = s.rho_k.data();
  const double k = 2.0 * M_PI / s.lx;
  const double scale =
      s.lx * s.ly / (static_cast<double>(s.cells) * static_cast<double>(s.cells) * k * k);
  return cn::parallel_reduce(
      "mode energy", 1, cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long) {
        return (rk[2 * m] * rk[2 * m] + rk[2 * m + 1] * rk[2 * m + 1]) * scale;
      });
}

double total_charge(State& s) {
  const double* rho = s.rho.data();
  const double cell = s.dx * s.dy;
  return CUNUMPY_REDUCE("total charge", s.cells, cn::ReduceOp::sum, c, return rho[c] * cell;);
}

void deposit_and_sum(State& s) {
  phase(s, "deposit", [&] { deposit(s); });
  phase(s, "comm", [&] { cn::allreduce(s.comm, s.ne, cn::Op::sum); });
}
}  // namespace

Results run(const Config& config, const cn::Comm& comm) {
  auto s = make_state(config, comm);
  Results r;
  r.ranks = comm.size();
  r.backend = std::string(cn::to_string(cn::get_backend()));
  const std::complex<double> theory = solve_dispersion(config.k, species_of(config));
  r.omega_theory = theory.real();
  r.gamma_theory = theory.imag();

  initialise(*s);
  if (config.sort_every > 0) resort(*s);  // start in cell order: the grid accesses stay local
  // t = 0: fields of the initial particles, then velocities back by half a step (leapfrog).
  deposit_and_sum(*s);
  solve(*s);
  gather(*s);
  push(*s, -0.5, false);
  s->phase.clear();

  const int report_every = std::max(1, config.steps / 10);
  const auto start = std::chrono::steady_clock::now();
  auto counter = cn::count_transfers();
  for (int step = 0; step < config.steps; ++step) {
    if (config.sort_every > 0 && step > 0 && step % config.sort_every == 0)
      phase(*s, "sort", [&] { resort(*s); });
    // Fields at t_n from x_n.
    deposit_and_sum(*s);
    phase(*s, "solve", [&] { solve(*s); });
    phase(*s, "gather", [&] { gather(*s); });
    double kinetic = 0.0, p = 0.0;
    phase(*s, "push", [&] { kinetic = push(*s, 1.0, true); });
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
    if (config.flush_every > 0 && config.on_flush && comm.rank() == 0 &&
        (step + 1) % config.flush_every == 0 && step + 1 < config.steps)
      config.on_flush(r);
    if (config.progress && comm.rank() == 0 &&
        ((step + 1) % report_every == 0 || step + 1 == config.steps)) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double rate = static_cast<double>(config.particles) * (step + 1) / elapsed;
      std::printf("step %d/%d (%3.0f%%)  %.3g particle-steps/s  ETA %.1f s\n", step + 1,
                  config.steps, 100.0 * (step + 1) / config.steps, rate,
                  elapsed / (step + 1) * (config.steps - step - 1));
      std::fflush(stdout);
    }
  }
  counter.stop();
  r.transfers_in_loop = counter.total();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double particle_steps = static_cast<double>(config.particles) * config.steps;
  r.particle_steps_per_second = particle_steps / r.seconds;
  r.ns_per_particle_step = 1e9 * r.seconds / particle_steps;
  r.phase_seconds = s->phase;

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
  const double e0 = r.field_energy.front() + r.kinetic_energy.front();
  for (std::size_t i = 0; i < r.field_energy.size(); ++i) {
    const double e = r.field_energy[i] + r.kinetic_energy[i];
    const double change = std::abs(e - e0) / std::abs(e0);
    // NaN-propagating: std::max would drop a NaN change.
    if (!(change <= h.max_relative_energy_error)) h.max_relative_energy_error = change;
  }
  h.diverged = !std::isfinite(h.max_relative_energy_error) || h.max_relative_energy_error > 0.5;
  return h;
}

namespace {
namespace fs = std::filesystem;

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
       << "  \"backend\": \"" << r.backend << "\",\n"
       << "  \"ranks\": " << r.ranks << ",\n"
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
       << (config.deterministic  ? "deterministic"
           : r.backend == "host" ? "private grids"
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
