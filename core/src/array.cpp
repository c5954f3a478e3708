// Shape and the non-template parts of Array<T> and the transfers.
#include <cunumpy/array.hpp>
#include <cunumpy/shape.hpp>
#include <cunumpy/transfer.hpp>

#include <string>

namespace cunumpy {

Shape::Shape(std::initializer_list<long long> extents)
    : Shape(std::span<const long long>(extents.begin(), extents.size())) {}

Shape::Shape(std::span<const long long> extents) {
  if (extents.size() < 1 || extents.size() > max_rank)
    throw ValueError("Shape: rank 1 to 4 expected, got " + std::to_string(extents.size()) +
                     " extents; reshape the data into at most 4 dimensions");
  int d = 0;
  for (long long e : extents) extents_[d++] = e;
  rank_ = static_cast<int>(extents.size());
  validate();
}

void Shape::validate() const {
  for (int d = 0; d < rank_; ++d)
    if (extents_[d] < 0) throw ValueError("Shape: extents must be non-negative, got " + str());
  // The element count must fit a 64-bit count, so size() (unchecked, hot) never overflows.
  long long n = 1;
  for (int d = 0; d < rank_; ++d)
    if (__builtin_mul_overflow(n, extents_[d], &n))
      throw ValueError("Shape " + str() +
                       ": the number of elements does not fit a 64-bit count (more than 2^63); "
                       "use a smaller shape");
}

long long Shape::at(int axis) const {
  if (axis < 0 || axis >= rank_)
    throw ValueError("Shape: axis " + std::to_string(axis) + " does not exist in a shape of rank " +
                     std::to_string(rank_) + " " + str());
  return extents_[axis];
}

std::string Shape::str() const {
  std::string s = "(";
  for (int d = 0; d < rank_; ++d) {
    if (d > 0) s += ", ";
    s += std::to_string(extents_[d]);
  }
  if (rank_ == 1) s += ",";
  return s + ")";
}

std::string_view to_string(Location location) noexcept {
  return location == Location::host ? "host" : "device";
}

namespace detail {

void throw_too_many_bytes(const Shape& shape, std::size_t element_size) {
  throw ValueError("Array: shape " + shape.str() + " of " + std::to_string(element_size) +
                   "-byte elements needs more than 2^63 bytes; use a smaller shape");
}

Backend device_target(const char* what) {
  const Backend active = get_backend();
  if (active != Backend::host) return active;
  if (cuda_available()) return Backend::cuda;
  throw BackendError(std::string(what) +
                     ": no device backend is available: the active backend is "
                     "host (" +
                     backend_reason() + ") and CUDA is unavailable (" + cuda_unavailable_reason() +
                     "); select a device with set_backend(Backend::emulated) or "
                     "CUNUMPY_BACKEND=emulated to run the device paths without a GPU");
}

std::string describe_array(std::string_view what, const Shape& shape, std::string_view dtype) {
  return std::string(what) + "(shape=" + shape.str() + ", dtype=" + std::string(dtype) + ")";
}

void throw_host_access(std::string_view what, Backend backend, const Shape& shape,
                       std::string_view dtype) {
  throw BackendError(std::string(what) + ": host access to a device array (" +
                     std::string(to_string(backend)) + ", shape=" + shape.str() +
                     ", dtype=" + std::string(dtype) +
                     ") is refused; copy it to the host with to_host(array) first, or use it "
                     "in a kernel through array.view<N>()");
}

void throw_rank_mismatch(std::string_view what, int expected, const Shape& shape) {
  throw ValueError(std::string(what) + ": rank " + std::to_string(expected) +
                   " requested, but the array has rank " + std::to_string(shape.rank()) +
                   " (shape " + shape.str() + "); use view<" + std::to_string(shape.rank()) +
                   ">() or " + std::to_string(shape.rank()) + " indices");
}

void throw_index(const Shape& shape, int axis, long long index) {
  throw IndexError("index " + std::to_string(index) + " is out of bounds for axis " +
                   std::to_string(axis) + " with size " + std::to_string(shape[axis]) + " (shape " +
                   shape.str() + ")");
}

void throw_mixed_backends(std::span<const Backend> backends) {
  std::string found;
  for (std::size_t i = 0; i < backends.size(); ++i) {
    if (i > 0) found += ", ";
    found += to_string(backends[i]);
  }
  throw TypeError("arrays are on different backends: " + found +
                  "; move them to one side with to_host() or to_device() first");
}

void throw_copy_mismatch(const Shape& dst, const Shape& src) {
  throw ValueError("copy: destination shape " + dst.str() + " differs from source shape " +
                   src.str() + "; copy between arrays of the same shape");
}

void throw_leading(const Shape& shape, long long rows) {
  throw ValueError("Array::leading: " + std::to_string(rows) + " rows asked of an array of shape " +
                   shape.str() + "; ask for 0 to " +
                   std::to_string(shape.rank() > 0 ? shape[0] : 0) + " rows");
}

void throw_to_device_host() {
  throw ValueError(
      "to_device: the target must be a device backend (cuda or emulated), got host; use "
      "to_host() for the host side");
}

void throw_cross_device(std::string_view what, Backend from, Backend to) {
  throw BackendError(std::string(what) + ": cannot move an array from the " +
                     std::string(to_string(from)) + " device to the " + std::string(to_string(to)) +
                     " device directly; go through to_host()");
}

}  // namespace detail
}  // namespace cunumpy
