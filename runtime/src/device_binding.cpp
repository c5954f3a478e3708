// Binding this process's GPU from the node-local rank (runtime.hpp).
#include "device_binding.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <cunumpy/device.hpp>
#include <cunumpy/errors.hpp>

namespace cunumpy {

namespace {
// The entries of a CUDA_VISIBLE_DEVICES list, trimmed.
std::vector<std::string> visible_entries(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}
}  // namespace

DeviceBinding device_binding(int local_rank, int local_size, int devices, const char* visible) {
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size)
    throw ValueError("device_binding: local rank " + std::to_string(local_rank) +
                     " is not one of the node's " + std::to_string(local_size) + " rank(s)");
  DeviceBinding b;
  if (devices <= 0) {
    b.description = "no device visible";
    return b;
  }
  b.device = detail::device_for(local_rank, devices);
  b.ranks_sharing = local_size / devices + (b.device < local_size % devices ? 1 : 0);
  const std::vector<std::string> entries =
      visible != nullptr ? visible_entries(visible) : std::vector<std::string>{};
  b.visible_as =
      b.device < static_cast<int>(entries.size()) ? entries[b.device] : std::to_string(b.device);
  b.description = "device " + std::to_string(b.device) + " of " + std::to_string(devices);
  if (!entries.empty()) b.description += " (CUDA_VISIBLE_DEVICES entry " + b.visible_as + ")";
  if (b.ranks_sharing > 1)
    b.description += ", " + std::to_string(b.ranks_sharing) + " of the node's " +
                     std::to_string(local_size) + " ranks share it";
  return b;
}

namespace detail {
std::optional<DeviceBinding> bind_device() {
  if (get_backend() != Backend::cuda || device_count() == 0) return std::nullopt;
  const DeviceBinding b = device_binding(local_rank(), std::max(local_size(), local_rank() + 1),
                                         device_count(), std::getenv("CUDA_VISIBLE_DEVICES"));
  set_device(b.device);
  return b;
}
}  // namespace detail

std::optional<int> bind_local_device() {
  const std::optional<DeviceBinding> b = detail::bind_device();
  return b ? std::optional<int>(b->device) : std::nullopt;
}

}  // namespace cunumpy
