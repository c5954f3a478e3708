// cunumpy/device_mirror.hpp: a device copy of host memory that another library owns.
//
//   std::vector<double>& data = stencil_vector.data();     // owned and used by the library
//   cunumpy::DeviceMirror<double> mirror(data, {nx, ny});
//   mirror.zero();
//   deposit(markers, mirror.device());                    // kernels write the device copy
//   mirror.to_host();                                     // into `data`, in place
//
// device() is allocated on first access as a copy of the host memory (the one implicit
// transfer, counted); to_device() and to_host() copy explicitly between the two; zero() zeroes
// the device copy.  The host side stays the owner's: to_host() writes into the same memory.
// If the owner reallocates (a std::vector that grew), call rebind(): the device copy is kept
// when the shape is unchanged; using the mirror before rebind() throws ValueError.  The device
// side is the backend given at construction (the active one by default), whatever is active
// when the methods are called; on host device() is the host memory itself and nothing is
// ever copied.  Methods that change something return the mirror, for chaining.
#pragma once

#include <functional>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include <cunumpy/array.hpp>
#include <cunumpy/transfer.hpp>

namespace cunumpy {

namespace detail {
[[noreturn]] void throw_mirror_changed(const void* bound, std::size_t bound_size, const void* now,
                                       std::size_t now_size);
[[noreturn]] void throw_mirror_size(std::size_t size, const Shape& shape);
}  // namespace detail

// A device copy of a host array, brought up to date on demand with counted transfers.
template <Element T>
class DeviceMirror {
 public:
  // Mirrors a std::vector (watched: a reallocation without rebind() is detected).
  DeviceMirror(std::vector<T>& owner, Shape shape, Backend device = get_backend())
      : source_([&owner] { return std::span<T>(owner); }), shape_(shape), backend_(device) {
    bind();
  }
  // Mirrors fixed host memory (a buffer that never moves).
  DeviceMirror(std::span<T> host, Shape shape, Backend device = get_backend())
      : source_([host] { return host; }), shape_(shape), backend_(device) {
    bind();
  }

  const Shape& shape() const noexcept { return shape_; }
  // The backend of the device side (host: the mirror is the host memory itself).
  Backend backend() const noexcept { return backend_; }
  std::span<T> host() const { return check(); }

  // The array kernels write into: a device copy of the host memory, made on first access
  // (counted as to_device); the host memory itself on the host backend.
  const Array<T>& device(std::source_location where = std::source_location::current()) {
    check();
    if (!device_) {
      if (backend_ == Backend::host) {
        device_ = host_array();
      } else {
        device_ = cunumpy::to_device(host_array(), backend_, where);
      }
    }
    return *device_;
  }

  // Copies the host memory into the device copy (allocating it on first use).
  DeviceMirror& to_device(std::source_location where = std::source_location::current()) {
    check();
    if (backend_ == Backend::host) return *this;
    if (!device_) {
      device_ = cunumpy::to_device(host_array(), backend_, where);
    } else {
      copy(*device_, host_array(), where);
    }
    return *this;
  }

  // Copies the device copy into the host memory, in place (no-op on host or before any device
  // access).
  DeviceMirror& to_host(std::source_location where = std::source_location::current()) {
    check();
    if (device_ && device_->is_device()) copy(host_array(), *device_, where);
    return *this;
  }

  // Zeroes the device copy (allocating it without a copy if needed), or the host memory on host.
  DeviceMirror& zero() {
    check();
    if (!device_) device_ = backend_ != Backend::host ? empty<T>(shape_, backend_) : host_array();
    device_->fill(T{});
    return *this;
  }

  // Follows a reallocation of the owner's memory (the std::vector it watches, or `host` for a
  // span mirror): the device copy is kept when the shape is unchanged.
  DeviceMirror& rebind(Shape shape) {
    // On host the "device" array is the old host memory itself: it always follows the owner.
    if (!(shape == shape_) || (device_ && device_->is_host())) device_.reset();
    shape_ = shape;
    bind();
    return *this;
  }
  DeviceMirror& rebind(std::span<T> host, Shape shape) {
    source_ = [host] { return host; };
    return rebind(shape);
  }

 private:
  void bind() {
    const std::span<T> s = source_();
    if (static_cast<long long>(s.size()) != shape_.size())
      detail::throw_mirror_size(s.size(), shape_);
    bound_ = s;
  }
  std::span<T> check() const {
    const std::span<T> now = source_();
    if (now.data() != bound_.data() || now.size() != bound_.size())
      detail::throw_mirror_changed(bound_.data(), bound_.size(), now.data(), now.size());
    return now;
  }
  Array<T> host_array() const {
    return Array<T>::adopt(borrow_block(bound_.data(), bound_.size_bytes(), MemoryKind::host),
                           shape_);
  }

  std::function<std::span<T>()> source_;
  std::span<T> bound_;
  Shape shape_;
  Backend backend_;
  std::optional<Array<T>> device_;
};

}  // namespace cunumpy
