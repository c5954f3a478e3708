// cunumpy/distributed_fft.hpp: the FFT of a field decomposed over the ranks (the distributed
// Poisson solve of a PIC code).
//
//   cunumpy::CartesianDecomposition d(world, {nx, ny});
//   cunumpy::DistributedFft fft(world, d, {.guard = 2});     // fields with 2 guard cells
//   fft.forward(rho);                 // rho: this rank's cells (plus guards); -> fft.spectrum()
//   auto k = fft.spectrum();          // this rank's modes: [spectrum_begin(), ...) along axis 0
//   ... multiply in k space ...
//   fft.inverse(phi);                 // fft.spectrum() -> phi's owned cells (unnormalised)
//
// The transform is FftPlan's (NumPy's rfftn without normalisation).  On one rank it is an
// FftPlan on the field's backend (cuFFT on cuda: nothing leaves the device).  On several,
// FFTW's MPI transforms run on host memory: the field's owned cells go to FFTW's slabs (along
// axis 0) with one alltoallv, packed and unpacked by parallel loops on the field's side, and
// come back the same way; a device field's data is staged through the host (the spectrum and
// the messages: counted copies; device messages go direct when MPI is CUDA-aware).  There is
// no distributed cuFFT here (cuFFTMp is not part of the CUDA toolkit).
//
// The spectrum: in 2D and 3D this rank's rows [spectrum_begin(), + spectrum_shape()[0]) of
// axis 0, all of axis 1, and the n/2 + 1 non-negative frequencies of the last axis; in 1D a
// range of all n modes (FFTW's 1D distributed transform is complex-to-complex), so
// half_last() is false there.  frequency(axis, index) maps an index to its signed frequency.
// A rank may hold no modes (FFTW decides the slabs).  inverse() overwrites the spectrum.
//
// Single precision: DistributedFftOptions{.real = DType::float32} transforms Array<float>
// fields (FFTW's fftwf_mpi_* on several ranks, a float FftPlan on one) into
// spectrum<float>(), an Array<std::complex<float>>; the messages and staged copies are half the
// size.  A call with the other type is a TypeError that says how to make the plan.
#pragma once

#include <complex>
#include <memory>
#include <source_location>

#include <cunumpy/array.hpp>
#include <cunumpy/comm.hpp>
#include <cunumpy/decomposition.hpp>

namespace cunumpy {

// The guard cells of the fields a DistributedFft is given.
struct DistributedFftOptions {
  int guard = 0;  // guard cells on each side of the fields given (HaloExchange's layout)
  DType real = DType::float64;  // the fields' type: float64 or float32
};

// What a DistributedFft has done: transforms, bytes sent, staged copies.
struct DistributedFftStats {
  long long transforms = 0, bytes_sent = 0, staged_copies = 0;
};

namespace detail {
class DistributedFftImpl;
}

// A distributed real-to-complex FFT of a decomposed field (FFTW's MPI transforms).
class DistributedFft {
 public:
  DistributedFft(const Comm& comm, const CartesianDecomposition& decomposition,
                 DistributedFftOptions options = {}, Backend backend = get_backend());
  ~DistributedFft();
  DistributedFft(DistributedFft&&) noexcept;
  DistributedFft& operator=(DistributedFft&&) noexcept;

  // The fields' shape on this rank: owned cells plus the guards.
  Shape field_shape() const;
  // The fields' type (DistributedFftOptions::real).
  DType dtype() const noexcept;
  // This rank's part of the spectrum (on the plan's backend) and where it starts along axis 0;
  // spectrum<float>() for a single-precision plan (TypeError for the other type).
  template <typename Real = double>
  const Array<std::complex<Real>>& spectrum() const {
    return spectrum_of<Real>();
  }
  long long spectrum_begin() const noexcept;
  bool half_last() const noexcept;
  // The signed frequency of global mode `index` along `axis` (index, or index - n past n/2).
  long long frequency(int axis, long long index) const;
  // Whether the transforms are FFTW's MPI ones (several ranks) or a local FftPlan.
  bool distributed() const noexcept;
  // Whether this build transforms fields decomposed over several ranks: FFTW's MPI transforms,
  // built for this MPI, were found (Debian builds them for Open MPI only: not with MPICH).
  // Without them a DistributedFft on more than one rank is a BackendError that says so.
  static bool across_ranks() noexcept;

  void forward(const Array<double>& field,
               std::source_location where = std::source_location::current()) {
    forward_of(field, where);
  }
  void inverse(const Array<double>& field,
               std::source_location where = std::source_location::current()) {
    inverse_of(field, where);
  }
  void forward(const Array<float>& field,
               std::source_location where = std::source_location::current()) {
    forward_of(field, where);
  }
  void inverse(const Array<float>& field,
               std::source_location where = std::source_location::current()) {
    inverse_of(field, where);
  }

  const DistributedFftStats& stats() const noexcept;

 private:
  template <typename Real>
  const Array<std::complex<Real>>& spectrum_of() const;
  template <typename Real>
  void forward_of(const Array<Real>& field, const std::source_location& where);
  template <typename Real>
  void inverse_of(const Array<Real>& field, const std::source_location& where);
  std::unique_ptr<detail::DistributedFftImpl> impl_;
};

}  // namespace cunumpy
