// The baselines of apps/bench_algorithms (bench_baselines.hpp), built with -O3 -march=native:
// whatever the compiler makes of plain code on the machine at hand.
#include "bench_baselines.hpp"

#if defined(__BMI2__)
#include <immintrin.h>
#endif

namespace BASELINE_NAMESPACE {
namespace {

inline void mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}

struct Words {
  std::uint32_t v[4];
};

inline Words philox4x32_10(Words c, std::uint32_t k0, std::uint32_t k1) {
  for (int r = 0; r < 10; ++r) {
    std::uint32_t hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, c.v[0], hi0, lo0);
    mulhilo(0xCD9E8D57u, c.v[2], hi1, lo1);
    c = Words{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

inline std::uint64_t cell(double x, double lower, double scale, double top) {
  double c = (x - lower) * scale;
  c = c > 0.0 ? c : 0.0;
  c = c < top ? c : top;
  return static_cast<std::uint64_t>(c);
}

#if !defined(__BMI2__)
inline std::uint64_t spread3(std::uint64_t v) {
  v &= 0x1FFFFF;
  v = (v | v << 32) & 0x1F00000000FFFF;
  v = (v | v << 16) & 0x1F0000FF0000FF;
  v = (v | v << 8) & 0x100F00F00F00F00F;
  v = (v | v << 4) & 0x10C30C30C30C30C3;
  v = (v | v << 2) & 0x1249249249249249;
  return v;
}
#endif

}  // namespace

void philox_uniform(double* out, std::uint64_t seed, const std::uint64_t* ids,
                    std::uint64_t counter, long long n) {
  const auto k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (long long i = 0; i < n; ++i) {
    const Words w = philox4x32_10(
        Words{{static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32),
               static_cast<std::uint32_t>(ids[i]), static_cast<std::uint32_t>(ids[i] >> 32)}},
        k0, k1);
    const std::uint64_t bits = (static_cast<std::uint64_t>(w.v[0]) << 21) | (w.v[1] >> 11);
    out[i] = static_cast<double>(bits) * (1.0 / 9007199254740992.0);
  }
}

void morton3(std::uint64_t* keys, const double* x, long long n, const double* lower,
             const double* scale, int levels) {
  const double top = static_cast<double>((1ull << levels) - 1ull);
  for (long long i = 0; i < n; ++i) {
    const std::uint64_t cx = cell(x[3 * i], lower[0], scale[0], top),
                        cy = cell(x[3 * i + 1], lower[1], scale[1], top),
                        cz = cell(x[3 * i + 2], lower[2], scale[2], top);
#if defined(__BMI2__)
    keys[i] = _pdep_u64(cx, 0x1249249249249249ull) | _pdep_u64(cy, 0x2492492492492492ull) |
              _pdep_u64(cz, 0x4924924924924924ull);
#else
    keys[i] = spread3(cx) | spread3(cy) << 1 | spread3(cz) << 2;
#endif
  }
}

std::string morton3_method() {
#if defined(__BMI2__)
  return "bmi2 pdep";
#else
  return "shift-and-mask";
#endif
}

}  // namespace BASELINE_NAMESPACE
