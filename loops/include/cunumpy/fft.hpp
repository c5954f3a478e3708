// cunumpy/fft.hpp: real <-> complex FFTs of arrays on any backend, one plan interface: FFTW on
// host memory (the host and emulated backends), cuFFT on cuda.
//
//   cunumpy::FftPlan fft({nx, ny});                         // on the active backend
//   auto rho_k = cunumpy::empty<std::complex<double>>(fft.spectrum_shape());  // (nx, ny/2+1)
//   fft.forward(rho, rho_k);                                // unnormalised, as numpy.fft.rfftn
//   fft.inverse(rho_k, rho);                                // times nx * ny: divide yourself
//
// The transforms are NumPy's rfftn / irfftn without normalisation: forward is
// sum_x f(x) e^{-2 pi i k.x / n}, inverse the sum with e^{+...}, so inverse(forward(f)) is
// f * size.  The spectrum holds the last axis's non-negative frequencies (n/2 + 1 of them).
// inverse may overwrite its input spectrum (FFTW's and cuFFT's complex-to-real transforms do).
// A plan is for one shape and backend and runs on any arrays of them, on the current stream
// on cuda (the work is queued: no synchronisation).  The host plans are made with
// FFTW_ESTIMATE under a lock (FFTW's planner is not thread-safe); arrays that are not
// SIMD-aligned get a plan of their own.  A host plan of 2^15 points or more along two or three
// axes, made outside a parallel region, runs on omp_get_max_threads() threads (FFTW's OpenMP
// threads, when cunumpy was built with libfftw3_omp; threads() says how many): the same bits
// as on one thread, each one-axis transform computed whole by one thread.
//
// A plan is for one real type, double (the default) or float: FftPlan(shape, backend,
// DType::float32) transforms Array<float> into Array<std::complex<float>> with FFTW's fftwf_*
// plans or cuFFT's R2C / C2R (a float code keeps its fields on the device); a call with the
// other type is a TypeError that says how to make the plan.
#pragma once

#include <complex>
#include <memory>
#include <source_location>

#include <cunumpy/array.hpp>

namespace cunumpy {

namespace detail {
class FftImpl;
}

// A forward and inverse real-to-complex FFT of one shape: FFTW on host memory, cuFFT on cuda.
class FftPlan {
 public:
  // `shape`: 1 to 3 axes of at least one point each; `real`: DType::float64 or float32.
  explicit FftPlan(Shape shape, Backend backend = get_backend(), DType real = DType::float64);
  ~FftPlan();
  FftPlan(FftPlan&&) noexcept;
  FftPlan& operator=(FftPlan&&) noexcept;

  const Shape& shape() const noexcept;
  // The shape of the spectrum: the last axis n/2 + 1.
  Shape spectrum_shape() const;
  Backend backend() const noexcept;
  // The real type the plan transforms (float64 or float32).
  DType dtype() const noexcept;
  // The threads a host plan runs on (1 on cuda, for small or one-axis shapes, or without
  // FFTW's OpenMP threads).
  int threads() const noexcept;

  void forward(const Array<double>& real, const Array<std::complex<double>>& spectrum) const {
    forward_of(real, spectrum);
  }
  void inverse(const Array<std::complex<double>>& spectrum, const Array<double>& real) const {
    inverse_of(spectrum, real);
  }
  void forward(const Array<float>& real, const Array<std::complex<float>>& spectrum) const {
    forward_of(real, spectrum);
  }
  void inverse(const Array<std::complex<float>>& spectrum, const Array<float>& real) const {
    inverse_of(spectrum, real);
  }

  // The same on raw memory of the plan's backend (the arrays' layouts: C order, contiguous).
  void forward(const double* real, std::complex<double>* spectrum) const {
    forward_raw(real, spectrum);
  }
  void inverse(std::complex<double>* spectrum, double* real) const { inverse_raw(spectrum, real); }
  void forward(const float* real, std::complex<float>* spectrum) const {
    forward_raw(real, spectrum);
  }
  void inverse(std::complex<float>* spectrum, float* real) const { inverse_raw(spectrum, real); }

 private:
  template <typename R>
  void forward_of(const Array<R>& real, const Array<std::complex<R>>& spectrum) const;
  template <typename R>
  void inverse_of(const Array<std::complex<R>>& spectrum, const Array<R>& real) const;
  template <typename R>
  void forward_raw(const R* real, std::complex<R>* spectrum) const;
  template <typename R>
  void inverse_raw(std::complex<R>* spectrum, R* real) const;
  std::unique_ptr<detail::FftImpl> impl_;
};

}  // namespace cunumpy
