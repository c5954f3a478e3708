// The spectral field solver (solver.hpp): rho's transform, E_k = -i k rho_k / |k|^2, E_x's and
// E_y's inverse transforms, through cunumpy::DistributedFft.  Compiled as CUDA when the CUDA
// backend is built: the loops then run on the device for device arrays.
#include <cmath>
#include <complex>

#include "solver.hpp"

namespace pic {

namespace cn = cunumpy;

namespace {

// E_k = -i k rho_k / |k|^2 (times `norm`, the inverse transform's 1 / cells) for the modes
// in `rk` (interleaved complex): mode m is global (i0 + m / cols, m % cols); axis 0's index
// maps to its signed frequency, axis 1 holds the non-negative ones (2D).
void poisson(cn::Backend b, const double* rk, double* exk, double* eyk, long long modes,
             long long i0, long long cols, long long nx, double kx0, double ky0, double norm,
             bool two) {
  CUNUMPY_FOR_ON(
      cn::on(b), "poisson", modes, m, const long long i = i0 + m / cols, j = m % cols;
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
        fft_(s.comm, s.decomposition,
             cn::DistributedFftOptions{.guard = static_cast<int>(s.grid.guard)}, s.backend),
        rho_k_(cn::zeros<std::complex<double>>(fft_.spectrum().shape(), s.backend)) {}

  std::string name() const override { return "fft"; }

  void solve(const cn::Array<double>& rho, cn::Array<double>& ex, cn::Array<double>& ey) override {
    const LocalGrid& g = grid_;
    const bool two = g.two();
    const double kx0 = 2.0 * M_PI / g.lx, ky0 = 2.0 * M_PI / g.ly,
                 norm = 1.0 / static_cast<double>(g.nx * g.ny);
    // The transform of rho; this rank's modes are kept for E_y and the mode energy while the
    // plan's spectrum takes E_x's, then E_y's modes.
    fft_.forward(rho);
    const cn::Array<std::complex<double>>& k = fft_.spectrum();
    cn::copy(rho_k_, k);
    const long long modes = k.size();
    const long long cols = two ? k.shape(1) : 1;
    poisson(backend_, interleaved(rho_k_), interleaved(k), nullptr, modes, fft_.spectrum_begin(),
            cols, g.nx, kx0, ky0, norm, two);
    fft_.inverse(ex);
    if (two) {
      poisson(backend_, interleaved(rho_k_), nullptr, interleaved(k), modes, fft_.spectrum_begin(),
              cols, g.nx, kx0, ky0, norm, two);
      fft_.inverse(ey);
    }
  }

  // Mode (1, 0) lies on the rank whose modes hold row 1 of axis 0.
  double mode_power(double scale) override {
    const long long begin = fft_.spectrum_begin(), rows = rho_k_.size() == 0 ? 0 : rho_k_.shape(0);
    if (!(begin <= 1 && 1 < begin + rows)) return 0.0;
    const long long m = (1 - begin) * (grid_.two() ? rho_k_.shape(1) : 1);
    return power(backend_, interleaved(rho_k_), m, scale);
  }

  long long bytes_sent() const override { return fft_.stats().bytes_sent; }

 private:
  LocalGrid grid_;
  cn::Backend backend_;
  cn::DistributedFft fft_;
  cn::Array<std::complex<double>> rho_k_;  // this rank's modes of rho (the last solve)
};

}  // namespace

std::unique_ptr<FieldSolver> make_fft_solver(const SolverSetup& setup) {
  return std::make_unique<FftSolver>(setup);
}

}  // namespace pic
