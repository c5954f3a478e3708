// The spectral field solver (solver.hpp): rho's transform, E_k = -i k rho_k / |k|^2, each
// component's inverse transform, through cunumpy::DistributedFft.  Compiled as CUDA when the CUDA
// backend is built: the loops then run on the device for device arrays.
#include <array>
#include <cmath>
#include <complex>

#include "solver.hpp"

namespace pic {

namespace cn = cunumpy;

namespace {

// E_k = -i k rho_k / |k|^2 (times `norm`, the inverse transform's 1 / cells) for the modes in
// `rk` (interleaved complex), every component in one pass (the mode's wave vector once, and
// norm / |k|^2 from a table the solver fills once: no division per mode and solve): axis a's
// into out[a].  Mode m is global (i0 + m / (c1 c2), (m / c2) % c1, m % c2) with
// c1, c2 the spectrum's extents along axes 1 and 2 (1 past the dimension); the last axis holds
// the non-negative frequencies, the others map an index to its signed frequency.
struct Modes {
  long long count, i0, c1, c2, nx, ny;
  double k0[3];  // 2 pi / L per axis
  double norm;
  int dim;
  double inv_plane, inv_c2;  // 1 / (c1 c2), 1 / c2
};

// Mode m's wave vector.
struct WaveVector {
  double kx, ky, kz;
};
// For a dimension known at compile time (the Poisson loop, every solve, has one loop per
// dimension): in 2D the spectrum's axis 1 is its last (c2 = 1), in 1D every mode is on axis 0.
template <int Dim>
CUNUMPY_HD_INLINE WaveVector wave_vector_of(const Modes& md, long long m) {
  if constexpr (Dim == 1) {
    const long long i = md.i0 + m;
    return {md.k0[0] * static_cast<double>(i <= md.nx / 2 ? i : i - md.nx), 0.0, 0.0};
  } else if constexpr (Dim == 2) {
    const long long ip = kernels::quotient(m, md.c1, md.inv_plane), j = m - ip * md.c1,
                    i = md.i0 + ip;
    return {md.k0[0] * static_cast<double>(i <= md.nx / 2 ? i : i - md.nx),
            md.k0[1] * static_cast<double>(j), 0.0};
  } else {
    const long long plane = md.c1 * md.c2;
    const long long ip = kernels::quotient(m, plane, md.inv_plane), r = m - ip * plane;
    const long long j = kernels::quotient(r, md.c2, md.inv_c2), l = r - j * md.c2, i = md.i0 + ip;
    return {md.k0[0] * static_cast<double>(i <= md.nx / 2 ? i : i - md.nx),
            md.k0[1] * static_cast<double>(j <= md.ny / 2 ? j : j - md.ny),
            md.k0[2] * static_cast<double>(l)};
  }
}
CUNUMPY_HD_INLINE WaveVector wave_vector(const Modes& md, long long m) {
  return md.dim == 3   ? wave_vector_of<3>(md, m)
         : md.dim == 2 ? wave_vector_of<2>(md, m)
                       : wave_vector_of<1>(md, m);
}

// norm / |k|^2 of every mode (0 for k = 0): the grid's, computed once.
void mode_factors(cn::Backend b, double* f, const Modes& md) {
  CUNUMPY_FOR_ON(cn::on(b), "mode factors", md.count, m, const WaveVector k = wave_vector(md, m);
                 const double k2 = k.kx * k.kx + k.ky * k.ky + k.kz * k.kz;
                 f[m] = k2 > 0.0 ? md.norm / k2 : 0.0;);
}

// Mode m of E_k from its wave vector k, the components past the dimension not written (rk may
// be out0: the mode is read before it is written).
template <int Dim>
CUNUMPY_HD_INLINE void poisson_mode(const WaveVector& k, long long m, const double* factors,
                                    const double* rk, double* out0, double* out1, double* out2) {
  const double kx = k.kx, ky = k.ky, kz = k.kz, f = factors[m];
  const double re = rk[2 * m], im = rk[2 * m + 1];
  out0[2 * m] = kx * im * f;
  out0[2 * m + 1] = -kx * re * f;
  if constexpr (Dim >= 2) {
    out1[2 * m] = ky * im * f;
    out1[2 * m + 1] = -ky * re * f;
  }
  if constexpr (Dim == 3) {
    out2[2 * m] = kz * im * f;
    out2[2 * m + 1] = -kz * re * f;
  }
}

// On the host, in 2D and 3D: a line of the last axis (`length` modes from `line` * length)
// at a time, its other wave-vector components once (the modes' own, wave_vector_of's: the
// same bits as mode by mode) and the last one from the index along it.
template <int Dim>
void poisson_lines(cn::Backend b, const double* factors, const double* rk, double* out0,
                   double* out1, double* out2, const Modes& md) {
  const long long length = Dim == 3 ? md.c2 : md.c1;
  const double k_last = md.k0[Dim - 1];
  CUNUMPY_FOR_ON(
      cn::on(b), "poisson", md.count / length, line, const long long m0 = line * length;
      WaveVector k = wave_vector_of<Dim>(md, m0); for (long long t = 0; t < length; ++t) {
        (Dim == 3 ? k.kz : k.ky) = k_last * static_cast<double>(t);
        poisson_mode<Dim>(k, m0 + t, factors, rk, out0, out1, out2);
      });
}

// One loop per dimension (no test of it per mode); mode by mode on a device.
void poisson(cn::Backend b, const double* factors, const double* rk, double* out0, double* out1,
             double* out2, const Modes& md) {
  if (b == cn::Backend::host && md.dim >= 2) {
    if (md.dim == 3)
      poisson_lines<3>(b, factors, rk, out0, out1, out2, md);
    else
      poisson_lines<2>(b, factors, rk, out0, out1, out2, md);
  } else if (md.dim == 3)
    CUNUMPY_FOR_ON(cn::on(b), "poisson", md.count, m,
                   poisson_mode<3>(wave_vector_of<3>(md, m), m, factors, rk, out0, out1, out2););
  else if (md.dim == 2)
    CUNUMPY_FOR_ON(cn::on(b), "poisson", md.count, m,
                   poisson_mode<2>(wave_vector_of<2>(md, m), m, factors, rk, out0, out1, out2););
  else
    CUNUMPY_FOR_ON(cn::on(b), "poisson", md.count, m,
                   poisson_mode<1>(wave_vector_of<1>(md, m), m, factors, rk, out0, out1, out2););
}

// |rho_k[m]|^2 * scale, read back like a reduction's result.
double power(cn::Backend b, const double* rk, long long m, double scale) {
  return CUNUMPY_REDUCE_ON(cn::on(b), "mode energy", 1, cn::ReduceOp::sum, unused, (void)unused;
                           return (rk[2 * m] * rk[2 * m] + rk[2 * m + 1] * rk[2 * m + 1]) * scale;);
}

double* interleaved(const cn::Array<std::complex<double>>& a) {
  return reinterpret_cast<double*>(a.data());
}

class FftSolver final : public FieldSolver {
 public:
  explicit FftSolver(const SolverSetup& s)
      : grid_(s.grid),
        backend_(s.backend),
        mode_(s.mode),
        fft_(s.comm, s.decomposition,
             cn::DistributedFftOptions{.guard = static_cast<int>(s.grid.guard)}, s.backend),
        mode_at_(mode_index(fft_.spectrum())) {
    if (mode_at_ >= 0) mode_k_ = cn::zeros<std::complex<double>>({1}, backend_);
  }

