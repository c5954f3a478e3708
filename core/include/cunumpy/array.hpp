// cunumpy/array.hpp: Array<T>, an owning, C-contiguous array of rank 1 to 4 on the host or
// on a device, and the functions that create and inspect arrays.
//
//   auto rho = cunumpy::zeros<double>({nx, ny});          // on the active backend
//   auto x = cunumpy::linspace<double>(0.0, 1.0, 101, cunumpy::Backend::host);
//   cunumpy::Array2D<double> v = rho.view<2>();          // what kernels take
//
// Copies of an Array share its memory (like a NumPy array passed around, or a Kokkos
// View); the memory is freed when the last copy goes.  An array never moves between host
// and device by itself: see <cunumpy/transfer.hpp>.  Device arrays (cuda or emulated) refuse
// host element access with BackendError, whatever the backend.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <type_traits>

#include <cunumpy/array_view.cuh>
#include <cunumpy/backend.hpp>
#include <cunumpy/dtype.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/fill_values.cuh>
#include <cunumpy/ledger.hpp>
#include <cunumpy/memory_block.hpp>
#include <cunumpy/shape.hpp>
#include <cunumpy/stream.hpp>

namespace cunumpy {

// Where an array's memory is: host memory, or device memory (cuda or emulated).
enum class Location { host, device };
std::string_view to_string(Location location) noexcept;

// Where memory of a backend lives.
constexpr Location location_of(Backend backend) noexcept {
  return backend == Backend::host ? Location::host : Location::device;
}

namespace detail {
// The device backend that to_device and device creation use: the active backend when it is
// cuda or emulated, else cuda when a device is available; otherwise BackendError naming
// `what`, the reason and the fix.
Backend device_target(const char* what);
// "what(shape=(3,), dtype=float64)"
std::string describe_array(std::string_view what, const Shape& shape, std::string_view dtype);
[[noreturn]] void throw_host_access(std::string_view what, Backend backend, const Shape& shape,
                                    std::string_view dtype);
[[noreturn]] void throw_rank_mismatch(std::string_view what, int expected, const Shape& shape);
[[noreturn]] void throw_index(const Shape& shape, int axis, long long index);
[[noreturn]] void throw_too_many_bytes(const Shape& shape, std::size_t element_size);
[[noreturn]] void throw_leading(const Shape& shape, long long rows);
}  // namespace detail

// An n-dimensional array (rank 1 to 4, C order) of element type T on one backend; copies share
// the memory (as NumPy and CuPy arrays share it through views).
template <Element T>
class Array {
 public:
  using value_type = T;

  // An empty array (rank 0, no memory): what a default-constructed member holds until assigned.
  Array() = default;

  // Uninitialised memory of `shape` on `backend`: host memory (host), the device (cuda,
  // cudaMalloc through the pool) or the emulated device's arena (emulated).  No transfer.
  Array(Shape shape, Backend backend)
      : memory_(allocate_block(memory_kind_of(backend), bytes_for(shape))), shape_(shape) {}

  // An array over an existing block (e.g. pinned staging memory, or a buffer of another
  // library wrapped with borrow_block); the block must hold the shape.
  static Array adopt(std::shared_ptr<MemoryBlock> memory, Shape shape) {
    if (memory == nullptr || memory->bytes() < bytes_for(shape))
      throw ValueError("Array::adopt: the allocation is smaller than shape " + shape.str() +
                       " needs");
    Array a;
    a.memory_ = std::move(memory);
    a.shape_ = shape;
    return a;
  }
  // Whether the memory is page-locked host memory from the pinned pool.
  bool is_pinned() const noexcept { return memory_ != nullptr && memory_->pinned(); }
  // The block that holds the elements (shared by the copies of this array).
  const std::shared_ptr<MemoryBlock>& memory() const noexcept { return memory_; }

