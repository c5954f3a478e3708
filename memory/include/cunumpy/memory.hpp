// cunumpy/memory.hpp: memory pools and information, pinned host copies, device arguments.
//
//   cunumpy::free_memory_pool();                   // give cached blocks back
//   if (auto info = cunumpy::memory_info()) ...    // (free, total) bytes of the device
//   auto pinned = cunumpy::pin_memory(host);        // page-locked copy for fast transfers
//   auto staging = cunumpy::pinned_empty<double>({n});  // page-locked, from the pinned pool
//   auto w = cunumpy::as_device_array(weights, 1, "weights");  // reference or copy once
//
// Device memory of the cuda backend comes from the device's stream-ordered pool
// (cudaMallocAsync): freed blocks stay cached for reuse, up to the release threshold;
// page-locked host memory for staging comes from cunumpy's pinned pool.  The emulated device
// allocates from its own arena.
#pragma once

#include <cstddef>
#include <optional>
#include <source_location>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <cunumpy/array.hpp>
#include <cunumpy/transfer.hpp>

namespace cunumpy {

// Releases the blocks cached by the device pool, the pinned host pool and the host cache of
// large arrays (blocks held by live arrays stay).
void free_memory_pool();

// What a pool holds and has done: the pinned pool of staging memory, and the host cache that
// keeps freed host arrays of 1 MiB and more for the next allocation they fit (so loops that
// allocate every step skip the operating system's page faults).
struct MemoryPoolStats {
  std::size_t cached_blocks = 0;  // free blocks kept for reuse
  std::size_t cached_bytes = 0;
  std::size_t system_allocations = 0;  // blocks obtained from the system so far
  std::size_t reuses = 0;              // requests served from the cache
};
MemoryPoolStats pinned_pool_stats();
MemoryPoolStats host_cache_stats();

// Memory the device pool keeps cached after frees before returning it to the system (cuda).
void set_memory_pool_release_threshold(std::size_t bytes);

// A device's free and total memory in bytes.
struct MemoryInfo {
  std::size_t free;
  std::size_t total;
};
// (free, total) bytes of the active device (the whole device, not only cunumpy's memory):
// cudaMemGetInfo on cuda, the host's physical memory on emulated, nothing on host.
std::optional<MemoryInfo> memory_info();

// The 48 KiB every CUDA device gives a block.
inline constexpr int default_shared_memory_per_block = 48 * 1024;
// Shared memory a block may use on `backend`'s device (the active backend's by default;
// opt_in: the larger limit a kernel gets after raising its maximum dynamic shared memory): the
// current CUDA device's on cuda, an sm_90's on emulated (48 KiB, 227 KiB opted in); 48 KiB
// without a device.
int max_shared_memory_per_block(bool opt_in, Backend backend);
int max_shared_memory_per_block(bool opt_in = false);

// An uninitialised host array in page-locked memory from the pinned pool (cudaHostAlloc where a
// device is usable, aligned host memory otherwise), for staging and asynchronous transfers.
// The block goes back to the pool when the last copy of the array goes.
template <Element T>
Array<T> pinned_empty(Shape shape) {
  return Array<T>::adopt(allocate_block(MemoryKind::pinned, Array<T>::bytes_for(shape)), shape);
}

namespace detail {
[[noreturn]] void throw_pin_memory(std::string_view why);
[[noreturn]] void throw_ndim(std::string_view name, int expected, int got);
[[noreturn]] void throw_as_device_on_host(std::string_view name);
bool pinned_memory_available();
}  // namespace detail

// A page-locked host copy of a host array (faster, asynchronous transfers).  BackendError where
// there is no CUDA runtime to pin with (the emulated backend gives pool memory that behaves the
// same); BackendError for a device array too, its message saying to pass to_host(a).
template <Element T>
Array<T> pin_memory(const Array<T>& host) {
  if (!host.is_host())
    detail::throw_pin_memory("pin_memory takes a host array; pass to_host(array)");
  if (!detail::pinned_memory_available())
    detail::throw_pin_memory("no CUDA runtime to pin memory with (" + cuda_unavailable_reason() +
                             ")");
  Array<T> out = pinned_empty<T>(host.shape());
  detail::copy_memory(out.data(), Backend::host, host.data(), Backend::host, host.nbytes());
  return out;
}

// The "reference or copy once" rule for kernel arguments built once: a device array of the
// device backend is returned as it is (the same memory, so kernels write into the caller's
// array); a host array becomes one device copy (counted as to_device).  `ndim` (0: any) is
// checked, naming `name`.  On the host backend: BackendError (host data is never moved to the
// device implicitly).
template <Element T>
Array<T> as_device_array(const Array<T>& value, int ndim = 0, std::string_view name = "value",
                         std::source_location where = std::source_location::current()) {
  if (!device_backend()) detail::throw_as_device_on_host(name);
  if (ndim != 0 && value.ndim() != ndim) detail::throw_ndim(name, ndim, value.ndim());
  return to_device(value, where);
}

// Values (a tuple or list, e.g. degrees {3, 3, 3}) as one device array of T: one counted copy.
template <Element T>
Array<T> as_device_array(std::span<const T> values, int ndim = 0, std::string_view name = "value",
                         std::source_location where = std::source_location::current()) {
  if (!device_backend()) detail::throw_as_device_on_host(name);
  if (ndim != 0 && ndim != 1) detail::throw_ndim(name, ndim, 1);
  return from_host<T>(values, Shape{static_cast<long long>(values.size())}, get_backend(), where);
}

// An array of another element type, converted to T: host data is converted on the host and
// copied once; device data is converted with one round trip through the host (counted).
template <Element T, Element U>
requires(!std::is_same_v<T, U>) Array<T> as_device_array(
    const Array<U>& value, int ndim = 0, std::string_view name = "value",
    std::source_location where = std::source_location::current()) {
  if (!device_backend()) detail::throw_as_device_on_host(name);
  if (ndim != 0 && value.ndim() != ndim) detail::throw_ndim(name, ndim, value.ndim());
  const Array<U> host = to_host(value, where);
  Array<T> converted(value.shape(), Backend::host);
  const auto in = host.host_span();
  auto out = converted.host_span();
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = static_cast<T>(in[i]);
  return to_device(converted, where);
}

}  // namespace cunumpy
