// FftPlan (fft.hpp).  Compiled as CUDA when the CUDA backend is built (cuFFT's stream).
#include <cunumpy/fft.hpp>

#include <algorithm>
#include <mutex>
#include <string>

#include <fftw3.h>
#if CUNUMPY_FFTW_THREADS && defined(_OPENMP)
#include <omp.h>
#endif

#include <cunumpy/errors.hpp>
#include <cunumpy/stream.hpp>

#if CUNUMPY_CUDA_COMPILATION()
#include <cufft.h>
#endif

namespace cunumpy {

namespace detail {

namespace {
std::mutex& planner_lock() {
  static std::mutex m;
  return m;
}

// Host plans of at least this many points along two or three axes run on the OpenMP threads
// (FFTW's threads, when cunumpy is linked with libfftw3_omp): below it, or along one axis, the
// threads cost more than they save.
constexpr long long kThreadedPoints = 1LL << 15;

// The FFTW threads of a host plan of `shape` made now: omp_get_max_threads() for a large
// multi-axis shape outside a parallel region, else 1.  FFTW's threaded plans split the loops
// over independent one-axis transforms, so each output keeps the bits of the one-thread plan
// (tests/loops/test_fft.cpp checks 1, 2 and 4 threads).  Called under the planner lock.
int plan_threads(const Shape& shape) {
#if CUNUMPY_FFTW_THREADS && defined(_OPENMP)
  if (shape.rank() < 2 || shape.size() < kThreadedPoints || omp_in_parallel()) return 1;
  static const bool ready = fftw_init_threads() != 0;  // once; FFTW's plans stay one-thread
  return ready ? std::max(1, omp_get_max_threads()) : 1;
#else
  (void)shape;
  return 1;
#endif
}

void check_fft_arrays(const char* what, const Shape& want_real, const Shape& want_spectrum,
                      Backend backend, const Shape& real, Backend real_backend,
                      const Shape& spectrum, Backend spectrum_backend) {
  if (!(real == want_real) || !(spectrum == want_spectrum))
    throw ValueError(std::string("FftPlan::") + what + ": the plan is for a real array of shape " +
                     want_real.str() + " and a spectrum of shape " + want_spectrum.str() +
                     ", got " + real.str() + " and " + spectrum.str() +
                     "; make a plan for that shape");
  if (real_backend != backend || spectrum_backend != backend)
    throw ValueError(
        std::string("FftPlan::") + what + ": the plan runs on " + std::string(to_string(backend)) +
        ", the arrays are on " + std::string(to_string(real_backend)) + " and " +
        std::string(to_string(spectrum_backend)) + "; make the plan on the arrays' backend");
}
}  // namespace

class FftImpl {
 public:
  FftImpl(Shape shape, Backend backend) : shape_(shape), backend_(backend) {
    if (shape.rank() < 1 || shape.rank() > 3 || shape.size() < 1)
      throw ValueError("FftPlan: 1 to 3 axes of at least one point each, got shape " + shape.str());
    for (int a = 0; a < shape.rank(); ++a)
      if (shape[a] > 2147483647LL)
        throw ValueError("FftPlan: axis " + std::to_string(a) + " has " + std::to_string(shape[a]) +
                         " points, more than FFTW and cuFFT take");
    long long last = shape[shape.rank() - 1] / 2 + 1;
    spectrum_ = shape.rank() == 1   ? Shape{last}
                : shape.rank() == 2 ? Shape{shape[0], last}
                                    : Shape{shape[0], shape[1], last};
    if (backend == Backend::cuda) {
#if CUNUMPY_CUDA_COMPILATION()
      int n[3] = {static_cast<int>(shape[0]), shape.rank() > 1 ? static_cast<int>(shape[1]) : 1,
                  shape.rank() > 2 ? static_cast<int>(shape[2]) : 1};
      check(cufftPlanMany(&forward_cuda_, shape.rank(), n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_D2Z,
                          1),
            "cufftPlanMany (D2Z)");
      check(cufftPlanMany(&inverse_cuda_, shape.rank(), n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_Z2D,
                          1),
            "cufftPlanMany (Z2D)");
      return;
#else
      throw BackendError("FftPlan on cuda needs cunumpy built with CUDA");
#endif
    }
    make_host_plans(false);
  }
  ~FftImpl() {
    std::lock_guard lock(planner_lock());
    for (fftw_plan p : {forward_, inverse_, forward_unaligned_, inverse_unaligned_})
      if (p) fftw_destroy_plan(p);
#if CUNUMPY_CUDA_COMPILATION()
    if (backend_ == Backend::cuda) {
      cufftDestroy(forward_cuda_);
      cufftDestroy(inverse_cuda_);
    }
#endif
  }

  void forward(const double* real, std::complex<double>* spectrum) {
#if CUNUMPY_CUDA_COMPILATION()
    if (backend_ == Backend::cuda) {
      check(cufftSetStream(forward_cuda_, static_cast<cudaStream_t>(
                                              current_stream(Backend::cuda).native_handle())),
            "cufftSetStream");
      check(cufftExecD2Z(forward_cuda_, const_cast<double*>(real),
                         reinterpret_cast<cufftDoubleComplex*>(spectrum)),
            "cufftExecD2Z");
      return;
    }
#endif
    if (backend_ == Backend::emulated) emulated_order(backend_);
    auto* out = reinterpret_cast<fftw_complex*>(spectrum);
    double* in = const_cast<double*>(real);
    fftw_execute_dft_r2c(aligned(in, out) ? forward_ : unaligned().first, in, out);
  }

