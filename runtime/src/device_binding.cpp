// Binding this process's GPU from the node-local rank (runtime.hpp).
#include <cunumpy/runtime.hpp>

#include <cunumpy/device.hpp>

namespace cunumpy {

std::optional<int> bind_local_device() {
  if (get_backend() != Backend::cuda || device_count() == 0) return std::nullopt;
  const int id = detail::device_for(local_rank(), device_count());
  set_device(id);
  return id;
}

}  // namespace cunumpy
