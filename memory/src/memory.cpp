// Memory information, pin_memory and as_device_array helpers, DeviceMirror errors.
#include <cunumpy/device_mirror.hpp>
#include <cunumpy/memory.hpp>

#include <unistd.h>

#include <string>

#include <cunumpy/errors.hpp>
#include <cunumpy/internal/cuda_api.hpp>

namespace cunumpy {

std::optional<MemoryInfo> memory_info() {
  switch (get_backend()) {
    case Backend::host:
      return std::nullopt;
    case Backend::cuda: {
      MemoryInfo info{};
      detail::cuda_api::mem_get_info(info.free, info.total);
      return info;
    }
    case Backend::emulated: {
      const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
      return MemoryInfo{static_cast<std::size_t>(sysconf(_SC_AVPHYS_PAGES)) * page,
                        static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * page};
    }
  }
  return std::nullopt;
}

int max_shared_memory_per_block(bool opt_in) {
  return max_shared_memory_per_block(opt_in, get_backend());
}

int max_shared_memory_per_block(bool opt_in, Backend backend) {
  // The emulated device is an sm_90 (H100/H200): 227 KiB for a kernel that opts in.
  if (backend == Backend::emulated) return opt_in ? 232448 : default_shared_memory_per_block;
  if (!cuda_available()) return default_shared_memory_per_block;
  return detail::cuda_api::shared_memory_per_block(opt_in);
}

namespace detail {

bool pinned_memory_available() {
  return cuda_available() || get_backend() == Backend::emulated;
}

void throw_pin_memory(std::string_view why) {
  throw BackendError(
      "pin_memory: " + std::string(why) +
      "; without a GPU use the array as it is, or CUNUMPY_BACKEND=emulated to exercise the path");
}

void throw_ndim(std::string_view name, int expected, int got) {
  throw ValueError("as_device_array: '" + std::string(name) + "' must have " +
                   std::to_string(expected) + " dimension(s), got " + std::to_string(got));
}

void throw_as_device_on_host(std::string_view name) {
  throw BackendError(
      "as_device_array('" + std::string(name) +
      "'): device arguments are built only on a device backend, and host data is never copied "
      "to the device implicitly; the active backend is host (" +
      backend_reason() + ")");
}

void throw_mirror_changed(const void* bound, std::size_t bound_size, const void* now,
                          std::size_t now_size) {
  throw ValueError("DeviceMirror: the host memory changed (" + std::to_string(bound_size) +
                   " elements at " + std::to_string(reinterpret_cast<std::uintptr_t>(bound)) +
                   ", now " + std::to_string(now_size) + " at " +
                   std::to_string(reinterpret_cast<std::uintptr_t>(now)) +
                   ") without rebind(); call mirror.rebind(shape) after the owner reallocates");
}

void throw_mirror_size(std::size_t size, const Shape& shape) {
  throw ValueError("DeviceMirror: the host memory holds " + std::to_string(size) +
                   " elements, shape " + shape.str() + " needs " + std::to_string(shape.size()));
}

}  // namespace detail

}  // namespace cunumpy