  void inverse(std::complex<double>* spectrum, double* real) {
#if CUNUMPY_CUDA_COMPILATION()
    if (backend_ == Backend::cuda) {
      check(cufftSetStream(inverse_cuda_, static_cast<cudaStream_t>(
                                              current_stream(Backend::cuda).native_handle())),
            "cufftSetStream");
      check(cufftExecZ2D(inverse_cuda_, reinterpret_cast<cufftDoubleComplex*>(spectrum), real),
            "cufftExecZ2D");
      return;
    }
#endif
    if (backend_ == Backend::emulated) emulated_order(backend_);
    auto* in = reinterpret_cast<fftw_complex*>(spectrum);
    fftw_execute_dft_c2r(aligned(real, in) ? inverse_ : unaligned().second, in, real);
  }

  Shape shape_, spectrum_;
  Backend backend_;
  int threads_ = 1;

 private:
  bool aligned(const void* a, const void* b) const {
    return fftw_alignment_of(static_cast<double*>(const_cast<void*>(a))) == 0 &&
           fftw_alignment_of(static_cast<double*>(const_cast<void*>(b))) == 0;
  }
  std::pair<fftw_plan, fftw_plan> unaligned() {
    if (!forward_unaligned_) make_host_plans(true);
    return {forward_unaligned_, inverse_unaligned_};
  }
  void make_host_plans(bool unaligned) {
    std::lock_guard lock(planner_lock());
    // Planned on scratch arrays (FFTW_ESTIMATE does not touch them), executed on the caller's.
    double* r = fftw_alloc_real(static_cast<std::size_t>(shape_.size()));
    fftw_complex* c = fftw_alloc_complex(static_cast<std::size_t>(spectrum_.size()));
    int n[3] = {static_cast<int>(shape_[0]), shape_.rank() > 1 ? static_cast<int>(shape_[1]) : 1,
                shape_.rank() > 2 ? static_cast<int>(shape_[2]) : 1};
    const unsigned flags = FFTW_ESTIMATE | (unaligned ? FFTW_UNALIGNED : 0u);
    // The threads are chosen with the aligned plans (the constructor's); the unaligned ones,
    // made on first use, follow them.
    if (!unaligned) threads_ = plan_threads(shape_);
#if CUNUMPY_FFTW_THREADS && defined(_OPENMP)
      // FFTW's thread count for new plans is process-wide: set for these two, then put back (to
      // FFTW's default, 1, where FFTW before 3.3.9 cannot say what it was).
#if CUNUMPY_FFTW_PLANNER_NTHREADS
    const int before = threads_ > 1 ? fftw_planner_nthreads() : 1;
#else
    const int before = 1;
#endif
    if (threads_ > 1) fftw_plan_with_nthreads(threads_);
#endif
    fftw_plan f = fftw_plan_dft_r2c(shape_.rank(), n, r, c, flags);
    fftw_plan i = fftw_plan_dft_c2r(shape_.rank(), n, c, r, flags);
#if CUNUMPY_FFTW_THREADS && defined(_OPENMP)
    if (threads_ > 1) fftw_plan_with_nthreads(before);
#endif
    fftw_free(r);
    fftw_free(c);
    if (!f || !i) throw Error("FftPlan: FFTW could not plan a transform of shape " + shape_.str());
    (unaligned ? forward_unaligned_ : forward_) = f;
    (unaligned ? inverse_unaligned_ : inverse_) = i;
  }
#if CUNUMPY_CUDA_COMPILATION()
  static void check(cufftResult r, const char* what) {
    if (r != CUFFT_SUCCESS)
      throw CudaError(std::string(what) + " failed with cuFFT error " + std::to_string(r), r);
  }
  cufftHandle forward_cuda_ = 0, inverse_cuda_ = 0;
#endif
  fftw_plan forward_ = nullptr, inverse_ = nullptr;
  fftw_plan forward_unaligned_ = nullptr, inverse_unaligned_ = nullptr;
};

}  // namespace detail

FftPlan::FftPlan(Shape shape, Backend backend)
    : impl_(std::make_unique<detail::FftImpl>(shape, backend)) {}
FftPlan::~FftPlan() = default;
FftPlan::FftPlan(FftPlan&&) noexcept = default;
FftPlan& FftPlan::operator=(FftPlan&&) noexcept = default;
const Shape& FftPlan::shape() const noexcept {
  return impl_->shape_;
}
Shape FftPlan::spectrum_shape() const {
  return impl_->spectrum_;
}
Backend FftPlan::backend() const noexcept {
  return impl_->backend_;
}
int FftPlan::threads() const noexcept {
  return impl_->threads_;
}

void FftPlan::forward(const Array<double>& real,
                      const Array<std::complex<double>>& spectrum) const {
  detail::check_fft_arrays("forward", impl_->shape_, impl_->spectrum_, impl_->backend_,
                           real.shape(), real.backend(), spectrum.shape(), spectrum.backend());
  impl_->forward(real.data(), spectrum.data());
}
void FftPlan::inverse(const Array<std::complex<double>>& spectrum,
                      const Array<double>& real) const {
  detail::check_fft_arrays("inverse", impl_->shape_, impl_->spectrum_, impl_->backend_,
                           real.shape(), real.backend(), spectrum.shape(), spectrum.backend());
  impl_->inverse(spectrum.data(), real.data());
}
void FftPlan::forward(const double* real, std::complex<double>* spectrum) const {
  impl_->forward(real, spectrum);
}
void FftPlan::inverse(std::complex<double>* spectrum, double* real) const {
  impl_->inverse(spectrum, real);
}

}  // namespace cunumpy
