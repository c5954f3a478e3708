// cunumpy/transfer.hpp: the only ways an array crosses between host and device.
//
//   auto host_rho = cunumpy::to_host(rho);       // device -> host, counted as to_host
//   auto dev_x    = cunumpy::to_device(x);       // host -> device, counted as to_device
//   auto y        = cunumpy::to_active(x);       // to the active backend's side
//   cunumpy::copy(dst, src);                     // into an existing array, any direction
//
// Each real transfer is recorded with the caller's file:line (std::source_location, taken
// where the call is written).  A conversion that moves nothing (to_host of a host array)
// returns the array itself and records nothing.
#pragma once

#include <optional>
#include <source_location>

#include <cunumpy/array.hpp>

namespace cunumpy {

namespace detail {
[[noreturn]] void throw_copy_mismatch(const Shape& dst, const Shape& src);
[[noreturn]] void throw_cross_device(std::string_view what, Backend from, Backend to);
[[noreturn]] void throw_to_device_host();
}  // namespace detail

// A host array with the values of `a`: `a` itself when it is a host array, else a new host
// array (a device->host copy, counted as to_host).
template <Element T>
Array<T> to_host(const Array<T>& a, std::source_location where = std::source_location::current()) {
  if (a.is_host()) return a;
  Array<T> out(a.shape(), Backend::host);
  detail::copy_memory(out.data(), Backend::host, a.data(), a.backend(), a.nbytes());
  detail::record_transfer(
      TransferKind::to_host,
      [&] { return detail::describe_array("to_host", a.shape(), dtype_name<T>()); }, where);
  return out;
}

// A device array with the values of `a` on the device backend (the active one when it is
// cuda or emulated, else cuda when available): `a` itself when it is already there, else a
// host->device copy, counted as to_device.  BackendError when there is no device.
template <Element T>
Array<T> to_device(const Array<T>& a, Backend target,
                   std::source_location where = std::source_location::current());
template <Element T>
Array<T> to_device(const Array<T>& a,
                   std::source_location where = std::source_location::current()) {
  return to_device(a, detail::device_target("to_device"), where);
}

// The same onto the device backend `target` (cuda or emulated).
template <Element T>
Array<T> to_device(const Array<T>& a, Backend target, std::source_location where) {
  if (target == Backend::host) detail::throw_to_device_host();
  if (a.backend() == target) return a;
  if (a.is_device()) detail::throw_cross_device("to_device", a.backend(), target);
  Array<T> out(a.shape(), target);
  detail::copy_memory(out.data(), target, a.data(), Backend::host, a.nbytes());
  detail::record_transfer(
      TransferKind::to_device,
      [&] { return detail::describe_array("to_device", a.shape(), dtype_name<T>()); }, where);
  return out;
}

// `a` on the active backend's side: to_host on host, to_device on cuda and emulated.
template <Element T>
Array<T> to_active(const Array<T>& a,
                   std::source_location where = std::source_location::current()) {
  return device_backend() ? to_device(a, where) : to_host(a, where);
}

namespace detail {
// copy() recorded as `kind` when it crosses (to_host / to_device by its direction when
// `kind` is nullopt).
template <Element T>
void copy_recorded(const Array<T>& dst, const Array<T>& src, std::optional<TransferKind> kind,
                   const std::source_location& where) {
  if (!(dst.shape() == src.shape())) throw_copy_mismatch(dst.shape(), src.shape());
  if (dst.is_device() && src.is_device() && dst.backend() != src.backend())
    throw_cross_device("copy", src.backend(), dst.backend());
  copy_memory(dst.data(), dst.backend(), src.data(), src.backend(), src.nbytes());
  if (dst.location() == src.location()) return;
  const TransferKind k =
      kind.value_or(dst.is_device() ? TransferKind::to_device : TransferKind::to_host);
  record_transfer(
      k,
      [&] {
        return describe_array(dst.is_device() ? "copy(host->device)" : "copy(device->host)",
                              src.shape(), dtype_name<T>());
      },
      where);
}
}  // namespace detail

// Copies src into dst (same shape; any two locations).  A host->device copy counts as
// to_device, a device->host copy as to_host; host->host and device->device copies move
// nothing across and are not recorded.  ValueError for different shapes.
template <Element T>
void copy(const Array<T>& dst, const Array<T>& src,
          std::source_location where = std::source_location::current()) {
  detail::copy_recorded(dst, src, std::nullopt, where);
}

namespace detail {
// copy() of device data staged through host memory for MPI: recorded as mpi_staging.
template <Element T>
void mpi_staging_copy(const Array<T>& dst, const Array<T>& src, const std::source_location& where) {
  copy_recorded(dst, src, TransferKind::mpi_staging, where);
}
}  // namespace detail

}  // namespace cunumpy