  // The shape, the extent of one axis (ValueError past the rank), the rank, the element count,
  // the bytes and whether it has no elements: metadata kept on the host, the same on every
  // backend (no device access, no synchronisation).
  const Shape& shape() const noexcept { return shape_; }
  long long shape(int axis) const { return shape_.at(axis); }
  int ndim() const noexcept { return shape_.rank(); }
  long long size() const noexcept { return shape_.size(); }
  std::size_t nbytes() const noexcept { return static_cast<std::size_t>(size()) * sizeof(T); }
  bool empty() const noexcept { return size() == 0; }

  // Where the memory lives: host, cuda or emulated (device arena); location() says host or
  // device (cuda and emulated are both device), is_host() / is_device() the same as a test.
  // Pinned host memory is host.
  Backend backend() const noexcept { return memory_ ? memory_->backend() : Backend::host; }
  Location location() const noexcept { return location_of(backend()); }
  bool is_host() const noexcept { return location() == Location::host; }
  bool is_device() const noexcept { return location() == Location::device; }

  // The raw pointer to the first element, on whichever side the memory is: host: a host
  // pointer (for a legacy routine, a library, MPI); cuda: a device pointer (for a kernel, cuBLAS,
  // CUDA-aware MPI; never dereference it on the host); emulated: a pointer into the emulated
  // device's arena, which host code can read but must not (a kernel's data: go through to_host
  // so that the code stays right on a GPU).  Nothing is copied or synchronised: order device
  // work yourself (a stream's synchronize) before handing the pointer to host code.
  T* data() const noexcept { return memory_ ? static_cast<T*>(memory_->data()) : nullptr; }

  // The first `rows` rows (along axis 0), sharing this array's memory: writes through it are
  // this array's.  For the used part of an array with spare rows (particles).  ValueError for
  // rows outside [0, shape(0)].
  Array leading(long long rows) const {
    if (ndim() < 1 || rows < 0 || rows > shape_[0]) detail::throw_leading(shape_, rows);
    std::array<long long, Shape::max_rank> dims{};
    for (int a = 0; a < ndim(); ++a) dims[a] = a == 0 ? rows : shape_[a];
    Array out;
    out.memory_ = memory_;
    out.shape_ = Shape(std::span<const long long>(dims.data(), static_cast<std::size_t>(ndim())));
    return out;
  }

  // Whether two arrays share the same memory.
  bool shares_memory_with(const Array& other) const noexcept {
    return memory_ != nullptr && memory_ == other.memory_;
  }

  // Host element access, with the rank and every index checked (IndexError naming the axis).
  // Host memory only: on cuda and emulated arrays it throws BackendError: copy them with
  // to_host() first, or read them in a loop body through view().
  template <typename... I>
  T& operator()(I... index) const {
    static_assert(sizeof...(I) >= 1 && sizeof...(I) <= 4, "arrays have rank 1 to 4");
    require_host("Array::operator()");
    if (static_cast<int>(sizeof...(I)) != ndim())
      detail::throw_rank_mismatch("Array::operator()", static_cast<int>(sizeof...(I)), shape_);
    const long long idx[] = {static_cast<long long>(index)...};
    long long offset = 0;
    for (int d = 0; d < ndim(); ++d) {
      if (idx[d] < 0 || idx[d] >= shape_[d]) detail::throw_index(shape_, d, idx[d]);
      offset = offset * shape_[d] + idx[d];
    }
    return data()[offset];
  }

  // The elements in memory order as a std::span, for host code and the standard algorithms.
  // Host memory only (BackendError on cuda and emulated, as operator()).
  std::span<T> host_span() const {
    require_host("Array::host_span");
    return {data(), static_cast<std::size_t>(size())};
  }

  // A view of rank N (pointer, shape, strides: a small value) for loop bodies and kernels, on
  // every backend: parallel_for bodies and CudaKernel arguments take it; the rank is checked
  // (ValueError).  It reads the array's own memory: host memory on host, the device's on cuda
  // and emulated.
  template <int N>
  ArrayView<T, N> view() const {
    static_assert(N >= 1 && N <= 4, "views have rank 1 to 4");
    if (N != ndim()) detail::throw_rank_mismatch("Array::view", N, shape_);
    ArrayView<T, N> v{};
    v.data = data();
    long long stride = 1;
    for (int d = N - 1; d >= 0; --d) {
      v.shape[d] = shape_[d];
      v.strides[d] = stride;
      stride *= shape_[d];
    }
    return v;
  }

