// The distributed FFT (distributed_fft.hpp).
#include <cunumpy/distributed_fft.hpp>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include <cunumpy/errors.hpp>
#include <cunumpy/fft.hpp>
#include <cunumpy/internal/box_copy.hpp>
#include <cunumpy/memory.hpp>
#include <cunumpy/memory_block.hpp>
#include <cunumpy/mpi_buffer.hpp>
#include <cunumpy/transfer.hpp>

#if CUNUMPY_HAS_FFTW_MPI
#include <fftw3-mpi.h>
#endif

namespace cunumpy {

namespace detail {

namespace {
[[maybe_unused]] IndexRange intersect(IndexRange a, IndexRange b) {
  const long long lo = std::max(a.begin, b.begin), hi = std::min(a.end, b.end);
  return {lo, std::max(lo, hi)};
}
long long length(IndexRange r) {
  return r.end - r.begin;
}
}  // namespace

#if CUNUMPY_HAS_FFTW_MPI
// FFTW's MPI functions of one precision: fftw_mpi_* for double, fftwf_mpi_* for float (X is
// the prefix).
template <typename R>
struct FftwMpi;
#define CUNUMPY_FFTW_MPI_PRECISION(R, X)                                                         \
  template <>                                                                                    \
  struct FftwMpi<R> {                                                                            \
    using plan = X##_plan;                                                                       \
    using complex = X##_complex;                                                                 \
    static void init() { X##_mpi_init(); }                                                       \
    static ptrdiff_t local_size_1d(ptrdiff_t n, MPI_Comm c, int sign, unsigned flags,            \
                                   ptrdiff_t* ni, ptrdiff_t* is, ptrdiff_t* no, ptrdiff_t* os) { \
      return X##_mpi_local_size_1d(n, c, sign, flags, ni, is, no, os);                           \
    }                                                                                            \
    static ptrdiff_t local_size(int rank, const ptrdiff_t* n, MPI_Comm c, ptrdiff_t* n0,         \
                                ptrdiff_t* start0) {                                             \
      return X##_mpi_local_size(rank, n, c, n0, start0);                                         \
    }                                                                                            \
    static plan plan_1d(ptrdiff_t n, complex* in, complex* out, MPI_Comm c, int sign,            \
                        unsigned flags) {                                                        \
      return X##_mpi_plan_dft_1d(n, in, out, c, sign, flags);                                    \
    }                                                                                            \
    static plan plan_r2c(int rank, const ptrdiff_t* n, R* in, complex* out, MPI_Comm c,          \
                         unsigned flags) {                                                       \
      return X##_mpi_plan_dft_r2c(rank, n, in, out, c, flags);                                   \
    }                                                                                            \
    static plan plan_c2r(int rank, const ptrdiff_t* n, complex* in, R* out, MPI_Comm c,          \
                         unsigned flags) {                                                       \
      return X##_mpi_plan_dft_c2r(rank, n, in, out, c, flags);                                   \
    }                                                                                            \
    static void execute(plan p) { X##_execute(p); }                                              \
    static void destroy(plan p) { X##_destroy_plan(p); }                                         \
  };
CUNUMPY_FFTW_MPI_PRECISION(double, fftw)
CUNUMPY_FFTW_MPI_PRECISION(float, fftwf)
#undef CUNUMPY_FFTW_MPI_PRECISION
#endif

template <typename R>
class DistributedFftCore {
#if CUNUMPY_HAS_FFTW_MPI
  using M = FftwMpi<R>;
#endif

 public:
  DistributedFftCore(const Comm& comm, const CartesianDecomposition& d, DistributedFftOptions o,
                     Backend b)
      : comm_(comm), d_(d), g_(o.guard), b_(b), nd_(d.ndim()) {
    d.check_communicator(comm, "DistributedFft");
    if (g_ < 0)
      throw ValueError("DistributedFft: the guard width must be 0 or more, got " +
                       std::to_string(g_));
    for (int a = 0; a < nd_; ++a)
      if (!d.periodic(a))
        throw ValueError("DistributedFft: axis " + std::to_string(a) +
                         " is not periodic; the FFT solves periodic problems only");
    for (int a = 0; a < 3; ++a) n_[a] = a < nd_ ? d.cells()[a] : 1;
    const Shape global = shape_of(std::vector<long long>(n_.begin(), n_.begin() + nd_));
    if (comm.size() == 1) {
      local_ = std::make_unique<FftPlan>(global, b, dtype_of<R>());
      spectrum_ = Array<std::complex<R>>(local_->spectrum_shape(), b);
      if (g_ > 0) contiguous_ = Array<R>(global, b);
      return;
    }
#if CUNUMPY_HAS_FFTW_MPI
    make_distributed();
#else
    throw BackendError(
        "DistributedFft: this cunumpy was built without FFTW's MPI transforms, so it runs on one "
        "rank only (" +
        std::to_string(comm.size()) +
        " here): they were not found, or were built for another MPI than this one (Debian "
        "builds libfftw3-mpi for Open MPI only; the configure summary says which); install an "
        "FFTW-MPI for this MPI and rebuild cunumpy, or run on one rank");
#endif
  }

  ~DistributedFftCore() {
#if CUNUMPY_HAS_FFTW_MPI
    if (forward_) M::destroy(forward_);
    if (backward_) M::destroy(backward_);
#endif
  }

  Shape field_shape() const {
    std::vector<long long> dims;
    for (int a = 0; a < nd_; ++a) dims.push_back(d_.local_cells(a) + 2LL * g_);
    return shape_of(dims);
  }

  long long frequency(int axis, long long index) const {
    if (axis < 0 || axis >= nd_)
      throw ValueError("DistributedFft::frequency: axis " + std::to_string(axis) + " of " +
                       std::to_string(nd_));
    const long long n = n_[axis];
    return index <= n / 2 ? index : index - n;
  }

  void forward(const Array<R>& field, const std::source_location& where) {
    check_field(field, "forward");
    ++stats_.transforms;
    if (local_) {
      if (g_ == 0) {
        local_->forward(field, spectrum_);
        return;
      }
      pack_box(b_, field.data(), interior_box(), contiguous_.data());
      local_->forward(contiguous_, spectrum_);
      return;
    }
#if CUNUMPY_HAS_FFTW_MPI
    // My block's rows in each rank's input slab, packed on the field's side.
    const int P = comm_.size();
    const Parts& sent = block_parts_;
    const Parts& got = slab_parts_;
    const std::vector<long long>& rd = got.displs;
    ensure(send_dev_, sent.total, b_);
    ensure(recv_host_, got.total, Backend::host);
    for (int r = 0; r < P; ++r)
      if (sent.counts[r] > 0)
        pack_box(b_, field.data(), sent.boxes[r], send_dev_.data() + sent.displs[r]);
    exchange_to_host(send_dev_, sent.counts, sent.displs, recv_host_, got.counts, got.displs,
                     where);
    // Into FFTW's input slab (real rows padded in 2D/3D; complex numbers in 1D).
    const long long rows = length(in_[d_.rank()]);
    if (nd_ == 1) {
      std::complex<R>* slab = slab_.data();
      std::fill(slab, slab + rows, std::complex<R>(0.0, 0.0));
      for (int r = 0; r < P; ++r) {
        const IndexRange part = intersect(block(r, 0), in_[d_.rank()]);
        for (long long i = 0; i < length(part); ++i)
          slab[part.begin - in_[d_.rank()].begin + i] = {recv_host_.data()[rd[r] + i], 0.0};
      }
    } else {
      for (int r = 0; r < P; ++r)
        if (got.counts[r] > 0)
          unpack_box(Backend::host, slab_.data(), got.boxes[r], recv_host_.data() + rd[r]);
    }
    M::execute(forward_);
    if (b_ != Backend::host) {
      copy(spectrum_, spectrum_host_, where);
      ++stats_.staged_copies;
    }
#else
    (void)where;
#endif
  }

  void inverse(const Array<R>& field, const std::source_location& where) {
    check_field(field, "inverse");
    ++stats_.transforms;
    if (local_) {
      if (g_ == 0) {
        local_->inverse(spectrum_, field);
        return;
      }
      local_->inverse(spectrum_, contiguous_);
      unpack_box(b_, field.data(), interior_box(), contiguous_.data());
      return;
    }
#if CUNUMPY_HAS_FFTW_MPI
    if (b_ != Backend::host) {
      copy(spectrum_host_, spectrum_, where);
      ++stats_.staged_copies;
    }
    M::execute(backward_);
    // The output slab (the forward input's distribution) back to the ranks' blocks.
    const int P = comm_.size();
    const IndexRange mine = in_[d_.rank()];
    const Parts& sent = slab_parts_;
    const Parts& got = block_parts_;
    const std::vector<long long>& sd = sent.displs;
    ensure(send_host_, sent.total, Backend::host);
    ensure(recv_dev_, got.total, b_);
    if (nd_ == 1) {
      const std::complex<R>* slab = slab_.data();
      for (int r = 0; r < P; ++r) {
        const IndexRange part = intersect(block(r, 0), mine);
        for (long long i = 0; i < length(part); ++i)
          send_host_.data()[sd[r] + i] = slab[part.begin - mine.begin + i].real();
      }
    } else {
      for (int r = 0; r < P; ++r)
        if (sent.counts[r] > 0)
          pack_box(Backend::host, slab_.data(), sent.boxes[r], send_host_.data() + sd[r]);
    }
    exchange_from_host(send_host_, sent.counts, sent.displs, recv_dev_, got.counts, got.displs,
                       where);
    for (int r = 0; r < P; ++r)
      if (got.counts[r] > 0)
        unpack_box(b_, field.data(), got.boxes[r], recv_dev_.data() + got.displs[r]);
#else
    (void)where;
#endif
  }

  Comm comm_;
  CartesianDecomposition d_;
  int g_;
  Backend b_;
  int nd_;
  std::array<long long, 3> n_{1, 1, 1};
  std::unique_ptr<FftPlan> local_;
  Array<R> contiguous_;
  Array<std::complex<R>> spectrum_;
  long long spectrum_begin_ = 0;
  bool half_last_ = true;
  DistributedFftStats stats_;

 private:
  static Shape shape_of(const std::vector<long long>& d) {
    return Shape(std::span<const long long>(d));
  }

  void check_field(const Array<R>& field, const char* what) const {
    if (!(field.shape() == field_shape()))
      throw ValueError(std::string("DistributedFft::") + what + ": the field on rank " +
                       std::to_string(d_.rank()) + " must have shape " + field_shape().str() +
                       " (owned cells plus " + std::to_string(g_) +
                       " guard cells on each side), got " + field.shape().str());
    if (field.backend() != b_)
      throw ValueError(std::string("DistributedFft::") + what + ": the plan runs on " +
                       std::string(to_string(b_)) + ", the field is on " +
                       std::string(to_string(field.backend())) +
                       "; make the plan on the field's backend");
  }

  // Rank r's coordinates in the rank grid (row-major, last axis fastest).
  std::array<int, 3> coords_of(int r) const {
    std::array<int, 3> c{0, 0, 0};
    for (int a = nd_ - 1; a >= 0; --a) {
      c[a] = r % d_.dims()[a];
      r /= d_.dims()[a];
    }
    return c;
  }
  IndexRange block(int r, int axis) const {
    return d_.owned_by(axis, coords_of(r)[axis]);
  }

  // The owned cells of a field array (with guards), as a box of doubles.
  Box field_box_base() const {
    Box b;
    b.unit = sizeof(R);
    for (int a = 0; a < nd_; ++a) b.dims[4 - nd_ + a] = d_.local_cells(a) + 2LL * g_;
    return b;
  }
  Box interior_box() const {
    Box b = field_box_base();
    for (int a = 0; a < nd_; ++a) {
      b.begin[4 - nd_ + a] = g_;
      b.extent[4 - nd_ + a] = d_.local_cells(a);
    }
    return b;
  }
  // Rows `rows` (global, along axis 0) of rank r's block within its field array (r is this
  // rank: the boxes index this rank's field).
  Box block_box(int r, IndexRange rows, bool) const {
    Box b = field_box_base();
    const IndexRange own = block(r, 0);
    b.begin[4 - nd_] = rows.begin - own.begin + g_;
    b.extent[4 - nd_] = length(rows);
    for (int a = 1; a < nd_; ++a) {
      b.begin[4 - nd_ + a] = g_;
      b.extent[4 - nd_ + a] = d_.local_cells(a);
    }
    return b;
  }
  // Rows `rows` (global) of rank r's block within this rank's slab `slab` (2D/3D: padded real
  // rows of the FFTW layout).
  Box slab_box(int r, IndexRange rows, IndexRange slab) const {
    Box b;
    b.unit = sizeof(R);
    b.dims[4 - nd_] = length(slab);
    for (int a = 1; a < nd_; ++a) b.dims[4 - nd_ + a] = n_[a];
    if (nd_ > 1) b.dims[3] = 2 * (n_[nd_ - 1] / 2 + 1);
    b.begin[4 - nd_] = rows.begin - slab.begin;
    b.extent[4 - nd_] = length(rows);
    const std::array<int, 3> c = coords_of(r);
    for (int a = 1; a < nd_; ++a) {
      const IndexRange own = d_.owned_by(a, c[a]);
      b.begin[4 - nd_ + a] = own.begin;
      b.extent[4 - nd_ + a] = length(own);
    }
    return b;
  }

  static void ensure(Array<R>& a, long long n, Backend b) {
    n = std::max<long long>(n, 1);
    if (a.data() == nullptr || a.size() != n || a.backend() != b)
      a = location_of(b) == Location::host ? pinned_empty<R>(Shape{n}) : Array<R>(Shape{n}, b);
  }

  void count_sent(const std::vector<long long>& sc) {
    for (int r = 0; r < comm_.size(); ++r)
      if (r != comm_.rank()) stats_.bytes_sent += sc[r] * static_cast<long long>(sizeof(R));
  }

  void exchange_to_host(const Array<R>& send, const std::vector<long long>& sc,
                        const std::vector<long long>& sd, const Array<R>& recv,
                        const std::vector<long long>& rc, const std::vector<long long>& rd,
                        const std::source_location& where) {
    MpiBuffer<R> s(send, true, false, std::nullopt, where);
    if (s.staged()) ++stats_.staged_copies;
    comm_.alltoallv<R>(s.span(), sc, sd, recv.host_span(), rc, rd);
    count_sent(sc);
  }
  void exchange_from_host(const Array<R>& send, const std::vector<long long>& sc,
                          const std::vector<long long>& sd, const Array<R>& recv,
                          const std::vector<long long>& rc, const std::vector<long long>& rd,
                          const std::source_location& where) {
    MpiBuffer<R> r(recv, false, true, std::nullopt, where);
    comm_.alltoallv<R>(send.host_span(), sc, sd, r.span(), rc, rd);
    if (r.staged()) ++stats_.staged_copies;
    r.finish();
    count_sent(sc);
  }

#if CUNUMPY_HAS_FFTW_MPI
  void make_distributed() {
    static std::once_flag once;
    std::call_once(once, [] { M::init(); });
    MPI_Comm c = comm_.native();
    ptrdiff_t local_n0 = 0, start0 = 0, alloc = 0;
    long long spectrum_rows = 0;
    std::vector<long long> spectrum_dims;
    if (nd_ == 1) {
      ptrdiff_t ni, is, no, os;
      alloc = M::local_size_1d(n_[0], c, FFTW_FORWARD, FFTW_ESTIMATE, &ni, &is, &no, &os);
      local_n0 = ni;
      start0 = is;
      spectrum_begin_ = os;
      spectrum_rows = no;
      spectrum_dims = {static_cast<long long>(no)};
      half_last_ = false;
    } else {
      std::vector<ptrdiff_t> cdims(n_.begin(), n_.begin() + nd_);
      cdims[nd_ - 1] = n_[nd_ - 1] / 2 + 1;
      alloc = M::local_size(nd_, cdims.data(), c, &local_n0, &start0);
      spectrum_begin_ = start0;
      spectrum_rows = local_n0;
      spectrum_dims = {static_cast<long long>(local_n0)};
      for (int a = 1; a < nd_; ++a) spectrum_dims.push_back(cdims[a]);
    }
    // Every rank's input slab (the forward's input and the backward's output).
    const long long mine[2] = {static_cast<long long>(start0), static_cast<long long>(local_n0)};
    std::vector<long long> all(2 * static_cast<std::size_t>(comm_.size()));
    comm_.allgather<long long>(std::span<const long long>(mine, 2), std::span<long long>(all));
    in_.resize(comm_.size());
    for (int r = 0; r < comm_.size(); ++r) in_[r] = {all[2 * r], all[2 * r] + all[2 * r + 1]};
    // What moves between this rank's block and the slabs: the rows of the block in rank r's
    // slab (sent forward, received back) and the rows of r's block in this rank's slab.
    const IndexRange mine_in = in_[d_.rank()];
    for (int r = 0; r < comm_.size(); ++r) {
      block_parts_.add(block_box(d_.rank(), intersect(block(d_.rank(), 0), in_[r]), true));
      slab_parts_.add(slab_box(r, intersect(block(r, 0), mine_in), mine_in));
    }
    // The slab: host memory (pinned when the field is on a device).
    const long long n_alloc = std::max<long long>(alloc, 1);
    slab_ = b_ == Backend::host ? Array<std::complex<R>>(Shape{n_alloc}, Backend::host)
                                : pinned_empty<std::complex<R>>(Shape{n_alloc});
    std::fill(slab_.data(), slab_.data() + n_alloc, std::complex<R>(0.0, 0.0));
    long long spectrum_size = 1;
    for (long long v : spectrum_dims) spectrum_size *= v;
    // The spectrum is the first part of the slab (a view, never freed by itself).
    spectrum_host_ = Array<std::complex<R>>::adopt(
        borrow_block(slab_.data(),
                     static_cast<std::size_t>(std::max<long long>(spectrum_size, 1)) *
                         sizeof(std::complex<R>),
                     slab_.is_pinned() ? MemoryKind::pinned : MemoryKind::host),
        shape_of(spectrum_dims));
    spectrum_ =
        b_ == Backend::host ? spectrum_host_ : Array<std::complex<R>>(shape_of(spectrum_dims), b_);
    (void)spectrum_rows;
    auto* data = reinterpret_cast<typename M::complex*>(slab_.data());
    if (nd_ == 1) {
      forward_ = M::plan_1d(n_[0], data, data, c, FFTW_FORWARD, FFTW_ESTIMATE);
      backward_ = M::plan_1d(n_[0], data, data, c, FFTW_BACKWARD, FFTW_ESTIMATE);
    } else {
      std::vector<ptrdiff_t> rdims(n_.begin(), n_.begin() + nd_);
      forward_ = M::plan_r2c(nd_, rdims.data(), reinterpret_cast<R*>(data), data, c, FFTW_ESTIMATE);
      backward_ =
          M::plan_c2r(nd_, rdims.data(), data, reinterpret_cast<R*>(data), c, FFTW_ESTIMATE);
    }
    if (!forward_ || !backward_)
      throw Error("DistributedFft: FFTW could not plan a distributed transform of " + d_.str());
  }
  typename M::plan forward_ = nullptr, backward_ = nullptr;
#endif
  // Boxes per rank, with their element counts and offsets in a message buffer.
  struct Parts {
    std::vector<Box> boxes;
    std::vector<long long> counts, displs;
    long long total = 0;
    void add(const Box& b) {
      boxes.push_back(b);
      counts.push_back(b.units());
      displs.push_back(total);
      total += b.units();
    }
  };
  std::vector<IndexRange> in_;
  Parts block_parts_, slab_parts_;
  Array<std::complex<R>> slab_, spectrum_host_;
  Array<R> send_dev_, recv_dev_, send_host_, recv_host_;
};

// The transforms of the precision the options ask for.
class DistributedFftImpl {
 public:
  DistributedFftImpl(const Comm& comm, const CartesianDecomposition& d, DistributedFftOptions o,
                     Backend b) {
    if (o.real == DType::float64)
      twice = std::make_unique<DistributedFftCore<double>>(comm, d, o, b);
    else if (o.real == DType::float32)
      single = std::make_unique<DistributedFftCore<float>>(comm, d, o, b);
    else
      throw TypeError("DistributedFft: the real type must be float64 or float32, got " +
                      std::string(to_string(o.real)));
  }
  DType dtype() const noexcept { return twice ? DType::float64 : DType::float32; }
  // The core of precision R (TypeError naming both when the plan is of the other).
  template <typename R>
  DistributedFftCore<R>& core(const char* what) const {
    if constexpr (std::is_same_v<R, double>) {
      if (twice) return *twice;
    } else {
      if (single) return *single;
    }
    throw TypeError(std::string("DistributedFft::") + what + ": the plan is for " +
                    std::string(to_string(dtype())) + " data, the call asks for " +
                    std::string(to_string(dtype_of<R>())) +
                    "; make the plan with DistributedFftOptions{.real = DType::" +
                    std::string(to_string(dtype_of<R>())) + "}");
  }
  template <typename F>
  decltype(auto) either(F&& f) const {
    return twice ? f(*twice) : f(*single);
  }
  std::unique_ptr<DistributedFftCore<double>> twice;
  std::unique_ptr<DistributedFftCore<float>> single;
};

}  // namespace detail

DistributedFft::DistributedFft(const Comm& comm, const CartesianDecomposition& decomposition,
                               DistributedFftOptions options, Backend backend)
    : impl_(std::make_unique<detail::DistributedFftImpl>(comm, decomposition, options, backend)) {}
DistributedFft::~DistributedFft() = default;
DistributedFft::DistributedFft(DistributedFft&&) noexcept = default;
DistributedFft& DistributedFft::operator=(DistributedFft&&) noexcept = default;
Shape DistributedFft::field_shape() const {
  return impl_->either([](auto& c) { return c.field_shape(); });
}
DType DistributedFft::dtype() const noexcept {
  return impl_->dtype();
}
template <typename Real>
const Array<std::complex<Real>>& DistributedFft::spectrum_of() const {
  return impl_->core<Real>("spectrum").spectrum_;
}
long long DistributedFft::spectrum_begin() const noexcept {
  return impl_->either([](auto& c) { return c.spectrum_begin_; });
}
bool DistributedFft::half_last() const noexcept {
  return impl_->either([](auto& c) { return c.half_last_; });
}
long long DistributedFft::frequency(int axis, long long index) const {
  return impl_->either([&](auto& c) { return c.frequency(axis, index); });
}
bool DistributedFft::across_ranks() noexcept {
  return CUNUMPY_HAS_FFTW_MPI;
}
bool DistributedFft::distributed() const noexcept {
  return impl_->either([](auto& c) { return c.local_ == nullptr; });
}
template <typename Real>
void DistributedFft::forward_of(const Array<Real>& field, const std::source_location& where) {
  impl_->core<Real>("forward").forward(field, where);
}
template <typename Real>
void DistributedFft::inverse_of(const Array<Real>& field, const std::source_location& where) {
  impl_->core<Real>("inverse").inverse(field, where);
}
const DistributedFftStats& DistributedFft::stats() const noexcept {
  return impl_->either([](auto& c) -> const DistributedFftStats& { return c.stats_; });
}
#define CUNUMPY_DISTRIBUTED_FFT(R)                                                           \
  template const Array<std::complex<R>>& DistributedFft::spectrum_of<R>() const;             \
  template void DistributedFft::forward_of<R>(const Array<R>&, const std::source_location&); \
  template void DistributedFft::inverse_of<R>(const Array<R>&, const std::source_location&);
CUNUMPY_DISTRIBUTED_FFT(double)
CUNUMPY_DISTRIBUTED_FFT(float)
#undef CUNUMPY_DISTRIBUTED_FFT

}  // namespace cunumpy
