// cunumpy/device.hpp: choosing the CUDA device of this process.
//
// set_device(id) selects a device on the cuda backend (a no-op on host and emulated);
// set_device_for_rank(rank, devices_per_node) selects rank % devices_per_node, for one rank
// per GPU with ranks numbered contiguously per node.  bind_local_device() in
// <cunumpy/launcher.hpp> uses the node-local rank instead and is what start-up calls.
#pragma once

namespace cunumpy {

// Selects device `id` when the cuda backend is active; ValueError for an id outside
// 0..device_count()-1.  No-op on host and emulated.
void set_device(int id);

// The device selected for this process (0 without CUDA).
int current_device();

// Selects rank % devices_per_node (device_count() when devices_per_node <= 0) and returns
// it; returns 0 without selecting anything when no device is visible.
int set_device_for_rank(int rank, int devices_per_node = 0);

namespace detail {
// The device for a rank: rank % devices (0 when there are none).  Pure, for tests.
constexpr int device_for(int rank, int devices) noexcept {
  return devices > 0 && rank >= 0 ? rank % devices : 0;
}
}  // namespace detail

}  // namespace cunumpy