  // Sets every element to `value` on the array's own side: a loop on the host, a kernel on the
  // current stream on cuda (queued, no synchronisation), after the current stream's work on
  // emulated.  No transfer.
  void fill(const T& value) const {
    if (backend() == Backend::cuda) {
      detail::cuda_fill(data(), dtype_of<T>(), size(), &value);
    } else {
      detail::emulated_order(backend());  // in order after the current emulated stream
      std::fill_n(data(), size(), value);
    }
  }

  // Throws BackendError naming `what`, the backend, shape and type when the array is not in
  // host memory (cuda or emulated): for host functions of one's own that take Arrays.
  void require_host(std::string_view what) const {
    if (!is_host()) detail::throw_host_access(what, backend(), shape_, dtype_name<T>());
  }

  // The bytes an array of `shape` takes; ValueError for an empty shape.
  static std::size_t bytes_for(const Shape& shape) {
    if (shape.rank() == 0)
      throw ValueError(
          "Array: a shape of rank 1 to 4 is required, got an empty shape; pass "
          "e.g. Shape{n} or Shape{nx, ny}");
    if (shape.size() > std::numeric_limits<long long>::max() / static_cast<long long>(sizeof(T)))
      detail::throw_too_many_bytes(shape, sizeof(T));
    return static_cast<std::size_t>(shape.size()) * sizeof(T);
  }

