// host_step's CIC loop over whole vectors of particles (host_step_simd.hpp), compiled by Google
// Highway for each instruction set (foreach_target.h includes this file once per target) and
// chosen at run time.  Lane by lane the same operations, in the same order, as host_step.cpp's
// scalar loop: the same bits.  Measured by scripts/compare_picksc.sh.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "host_step_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include <cunumpy/algorithms.hpp>

#include "host_step_simd.hpp"
#include "pic_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace pic::host_step {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
long long CicVectors(const GuardedGrid& g, const Step& s, const double* HWY_RESTRICT cells,
                     long long begin, long long end, double* HWY_RESTRICT ne, Sums& sums) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<std::int32_t, decltype(d)> d32;
  const hn::RebindToSigned<decltype(d)> d64;
  using V = hn::Vec<decltype(d)>;
  const auto lanes = static_cast<long long>(hn::Lanes(d));
  // Chunks whose stencils at x_{n+1} wait in L1 for the deposit.
  constexpr long long kChunk = 512;
  if (lanes > kChunk) return begin;
  alignas(64) std::int32_t node[kChunk];
  alignas(64) double wx0[kChunk], wx1[kChunk], wy0[kChunk], wy1[kChunk];
  const int row = static_cast<int>(g.row), cell_row = static_cast<int>(g.ny + 1);
  const V inv_dx = hn::Set(d, s.inv_dx), inv_dy = hn::Set(d, s.inv_dy), lx = hn::Set(d, s.lx),
          ly = hn::Set(d, s.ly), dv = hn::Set(d, s.dv), dt = hn::Set(d, s.dt),
          one = hn::Set(d, 1.0), zero = hn::Zero(d);
  const auto cell_rows = hn::Set(d32, cell_row), rows = hn::Set(d32, row), one32 = hn::Set(d32, 1);
  V energy = zero, momentum = zero;
  double* HWY_RESTRICT x = s.x;
  double* HWY_RESTRICT y = s.y;
  double* HWY_RESTRICT vx = s.vx;
  double* HWY_RESTRICT vy = s.vy;
  const double q = s.charge;
  long long i = begin;
  while (end - i >= lanes) {
    const long long m = std::min(kChunk, (end - i) / lanes * lanes);
    for (long long k = 0; k < m; k += lanes) {
      const long long p = i + k;
      // The field at x_n: kernels::stencil's CIC weights (truncation is floor for x >= 0).
      const V sx = hn::Mul(hn::LoadU(d, x + p), inv_dx), sy = hn::Mul(hn::LoadU(d, y + p), inv_dy);
      const auto jx = hn::DemoteTo(d32, sx), jy = hn::DemoteTo(d32, sy);
      const V fx = hn::Sub(sx, hn::PromoteTo(d, jx)), fy = hn::Sub(sy, hn::PromoteTo(d, jy));
      const V ax = hn::Sub(one, fx), ay = hn::Sub(one, fy);
      const auto at = hn::ShiftLeft<3>(hn::PromoteTo(d64, hn::Add(hn::Mul(jx, cell_rows), jy)));
      const V w00 = hn::Mul(ax, ay), w01 = hn::Mul(ax, fy), w10 = hn::Mul(fx, ay),
              w11 = hn::Mul(fx, fy);
      V e0 = hn::Add(zero, hn::Mul(w00, hn::GatherIndex(d, cells + 0, at)));
      e0 = hn::Add(e0, hn::Mul(w01, hn::GatherIndex(d, cells + 1, at)));
      e0 = hn::Add(e0, hn::Mul(w10, hn::GatherIndex(d, cells + 2, at)));
      e0 = hn::Add(e0, hn::Mul(w11, hn::GatherIndex(d, cells + 3, at)));
      V e1 = hn::Add(zero, hn::Mul(w00, hn::GatherIndex(d, cells + 4, at)));
      e1 = hn::Add(e1, hn::Mul(w01, hn::GatherIndex(d, cells + 5, at)));
      e1 = hn::Add(e1, hn::Mul(w10, hn::GatherIndex(d, cells + 6, at)));
      e1 = hn::Add(e1, hn::Mul(w11, hn::GatherIndex(d, cells + 7, at)));
      // The push and the move.
      const V ox = hn::LoadU(d, vx + p), oy = hn::LoadU(d, vy + p);
      const V nx = hn::Add(ox, hn::Mul(dv, e0)), ny = hn::Add(oy, hn::Mul(dv, e1));
      hn::StoreU(nx, d, vx + p);
      hn::StoreU(ny, d, vy + p);
      energy = hn::Add(energy, hn::Add(hn::Mul(ox, nx), hn::Mul(oy, ny)));
      momentum = hn::Add(momentum, nx);
      V px = hn::Add(hn::LoadU(d, x + p), hn::Mul(dt, nx));
      V py = hn::Add(hn::LoadU(d, y + p), hn::Mul(dt, ny));
      px = hn::IfThenElse(hn::Lt(px, zero), hn::Add(px, lx), px);
      px = hn::IfThenElse(hn::Ge(px, lx), hn::Sub(px, lx), px);
      py = hn::IfThenElse(hn::Lt(py, zero), hn::Add(py, ly), py);
      py = hn::IfThenElse(hn::Ge(py, ly), hn::Sub(py, ly), py);
      hn::StoreU(px, d, x + p);
      hn::StoreU(py, d, y + p);
      const auto inside = hn::And(hn::And(hn::Ge(px, zero), hn::Lt(px, lx)),
                                  hn::And(hn::Ge(py, zero), hn::Lt(py, ly)));
      if (!hn::AllTrue(d, inside)) [[unlikely]] {  // moved more than a box length
        for (long long l = p; l < p + lanes; ++l) {
          if (!(x[l] >= 0.0 && x[l] < s.lx)) x[l] = kernels::periodic(x[l], s.lx);
          if (!(y[l] >= 0.0 && y[l] < s.ly)) y[l] = kernels::periodic(y[l], s.ly);
        }
        px = hn::LoadU(d, x + p);
        py = hn::LoadU(d, y + p);
      }
      // The stencil at x_{n+1}, for the deposit.
      const V tx = hn::Mul(px, inv_dx), ty = hn::Mul(py, inv_dy);
      const auto kx = hn::DemoteTo(d32, tx), ky = hn::DemoteTo(d32, ty);
      const V gx = hn::Sub(tx, hn::PromoteTo(d, kx)), gy = hn::Sub(ty, hn::PromoteTo(d, ky));
      hn::StoreU(hn::Add(hn::Mul(hn::Add(kx, one32), rows), hn::Add(ky, one32)), d32, node + k);
      hn::StoreU(hn::Sub(one, gx), d, wx0 + k);
      hn::StoreU(gx, d, wx1 + k);
      hn::StoreU(hn::Sub(one, gy), d, wy0 + k);
      hn::StoreU(gy, d, wy1 + k);
    }
    for (long long k = 0; k < m; ++k) {  // the deposit, in host_step.cpp's order
      const int c = node[k];
      ne[c] += q * (wx0[k] * wy0[k]);
      ne[c + 1] += q * (wx0[k] * wy1[k]);
      ne[c + row] += q * (wx1[k] * wy0[k]);
      ne[c + row + 1] += q * (wx1[k] * wy1[k]);
    }
    i += m;
  }
  sums.energy += hn::GetLane(hn::SumOfLanes(d, energy));
  sums.momentum += hn::GetLane(hn::SumOfLanes(d, momentum));
  return i;
}
#else
long long CicVectors(const GuardedGrid&, const Step&, const double*, long long begin, long long,
                     double*, Sums&) {
  return begin;  // one lane: host_step.cpp's scalar loop does the work
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace pic::host_step
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pic::host_step {

HWY_EXPORT(CicVectors);

namespace {
// The library's choice of host vector target (cunumpy::host_simd(), from CUNUMPY_HOST_SIMD):
// portable runs the scalar loop alone; avx2, sve and neon keep this loop off the targets above
// them too.
struct Choice {
  bool vectors = true;
  Choice() {
    const std::string chosen = cunumpy::host_simd();
    const std::string target = chosen.substr(0, chosen.find(' '));
    if (target == "portable") vectors = false;
    if (target == "avx2") hwy::DisableTargets(HWY_AVX3 | HWY_AVX3_DL);
    if (target == "sve") hwy::DisableTargets(HWY_SVE2 | HWY_SVE2_128);
    if (target == "neon") hwy::DisableTargets(HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128);
  }
};
}  // namespace

long long cic_vectors(const GuardedGrid& g, const Step& s, const double* cells, long long begin,
                      long long end, double* ne, Sums& sums) {
  static const Choice choice;
  if (!choice.vectors) return begin;
  return HWY_DYNAMIC_DISPATCH(CicVectors)(g, s, cells, begin, end, ne, sums);
}

void fill_cell_fields(long long nx, long long ny, const double* ex, const double* ey,
                      std::vector<double>& cells) {
  cells.resize(static_cast<std::size_t>(8 * (nx + 1) * (ny + 1)));
  double* out = cells.data();
#pragma omp parallel for schedule(static)
  for (long long i = 0; i <= nx; ++i)
    for (long long j = 0; j <= ny; ++j) {
      double* c = out + 8 * (i * (ny + 1) + j);
      const long long i0 = i % nx, i1 = (i + 1) % nx, j0 = j % ny, j1 = (j + 1) % ny;
      const long long at[4] = {i0 * ny + j0, i0 * ny + j1, i1 * ny + j0, i1 * ny + j1};
      for (int k = 0; k < 4; ++k) {
        c[k] = ex[at[k]];
        c[4 + k] = ey[at[k]];
      }
    }
}

}  // namespace pic::host_step
#endif  // HWY_ONCE
