// The binding start-up makes, with its description (device_binding.cpp).  Private to the runtime
// layer's sources.
#pragma once

#include <optional>

#include <cunumpy/runtime.hpp>

namespace cunumpy::detail {
// Binds this process's device (bind_local_device) and returns how: nothing on the host and
// emulated backends or without devices.
std::optional<DeviceBinding> bind_device();
}  // namespace cunumpy::detail