 private:
  std::shared_ptr<MemoryBlock> memory_;
  Shape shape_;
};

// ---- creation ------------------------------------------------------------------------------

// Uninitialised arrays.  An explicit Backend::cuda without a usable device throws
// BackendError with the reason.
template <Element T>
Array<T> empty(Shape shape, Backend backend) {
  return Array<T>(shape, backend);
}
template <Element T>
Array<T> empty(Shape shape) {
  return empty<T>(shape, get_backend());
}

// An array filled with `value` (on `backend`, else the active one).
template <Element T>
Array<T> full(Shape shape, const T& value, Backend backend) {
  Array<T> a = empty<T>(shape, backend);
  a.fill(value);
  return a;
}
template <Element T>
Array<T> full(Shape shape, const T& value) {
  return full<T>(shape, value, get_backend());
}

// An array of zeros (on `backend`, else the active one).
template <Element T>
Array<T> zeros(Shape shape, Backend backend) {
  return full<T>(shape, T{}, backend);
}
template <Element T>
Array<T> zeros(Shape shape) {
  return zeros<T>(shape, get_backend());
}

// An array of ones (on `backend`, else the active one).
template <Element T>
Array<T> ones(Shape shape, Backend backend) {
  return full<T>(shape, T(1), backend);
}
template <Element T>
Array<T> ones(Shape shape) {
  return ones<T>(shape, get_backend());
}

// Values start, start + step, ... below stop (above it for a negative step), as NumPy's
// arange.  ValueError for step == 0.
template <RealElement T>
Array<T> arange(T start, T stop, T step, Backend backend) {
  if (step == T(0))
    throw ValueError(
        "arange: step must not be zero, got step=0; pass a positive step to "
        "count up or a negative step to count down");
  const double span =
      (static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step);
  const long long n = span > 0 ? static_cast<long long>(std::ceil(span)) : 0;
  Array<T> a = empty<T>(Shape{n}, backend);
  if (a.backend() == Backend::cuda) {
    detail::cuda_arange(a.data(), dtype_of<T>(), n, &start, &step);
  } else {
    T* p = a.data();
    for (long long i = 0; i < n; ++i) p[i] = detail::arange_value<T>(start, step, i);
  }
  return a;
}
template <RealElement T>
Array<T> arange(T start, T stop, T step = T(1)) {
  return arange<T>(start, stop, step, get_backend());
}
template <RealElement T>
Array<T> arange(T stop) {
  return arange<T>(T(0), stop, T(1), get_backend());
}

// `num` values evenly spaced from start to stop (stop included when `endpoint`), as
// NumPy's linspace.  ValueError for a negative num.
template <RealElement T>
Array<T> linspace(double start, double stop, long long num, Backend backend, bool endpoint = true) {
  if (num < 0) throw ValueError("linspace: num must be non-negative, got " + std::to_string(num));
  const long long divisions = endpoint ? num - 1 : num;
  const double step = divisions > 0 ? (stop - start) / static_cast<double>(divisions) : 0.0;
  Array<T> a = empty<T>(Shape{num}, backend);
  if (a.backend() == Backend::cuda) {
    detail::cuda_linspace(a.data(), dtype_of<T>(), num, start, step, endpoint, stop);
  } else {
    T* p = a.data();
    for (long long i = 0; i < num; ++i)
      p[i] = detail::linspace_value<T>(start, step, i, num, endpoint, stop);
  }
  return a;
}
template <RealElement T>
Array<T> linspace(double start, double stop, long long num, bool endpoint = true) {
  return linspace<T>(start, stop, num, get_backend(), endpoint);
}

// An array of `shape` on `backend` holding a copy of host `values` (values.size() must equal
// the shape's size).  On a device backend this is a host->device transfer, counted as
// to_device at the caller's line.
template <Element T>
Array<T> from_host(std::span<const T> values, Shape shape, Backend backend,
                   std::source_location where = std::source_location::current()) {
  if (static_cast<long long>(values.size()) != shape.size())
    throw ValueError("from_host: " + std::to_string(values.size()) + " values given for shape " +
                     shape.str() + " of " + std::to_string(shape.size()) +
                     " elements; pass exactly as many values as "
                     "the shape holds");
  Array<T> a = empty<T>(shape, backend);
  detail::copy_memory(a.data(), a.backend(), values.data(), Backend::host, a.nbytes());
  if (a.is_device())
    detail::record_transfer(
        TransferKind::to_device,
        [&] { return detail::describe_array("from_host", shape, dtype_name<T>()); }, where);
  return a;
}
template <Element T>
Array<T> from_host(std::span<const T> values, Shape shape,
                   std::source_location where = std::source_location::current()) {
  return from_host<T>(values, shape, get_backend(), where);
}
// A rank-1 array of the values.
template <Element T>
Array<T> from_host(std::span<const T> values,
                   std::source_location where = std::source_location::current()) {
  return from_host<T>(values, Shape{static_cast<long long>(values.size())}, get_backend(), where);
}

// ---- inspection ------------------------------------------------------------------------------

// The backend whose memory holds the array (its location, not the active selection).
template <Element T>
Backend get_array_backend(const Array<T>& a) noexcept {
  return a.backend();
}
template <Element T>
bool is_host_array(const Array<T>& a) noexcept {
  return a.is_host();
}
template <Element T>
bool is_device_array(const Array<T>& a) noexcept {
  return a.is_device();
}

// True when all arrays share one backend (zero or one array always match).
template <Element... T>
bool same_backend(const Array<T>&... arrays) noexcept {
  if constexpr (sizeof...(T) <= 1) {
    return true;
  } else {
    const Backend backends[] = {arrays.backend()...};
    return std::all_of(std::begin(backends), std::end(backends),
                       [&](Backend b) { return b == backends[0]; });
  }
}

namespace detail {
[[noreturn]] void throw_mixed_backends(std::span<const Backend> backends);
}

// Throws TypeError naming the backends found when the arrays do not share one.
template <Element... T>
void assert_same_backend(const Array<T>&... arrays) {
  if (!same_backend(arrays...)) {
    const Backend backends[] = {arrays.backend()...};
    detail::throw_mixed_backends(backends);
  }
}

}  // namespace cunumpy
