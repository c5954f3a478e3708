// FftPlan (fft.hpp).  Compiled as CUDA when the CUDA backend is built (cuFFT's stream).
#include <cunumpy/fft.hpp>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

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

// FFTW's functions of one precision: fftw_* for double, fftwf_* for float (X is the prefix).
#if CUNUMPY_FFTW_THREADS && defined(_OPENMP)
#if CUNUMPY_FFTW_PLANNER_NTHREADS
#define CUNUMPY_FFTW_PLANNER(X)    \
  static int planner_nthreads() {  \
    return X##_planner_nthreads(); \
  }
#else
#define CUNUMPY_FFTW_PLANNER(X)
#endif
#define CUNUMPY_FFTW_THREAD_CALLS(X)      \
  static bool init_threads() {            \
    return X##_init_threads() != 0;       \
  }                                       \
  static void plan_with_nthreads(int n) { \
    X##_plan_with_nthreads(n);            \
  }                                       \
  CUNUMPY_FFTW_PLANNER(X)
#else
#define CUNUMPY_FFTW_THREAD_CALLS(X)
#endif
template <typename R>
struct Fftw;
#define CUNUMPY_FFTW_PRECISION(R, X)                                                          \
  template <>                                                                                 \
  struct Fftw<R> {                                                                            \
    using plan = X##_plan;                                                                    \
    using complex = X##_complex;                                                              \
    static R* alloc_real(std::size_t n) { return X##_alloc_real(n); }                         \
    static complex* alloc_complex(std::size_t n) { return X##_alloc_complex(n); }             \
    static void free(void* p) { X##_free(p); }                                                \
    static plan r2c(int rank, const int* n, R* in, complex* out, unsigned flags) {            \
      return X##_plan_dft_r2c(rank, n, in, out, flags);                                       \
    }                                                                                         \
    static plan c2r(int rank, const int* n, complex* in, R* out, unsigned flags) {            \
      return X##_plan_dft_c2r(rank, n, in, out, flags);                                       \
    }                                                                                         \
    static void execute_r2c(plan p, R* in, complex* out) { X##_execute_dft_r2c(p, in, out); } \
    static void execute_c2r(plan p, complex* in, R* out) { X##_execute_dft_c2r(p, in, out); } \
    static void destroy(plan p) { X##_destroy_plan(p); }                                      \
    static int alignment_of(R* p) { return X##_alignment_of(p); }                             \
    CUNUMPY_FFTW_THREAD_CALLS(X)                                                              \
  };
CUNUMPY_FFTW_PRECISION(double, fftw)
CUNUMPY_FFTW_PRECISION(float, fftwf)
#undef CUNUMPY_FFTW_PRECISION
#undef CUNUMPY_FFTW_THREAD_CALLS
#undef CUNUMPY_FFTW_PLANNER

// The FFTW threads of a host plan of `shape` made now: omp_get_max_threads() for a large
// multi-axis shape outside a parallel region, else 1.  FFTW's threaded plans split the loops
// over independent one-axis transforms, so each output keeps the bits of the one-thread plan
// (tests/loops/test_fft.cpp checks 1, 2 and 4 threads).  Called under the planner lock.
template <typename R>
int plan_threads(const Shape& shape) {
#if CUNUMPY_FFTW_THREADS && defined(_OPENMP)
  if (shape.rank() < 2 || shape.size() < kThreadedPoints || omp_in_parallel()) return 1;
  static const bool ready = Fftw<R>::init_threads();  // once; FFTW's plans stay one-thread
  return ready ? std::max(1, omp_get_max_threads()) : 1;
#else
  (void)shape;
  return 1;
#endif
}

// The transforms of one precision R (double or float), on one backend.
class FftEngine {
 public:
  virtual ~FftEngine() = default;
  virtual void forward(const void* real, void* spectrum) = 0;
  virtual void inverse(void* spectrum, void* real) = 0;
  int threads = 1;
};

// FFTW on host memory (the host backend, and the emulated device's after its stream's work).
template <typename R>
class HostFft final : public FftEngine {
  using F = Fftw<R>;

 public:
  HostFft(const Shape& shape, const Shape& spectrum, Backend backend)
      : shape_(shape), spectrum_(spectrum), backend_(backend) {
    make_plans(false);
  }
  ~HostFft() override {
    std::lock_guard lock(planner_lock());
    for (typename F::plan p : {forward_, inverse_, forward_unaligned_, inverse_unaligned_})
      if (p) F::destroy(p);
  }
  void forward(const void* real, void* spectrum) override {
    if (backend_ == Backend::emulated) emulated_order(backend_);
    auto* out = static_cast<typename F::complex*>(spectrum);
    R* in = static_cast<R*>(const_cast<void*>(real));
    F::execute_r2c(aligned(in, out) ? forward_ : unaligned().first, in, out);
  }
  void inverse(void* spectrum, void* real) override {
    if (backend_ == Backend::emulated) emulated_order(backend_);
    auto* in = static_cast<typename F::complex*>(spectrum);
    R* out = static_cast<R*>(real);
    F::execute_c2r(aligned(out, in) ? inverse_ : unaligned().second, in, out);
  }

 private:
  static bool aligned(const void* a, const void* b) {
    return F::alignment_of(static_cast<R*>(const_cast<void*>(a))) == 0 &&
           F::alignment_of(static_cast<R*>(const_cast<void*>(b))) == 0;
  }
  std::pair<typename F::plan, typename F::plan> unaligned() {
    if (!forward_unaligned_) make_plans(true);
    return {forward_unaligned_, inverse_unaligned_};
  }
  void make_plans(bool unaligned) {
    std::lock_guard lock(planner_lock());
    // Planned on scratch arrays (FFTW_ESTIMATE does not touch them), executed on the caller's.
    R* r = F::alloc_real(static_cast<std::size_t>(shape_.size()));
    typename F::complex* c = F::alloc_complex(static_cast<std::size_t>(spectrum_.size()));
    int n[3] = {static_cast<int>(shape_[0]), shape_.rank() > 1 ? static_cast<int>(shape_[1]) : 1,
                shape_.rank() > 2 ? static_cast<int>(shape_[2]) : 1};
    const unsigned flags = FFTW_ESTIMATE | (unaligned ? FFTW_UNALIGNED : 0u);
    // The threads are chosen with the aligned plans (the constructor's); the unaligned ones,
    // made on first use, follow them.
    if (!unaligned) threads = plan_threads<R>(shape_);
#if CUNUMPY_FFTW_THREADS && defined(_OPENMP)
      // FFTW's thread count for new plans is process-wide: set for these two, then put back (to
      // FFTW's default, 1, where FFTW before 3.3.9 cannot say what it was).
#if CUNUMPY_FFTW_PLANNER_NTHREADS
    const int before = threads > 1 ? F::planner_nthreads() : 1;
#else
    const int before = 1;
#endif
    if (threads > 1) F::plan_with_nthreads(threads);
#endif
    typename F::plan f = F::r2c(shape_.rank(), n, r, c, flags);
    typename F::plan i = F::c2r(shape_.rank(), n, c, r, flags);
#if CUNUMPY_FFTW_THREADS && defined(_OPENMP)
    if (threads > 1) F::plan_with_nthreads(before);
#endif
    F::free(r);
    F::free(c);
    if (!f || !i) throw Error("FftPlan: FFTW could not plan a transform of shape " + shape_.str());
    (unaligned ? forward_unaligned_ : forward_) = f;
    (unaligned ? inverse_unaligned_ : inverse_) = i;
  }

  Shape shape_, spectrum_;
  Backend backend_;
  typename F::plan forward_ = nullptr, inverse_ = nullptr;
  typename F::plan forward_unaligned_ = nullptr, inverse_unaligned_ = nullptr;
};

#if CUNUMPY_CUDA_COMPILATION()
void check_cufft(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS)
    throw CudaError(std::string(what) + " failed with cuFFT error " + std::to_string(r), r);
}

// cuFFT on the current stream of cuda: D2Z / Z2D for double, R2C / C2R for float.
template <typename R>
class CudaFft final : public FftEngine {
  static constexpr bool is_double = std::is_same_v<R, double>;

 public:
  explicit CudaFft(const Shape& shape) {
    int n[3] = {static_cast<int>(shape[0]), shape.rank() > 1 ? static_cast<int>(shape[1]) : 1,
                shape.rank() > 2 ? static_cast<int>(shape[2]) : 1};
    check_cufft(cufftPlanMany(&forward_, shape.rank(), n, nullptr, 1, 0, nullptr, 1, 0,
                              is_double ? CUFFT_D2Z : CUFFT_R2C, 1),
                is_double ? "cufftPlanMany (D2Z)" : "cufftPlanMany (R2C)");
    check_cufft(cufftPlanMany(&inverse_, shape.rank(), n, nullptr, 1, 0, nullptr, 1, 0,
                              is_double ? CUFFT_Z2D : CUFFT_C2R, 1),
                is_double ? "cufftPlanMany (Z2D)" : "cufftPlanMany (C2R)");
  }
  ~CudaFft() override {
    cufftDestroy(forward_);
    cufftDestroy(inverse_);
  }
  void forward(const void* real, void* spectrum) override {
    on_current_stream(forward_);
    if constexpr (is_double)
      check_cufft(cufftExecD2Z(forward_, static_cast<double*>(const_cast<void*>(real)),
                               static_cast<cufftDoubleComplex*>(spectrum)),
                  "cufftExecD2Z");
    else
      check_cufft(cufftExecR2C(forward_, static_cast<float*>(const_cast<void*>(real)),
                               static_cast<cufftComplex*>(spectrum)),
                  "cufftExecR2C");
  }
  void inverse(void* spectrum, void* real) override {
    on_current_stream(inverse_);
    if constexpr (is_double)
      check_cufft(cufftExecZ2D(inverse_, static_cast<cufftDoubleComplex*>(spectrum),
                               static_cast<double*>(real)),
                  "cufftExecZ2D");
    else
      check_cufft(
          cufftExecC2R(inverse_, static_cast<cufftComplex*>(spectrum), static_cast<float*>(real)),
          "cufftExecC2R");
  }

 private:
  static void on_current_stream(cufftHandle plan) {
    check_cufft(cufftSetStream(
                    plan, static_cast<cudaStream_t>(current_stream(Backend::cuda).native_handle())),
                "cufftSetStream");
  }
  cufftHandle forward_ = 0, inverse_ = 0;
};
#endif

template <typename R>
std::unique_ptr<FftEngine> make_engine(const Shape& shape, const Shape& spectrum, Backend backend) {
  if (backend == Backend::cuda) {
#if CUNUMPY_CUDA_COMPILATION()
    return std::make_unique<CudaFft<R>>(shape);
#else
    throw BackendError("FftPlan on cuda needs cunumpy built with CUDA");
#endif
  }
  return std::make_unique<HostFft<R>>(shape, spectrum, backend);
}

}  // namespace

class FftImpl {
 public:
  FftImpl(Shape shape, Backend backend, DType real)
      : shape_(shape), backend_(backend), dtype_(real) {
    if (shape.rank() < 1 || shape.rank() > 3 || shape.size() < 1)
      throw ValueError("FftPlan: 1 to 3 axes of at least one point each, got shape " + shape.str());
    for (int a = 0; a < shape.rank(); ++a)
      if (shape[a] > 2147483647LL)
        throw ValueError("FftPlan: axis " + std::to_string(a) + " has " + std::to_string(shape[a]) +
                         " points, more than FFTW and cuFFT take");
    if (real != DType::float64 && real != DType::float32)
      throw TypeError("FftPlan: the real type must be float64 or float32, got " +
                      std::string(to_string(real)));
    long long last = shape[shape.rank() - 1] / 2 + 1;
    spectrum_ = shape.rank() == 1   ? Shape{last}
                : shape.rank() == 2 ? Shape{shape[0], last}
                                    : Shape{shape[0], shape[1], last};
    engine_ = real == DType::float64 ? make_engine<double>(shape_, spectrum_, backend)
                                     : make_engine<float>(shape_, spectrum_, backend);
  }

  // TypeError when the plan is for another precision than the call's.
  void check_type(const char* what, DType given) const {
    if (given != dtype_)
      throw TypeError(std::string("FftPlan::") + what + ": the plan is for " +
                      std::string(to_string(dtype_)) + " data, the call passes " +
                      std::string(to_string(given)) + "; make the plan with the real type " +
                      std::string(to_string(given)) +
                      " (FftPlan(shape, backend, DType::" + std::string(to_string(given)) + "))");
  }

  void forward(const void* real, void* spectrum) { engine_->forward(real, spectrum); }
  void inverse(void* spectrum, void* real) { engine_->inverse(spectrum, real); }
  int threads() const noexcept { return engine_->threads; }

  Shape shape_, spectrum_;
  Backend backend_;
  DType dtype_;

 private:
  std::unique_ptr<FftEngine> engine_;
};

}  // namespace detail

FftPlan::FftPlan(Shape shape, Backend backend, DType real)
    : impl_(std::make_unique<detail::FftImpl>(shape, backend, real)) {}
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
DType FftPlan::dtype() const noexcept {
  return impl_->dtype_;
}
int FftPlan::threads() const noexcept {
  return impl_->threads();
}

template <typename R>
void FftPlan::forward_of(const Array<R>& real, const Array<std::complex<R>>& spectrum) const {
  impl_->check_type("forward", dtype_of<R>());
  detail::check_fft_arrays("forward", impl_->shape_, impl_->spectrum_, impl_->backend_,
                           real.shape(), real.backend(), spectrum.shape(), spectrum.backend());
  impl_->forward(real.data(), spectrum.data());
}
template <typename R>
void FftPlan::inverse_of(const Array<std::complex<R>>& spectrum, const Array<R>& real) const {
  impl_->check_type("inverse", dtype_of<R>());
  detail::check_fft_arrays("inverse", impl_->shape_, impl_->spectrum_, impl_->backend_,
                           real.shape(), real.backend(), spectrum.shape(), spectrum.backend());
  impl_->inverse(spectrum.data(), real.data());
}
template <typename R>
void FftPlan::forward_raw(const R* real, std::complex<R>* spectrum) const {
  impl_->check_type("forward", dtype_of<R>());
  impl_->forward(real, spectrum);
}
template <typename R>
void FftPlan::inverse_raw(std::complex<R>* spectrum, R* real) const {
  impl_->check_type("inverse", dtype_of<R>());
  impl_->inverse(spectrum, real);
}
#define CUNUMPY_FFT_PRECISION(R)                                                              \
  template void FftPlan::forward_of<R>(const Array<R>&, const Array<std::complex<R>>&) const; \
  template void FftPlan::inverse_of<R>(const Array<std::complex<R>>&, const Array<R>&) const; \
  template void FftPlan::forward_raw<R>(const R*, std::complex<R>*) const;                    \
  template void FftPlan::inverse_raw<R>(std::complex<R>*, R*) const;
CUNUMPY_FFT_PRECISION(double)
CUNUMPY_FFT_PRECISION(float)
#undef CUNUMPY_FFT_PRECISION

}  // namespace cunumpy
