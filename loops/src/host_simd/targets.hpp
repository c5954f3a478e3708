// loops/src/host_simd/targets.hpp: which instruction set the host's vector loops (the sort,
// the Morton keys, the Philox fills) run with, chosen once at run time.
//
// The loops are written once against Google Highway and compiled for each target of
// cunumpy/host_targets.hpp; CUNUMPY_HOST_SIMD picks one:
//   auto (default)  the best target this CPU supports
//   avx512, avx2    that x86-64 target, when the CPU supports it (else auto, with a note)
//   neon, sve, sve2 the same on ARM
//   portable        no Highway at all: the plain loops (the device's formulas, one element at a
//                   time), which also finish every vector loop's last elements
// Results are the same bits on every target (tests run each one the CPU supports).
#pragma once

#include <cstdint>
#include <string>

namespace cunumpy {
enum class
    HostTarget;  // cunumpy/host_targets.hpp (not included: Highway stays out of nvcc's sources)
}

namespace cunumpy::detail::host_simd {

struct Choice {
  bool vector = false;       // false: CUNUMPY_HOST_SIMD=portable
  HostTarget target{};       // portable
  std::int64_t targets = 0;  // Highway's bits: the chosen target and those below it
  std::string report;        // cunumpy::host_simd()
};

// Read once, at the first call.
const Choice& choice();

inline bool vector_loops() {
  return choice().vector;
}

}  // namespace cunumpy::detail::host_simd
