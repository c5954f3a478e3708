#include <cunumpy/host_targets.hpp>  // first: the targets compiled

#include "targets.hpp"

#include <cctype>
#include <cstdlib>

#include <hwy/highway.h>
#include <hwy/targets.h>

namespace cunumpy::detail::host_simd {
namespace {

struct Named {
  const char* name;
  std::int64_t target;
};

// Our names for Highway's targets (those host_targets.hpp may compile), best first per family.
constexpr Named kNames[] = {
    {"avx512", HWY_AVX3}, {"avx2", HWY_AVX2}, {"sve2", HWY_SVE2},
    {"sve", HWY_SVE},     {"neon", HWY_NEON}, {"emu128", HWY_EMU128},
};

// The family of a vector target (Highway's SVE_256 and SVE2_128 are SVE and SVE2 for fixed
// vector lengths).
HostTarget family_of(std::int64_t target) {
  if ((target & HWY_AVX3) != 0) return HostTarget::avx512;
  if ((target & HWY_AVX2) != 0) return HostTarget::avx2;
  if ((target & (HWY_SVE2 | HWY_SVE2_128)) != 0) return HostTarget::sve2;
  if ((target & (HWY_SVE | HWY_SVE_256)) != 0) return HostTarget::sve;
  if ((target & HWY_NEON) != 0) return HostTarget::neon;
  return HostTarget::portable;
}

std::string name_of(std::int64_t target) {
  for (const Named& n : kNames)
    if (n.target == target) return n.name;
  return hwy::TargetName(target);
}

// The targets compiled into the library that this CPU runs, as Highway's bits.
std::int64_t runnable() {
  return hwy::SupportedTargets() & HWY_TARGETS;
}

// The best target in a set of bits (Highway: the lower bit, the better target).
std::int64_t best(std::int64_t targets) {
  return targets & -targets;
}

std::string lowercase(const std::string& s) {
  std::string out;
  for (const char ch : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

Choice make_choice() {
  Choice c;
  const char* env = std::getenv("CUNUMPY_HOST_SIMD");
  const std::string asked = env == nullptr ? "" : env;
  const std::string wanted = lowercase(asked);
  if (wanted == "portable") {
    c.report = "portable (CUNUMPY_HOST_SIMD=" + asked + ")";
    return c;
  }
  const std::int64_t can = runnable();
  std::string note;
  std::int64_t targets = can;
  if (!wanted.empty() && wanted != "auto") {
    std::int64_t target = 0;
    for (const Named& n : kNames)
      if (wanted == n.name) target = n.target;
    if (target == 0) {
      note = "; CUNUMPY_HOST_SIMD=" + asked +
             " is not understood (auto, portable, avx2, avx512, neon, sve or sve2)";
    } else if ((can & target) == 0) {
      note = "; CUNUMPY_HOST_SIMD=" + asked + ": not supported by this CPU or this build";
    } else {
      targets = can & ~(target - 1);  // the target asked for and those below it
    }
  }
  c.targets = targets;
  if ((best(targets) & (HWY_SCALAR | HWY_EMU128)) != 0) {  // no vector unit to use
    c.report = std::string("portable (no vector target: Highway ") +
               hwy::TargetName(best(targets)) + ")" + note;
    return c;
  }
  c.vector = true;
  c.target = family_of(best(targets));
  c.report = name_of(best(targets)) + " (Highway " + hwy::TargetName(best(targets)) + ")" + note;
  return c;
}

}  // namespace

const Choice& choice() {
  static const Choice chosen = make_choice();
  return chosen;
}

}  // namespace cunumpy::detail::host_simd

namespace cunumpy {

HostTarget host_target() {
  return detail::host_simd::choice().target;
}

std::string_view to_string(HostTarget target) {
  switch (target) {
    case HostTarget::portable:
      return "portable";
    case HostTarget::avx2:
      return "avx2";
    case HostTarget::avx512:
      return "avx512";
    case HostTarget::neon:
      return "neon";
    case HostTarget::sve:
      return "sve";
    case HostTarget::sve2:
      return "sve2";
  }
  return "unknown";
}

std::int64_t detail::host_highway_targets() {
  return host_simd::choice().targets;
}

}  // namespace cunumpy
