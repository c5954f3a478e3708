// loops/src/host_simd/dispatch.hpp: calls a Highway-exported kernel for the target of
// targets.hpp.  Included once per Highway translation unit, in its HWY_ONCE part.
//
// Highway's own HWY_DYNAMIC_DISPATCH follows a process-wide choice that an application using
// Highway itself may change; this one follows CUNUMPY_HOST_SIMD alone.  The index into a
// kernel's table depends on the targets compiled in this translation unit, so it is computed
// here (internal linkage), once.
#pragma once

#include <cstddef>

#include "targets.hpp"

namespace cunumpy::detail::host_simd {
namespace {

std::size_t dispatch_index() {
  static const std::size_t index = [] {
    hwy::ChosenTarget chosen;
    chosen.Update(choice().targets);
    return chosen.GetIndex();
  }();
  return index;
}

}  // namespace
}  // namespace cunumpy::detail::host_simd

// The function of table FUNC for the chosen target.
#define CUNUMPY_SIMD_DISPATCH(FUNC) \
  (*(HWY_DISPATCH_TABLE(FUNC)[::cunumpy::detail::host_simd::dispatch_index()]))