  std::string name() const override { return "fft"; }

  void solve(const cn::Array<double>& rho, cn::Array<double>& ex, cn::Array<double>& ey,
             cn::Array<double>& ez) override {
    const LocalGrid& g = grid_;
    // The transform of rho in the plan's spectrum, the perturbed mode copied from it (for
    // mode_power, on the device without a wait) before E_x's modes replace rho's there (E_y's
    // and E_z's beside it until their turn).
    fft_.forward(rho);
    const cn::Array<std::complex<double>>& k = fft_.spectrum();
    if (mode_at_ >= 0) {
      const double* from = interleaved(k) + 2 * mode_at_;
      double* to = interleaved(mode_k_);
      CUNUMPY_FOR_ON(cn::on(backend_), "perturbed mode", 2, part, to[part] = from[part];);
    }
    const long long c1 = g.dim >= 2 ? k.shape(1) : 1, c2 = g.dim == 3 ? k.shape(2) : 1;
    const Modes md{k.size(),
                   fft_.spectrum_begin(),
                   c1,
                   c2,
                   g.nx,
                   g.ny,
                   {2.0 * M_PI / g.lx, 2.0 * M_PI / g.ly, 2.0 * M_PI / g.lz},
                   1.0 / static_cast<double>(g.nx * g.ny * g.nz),
                   g.dim,
                   1.0 / static_cast<double>(c1 * c2),
                   1.0 / static_cast<double>(c2)};
    // E_x's modes into the plan's spectrum, E_y's and E_z's beside it until their turn.
    for (int axis = 1; axis < g.dim; ++axis)
      if (e_k_[axis].size() != k.size())
        e_k_[axis] = cn::Array<std::complex<double>>(k.shape(), backend_);
    if (factors_.size() != k.size()) {
      factors_ = cn::Array<double>(k.shape(), backend_);
      mode_factors(backend_, factors_.data(), md);
    }
    poisson(backend_, factors_.data(), interleaved(k), interleaved(k),
            g.dim >= 2 ? interleaved(e_k_[1]) : nullptr,
            g.dim == 3 ? interleaved(e_k_[2]) : nullptr, md);
    cn::Array<double>* e[] = {&ex, &ey, &ez};
    for (int axis = 0; axis < g.dim; ++axis) {
      if (axis > 0) cn::copy(k, e_k_[axis]);
      fft_.inverse(*e[axis]);
    }
  }

  double mode_power(double scale) override {
    return mode_at_ < 0 ? 0.0 : power(backend_, interleaved(mode_k_), 0, scale);
  }

  long long bytes_sent() const override { return fft_.stats().bytes_sent; }

 private:
  // The perturbed mode (1, m_y, m_z) in this rank's modes `k`, or -1: it lies on the rank
  // whose modes hold row 1 of axis 0; m_y and m_z are 0 or 1, non-negative frequencies at
  // those indices on every axis.
  long long mode_index(const cn::Array<std::complex<double>>& k) const {
    const long long begin = fft_.spectrum_begin(), rows = k.size() == 0 ? 0 : k.shape(0);
    if (!(begin <= 1 && 1 < begin + rows)) return -1;
    long long m = 1 - begin;
    for (int axis = 1; axis < grid_.dim; ++axis) m = m * k.shape(axis) + mode_[axis];
    return m;
  }

  LocalGrid grid_;
  cn::Backend backend_;
  std::array<int, 3> mode_;
  cn::DistributedFft fft_;
  long long mode_at_;                       // mode_index of the plan's spectrum (fixed)
  cn::Array<std::complex<double>> mode_k_;  // rho's perturbed mode (the last solve), if here
  cn::Array<std::complex<double>> e_k_[3];  // E_y's and E_z's modes while E_x's are transformed
  cn::Array<double> factors_;               // per mode, 1 / (cells |k|^2) (mode_factors)
};

}  // namespace

std::unique_ptr<FieldSolver> make_fft_solver(const SolverSetup& setup) {
  return std::make_unique<FftSolver>(setup);
}

}  // namespace pic
