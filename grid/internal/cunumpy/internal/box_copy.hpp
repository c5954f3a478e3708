// Copies between a box of a C-contiguous array and a contiguous buffer, as parallel loops on
// the memory's own backend (the halo exchange's packing and unpacking).  Internal.
#pragma once

#include <array>
#include <cstddef>

#include <cunumpy/backend.hpp>
#include <cunumpy/dtype.hpp>

namespace cunumpy::detail {

// A box of an array of up to 4 axes (outermost first; unused leading axes have size 1), in
// units of `unit` bytes (an element, or all the components of a cell when they are last).
struct Box {
  std::array<long long, 4> dims{1, 1, 1, 1};
  std::array<long long, 4> begin{0, 0, 0, 0};
  std::array<long long, 4> extent{1, 1, 1, 1};
  long long unit = 1;  // bytes
  long long units() const noexcept { return extent[0] * extent[1] * extent[2] * extent[3]; }
  long long bytes() const noexcept { return units() * unit; }
};

// buffer <- array[box]
void pack_box(Backend backend, const void* array, const Box& box, void* buffer);
// array[box] <- buffer
void unpack_box(Backend backend, void* array, const Box& box, const void* buffer);
// array[box] += buffer, element by element of `dtype` (complex: both parts).  TypeError for
// booleans.
void unpack_add_box(Backend backend, DType dtype, void* array, const Box& box, const void* buffer);

}  // namespace cunumpy::detail
