// host_step's 2D and 3D CIC loops over whole vectors of particles (host_step_simd.hpp), compiled by
// Google Highway for each instruction set (foreach_target.h includes this file once per target)
// and chosen at run time.  The double loop (VectorsOf): lane by lane the same operations, in the
// same order, as host_step.cpp's scalar loop, the same bits.  The float loop (FloatsOf: float
// particles on real 2D and 3D grids): its own arithmetic in float, one lane at a time on the
// baseline target the same bits as its vectors.
#include <cunumpy/host_targets.hpp>  // first: the library's targets compiled

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "host_step_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/cache_control.h>
#include <hwy/highway.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include <cunumpy/host_vectors-inl.h>

#include "host_step_simd.hpp"
#include "pic_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace pic::host_step {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace cv = cunumpy::HWY_NAMESPACE;  // host_vectors-inl.h

// 2D CIC, float cells: the cells' whole entries (8 floats, 32 bytes) of `count` particles, one
// after the other from `to`.
HWY_INLINE void CopyEntries(const float* HWY_RESTRICT cells, const std::int32_t* HWY_RESTRICT cell,
                            long long count, float* HWY_RESTRICT to) {
  for (long long l = 0; l < count; ++l)
    std::memcpy(to + 8 * l, cells + 8 * static_cast<long long>(cell[l]), 8 * sizeof(float));
}
// The rows [p, p + lanes) whose stored position lies outside the stay region, appended to
// `leavers` in increasing order: the exact test in double, after a vector test found one.
template <int Dim, typename R>
HWY_INLINE void AppendLeavers(const StepGeometry& s, const R* x, const R* y, const R* z,
                              long long p, long long lanes) {
  const R* coord[3] = {x, y, z};
  for (long long l = p; l < p + lanes; ++l) {
    bool in = true;
    for (int a = 0; a < Dim; ++a)
      in = in && coord[a][l] >= s.stay_lo[a] && coord[a][l] <= s.stay_hi[a];
    if (!in) s.leavers->push_back(l);
  }
}
// 2D and 3D CIC: the first node (in the guarded grid) of the stencils whose cells are (kx, ky[,
// kz]), at their images in the block, stored at `out`; -1 for a stencil beyond the guards,
// counted in `sums` and flagged in `missed`.  DI: int32 lanes (kz unused in 2D).
template <int Dim, class DI>
HWY_INLINE void StoreImageNodes(DI di, const StepGeometry& s, hn::Vec<DI> kx, hn::Vec<DI> ky,
                                hn::Vec<DI> kz, std::int32_t* HWY_RESTRICT out, Sums& sums,
                                bool& missed) {
  const auto set = [&](long long v) { return hn::Set(di, static_cast<std::int32_t>(v)); };
  const auto rows = set(s.row), cols = set(s.col), base = set(s.base);
  const auto first = [&] {
    if constexpr (Dim == 3)
      return hn::Add(hn::Add(hn::Add(hn::Mul(kx, rows), hn::Mul(ky, cols)), kz), base);
    else
      return hn::Add(hn::Add(hn::Mul(kx, rows), ky), base);
  };
  if (s.whole_box) {
    hn::StoreU(first(), di, out);
    return;
  }
  // Each axis's cell moved by a box length into [lo, hi - 1] where that reaches it.
  const auto image = [&](hn::Vec<DI>& k, long long lo, long long hi, long long n) {
    const auto l = set(lo), h = set(hi - 1), len = set(n);
    k = hn::IfThenElse(hn::Lt(k, l), hn::Add(k, len), k);
    k = hn::IfThenElse(hn::Gt(k, h), hn::Sub(k, len), k);
    return hn::Or(hn::Lt(k, l), hn::Gt(k, h));
  };
  auto out_of = hn::Or(image(kx, s.i_lo, s.i_hi, s.nx), image(ky, s.j_lo, s.j_hi, s.ny));
  if constexpr (Dim == 3) out_of = hn::Or(out_of, image(kz, s.k_lo, s.k_hi, s.nz));
  hn::StoreU(hn::IfThenElse(out_of, set(-1), first()), di, out);
  if (!hn::AllFalse(di, out_of)) [[unlikely]] {
    sums.undeposited += static_cast<long long>(hn::CountTrue(di, out_of));
    missed = true;
  }
}

// Float particles with real grids, 2D CIC, in float lanes (twice double's): the same scheme,
// each particle's gather, push, move and stencil in float (host_step.hpp's float_stencil, and
// mixed precision's stored cells and offsets, for the deposit alone), E read from the cells in
// float (Step::cells32: each particle's 32-byte entry, read from the table as two 16-byte halves
// on x86's wide vectors, elsewhere copied whole, then transposed a vector at a time), the deposit's
// weights (from the float fractions, a vector at a time) and the sums in double.  D: the full
// vector, or one lane (CappedTag<float, 1>) for the rest of the particles: lane by lane the same
// operations, so the same bits either way.
template <class D>
HWY_INLINE hn::Vec<hn::Rebind<double, D>> Promoted(D, hn::Vec<D> v, hwy::SizeTag<1>) {
  return hn::PromoteTo(hn::Rebind<double, D>(), v);
}
#if CUNUMPY_WIDE_VECTORS  // (no halves of one lane)
template <class D, size_t kLanes>
HWY_INLINE hn::Vec<hn::Repartition<double, D>> Promoted(D, hn::Vec<D> v, hwy::SizeTag<kLanes>) {
  const hn::Repartition<double, D> dd;
  const hn::Half<D> dh;
  return hn::Add(hn::PromoteTo(dd, hn::LowerHalf(dh, v)), hn::PromoteTo(dd, hn::UpperHalf(dh, v)));
}
#endif
template <class D>
using WideLanes = hwy::SizeTag<hn::MaxLanes(D()) == 1 ? 1 : 2>;

// A vector of particles' entries (CopyEntries, from `at`) as eight vectors: E_x at the four
// corners (x0..x3), then E_y (y0..y3).  Two de-interleaving loads of four floats a group (the
// groups alternate E_x, E_y), then the even groups' lanes and the odd ones'.  (Vectors are
// named one by one: SVE's cannot be array elements.)
template <class D, class V = hn::Vec<D>>
HWY_INLINE void LoadEntries(D d, const float* HWY_RESTRICT at, V& x0, V& x1, V& x2, V& x3, V& y0,
                            V& y1, V& y2, V& y3, hwy::SizeTag<1>) {
  x0 = hn::Set(d, at[0]);
  x1 = hn::Set(d, at[1]);
  x2 = hn::Set(d, at[2]);
  x3 = hn::Set(d, at[3]);
  y0 = hn::Set(d, at[4]);
  y1 = hn::Set(d, at[5]);
  y2 = hn::Set(d, at[6]);
  y3 = hn::Set(d, at[7]);
}
#if CUNUMPY_WIDE_VECTORS
template <class D, size_t kLanes, class V = hn::Vec<D>>
HWY_INLINE void LoadEntries(D d, const float* HWY_RESTRICT at, V& x0, V& x1, V& x2, V& x3, V& y0,
                            V& y1, V& y2, V& y3, hwy::SizeTag<kLanes>) {
  V l0, l1, l2, l3, h0, h1, h2, h3;
  hn::LoadInterleaved4(d, at, l0, l1, l2, l3);
  hn::LoadInterleaved4(d, at + 4 * hn::Lanes(d), h0, h1, h2, h3);
  x0 = hn::ConcatEven(d, h0, l0);
  x1 = hn::ConcatEven(d, h1, l1);
  x2 = hn::ConcatEven(d, h2, l2);
  x3 = hn::ConcatEven(d, h3, l3);
  y0 = hn::ConcatOdd(d, h0, l0);
  y1 = hn::ConcatOdd(d, h1, l1);
  y2 = hn::ConcatOdd(d, h2, l2);
  y3 = hn::ConcatOdd(d, h3, l3);
}
#endif

// x86's vectors of 8 or 16 floats (AVX2, AVX-512): a vector of particles' entries (`cell`: their
// cells) read from the cell table itself, in no copy: particle 4j + g's E_x at the four corners
// as block j of vector g (g = 0..3), its E_y likewise, then a 4x4 transpose within the blocks
// puts each corner's component in particle order.  Where the copy took a load and a store a
// particle and (AVX-512) 40 shuffles for 16 particles' copied entries, this takes two 16-byte
// broadcast loads (merged under masks) a particle and 16 shuffles a vector, one a particle on
// AVX-512, two on AVX2.  (NEON and SVE copy, as does one lane.)
#undef PIC_ENTRIES_FROM_TABLE
#if CUNUMPY_CHEAP_BLOCK_BROADCASTS
#define PIC_ENTRIES_FROM_TABLE 1
template <class D, class V = hn::Vec<D>>
HWY_INLINE void TableEntries(D d, const float* HWY_RESTRICT cells,
                             const std::int32_t* HWY_RESTRICT cell, V& x0, V& x1, V& x2, V& x3,
                             V& y0, V& y1, V& y2, V& y3) {
  const auto entry = [&](int p) { return cells + 8 * static_cast<long long>(cell[p]); };
  const auto first4 = hn::FirstN(d, 4), first8 = hn::FirstN(d, 8), first12 = hn::FirstN(d, 12);
  V xq[4], yq[4];  // vector g's block j: particle 4j + g's E_x (xq) and E_y (yq) at the corners
  for (int g = 0; g < 4; ++g) {
    const float* e0 = entry(g);
    const float* e1 = entry(4 + g);
    const V ex0 = hn::LoadDup128(d, e0), ex1 = hn::LoadDup128(d, e1);
    const V ey0 = hn::LoadDup128(d, e0 + 4), ey1 = hn::LoadDup128(d, e1 + 4);
    if constexpr (hn::MaxLanes(d) == 8) {
      xq[g] = hn::IfThenElse(first4, ex0, ex1);
      yq[g] = hn::IfThenElse(first4, ey0, ey1);
    } else {
      static_assert(hn::MaxLanes(d) == 16, "8 or 16 float lanes");
      const float* e2 = entry(8 + g);
      const float* e3 = entry(12 + g);
      const auto last = [&](V b1, const float* b2, const float* b3) {
        return hn::IfThenElse(
            first8, b1, hn::IfThenElse(first12, hn::LoadDup128(d, b2), hn::LoadDup128(d, b3)));
      };
      xq[g] = hn::IfThenElse(first4, ex0, last(ex1, e2, e3));
      yq[g] = hn::IfThenElse(first4, ey0, last(ey1, e2 + 4, e3 + 4));
    }
  }
  const hn::Repartition<double, D> dd;
  const auto transpose = [&](const V* q, V& c0, V& c1, V& c2, V& c3) {
    const auto t0 = hn::BitCast(dd, hn::InterleaveLower(d, q[0], q[1])),
               t1 = hn::BitCast(dd, hn::InterleaveUpper(d, q[0], q[1])),
               t2 = hn::BitCast(dd, hn::InterleaveLower(d, q[2], q[3])),
               t3 = hn::BitCast(dd, hn::InterleaveUpper(d, q[2], q[3]));
    c0 = hn::BitCast(d, hn::InterleaveLower(dd, t0, t2));
    c1 = hn::BitCast(d, hn::InterleaveUpper(dd, t0, t2));
    c2 = hn::BitCast(d, hn::InterleaveLower(dd, t1, t3));
    c3 = hn::BitCast(d, hn::InterleaveUpper(dd, t1, t3));
  };
  transpose(xq, x0, x1, x2, x3);
  transpose(yq, y0, y1, y2, y3);
}
#else
#define PIC_ENTRIES_FROM_TABLE 0
#endif

// The deposit's weights of a vector of particles whose stencils have fractions gx, gy:
// float_cic2_weights's four products in double (the same roundings), each particle's four
// side by side from w (add_float_cell's order).
template <class D>
HWY_INLINE void StoreWeights(D, double q, hn::Vec<D> gx, hn::Vec<D> gy, double* HWY_RESTRICT w,
                             hwy::SizeTag<1>) {
  const FloatCic2Weights c = float_cic2_weights(q, hn::GetLane(gx), hn::GetLane(gy));
  w[0] = c.w00;
  w[1] = c.w01;
  w[2] = c.w10;
  w[3] = c.w11;
}
#if CUNUMPY_WIDE_VECTORS
template <class D, size_t kLanes>
HWY_INLINE void StoreWeights(D, double q, hn::Vec<D> gx, hn::Vec<D> gy, double* HWY_RESTRICT w,
                             hwy::SizeTag<kLanes>) {
  const hn::Repartition<double, D> dd;
  const hn::Half<D> dh;
  const auto charge = hn::Set(dd, q), one = hn::Set(dd, 1.0);
  const auto half = [&](hn::Vec<hn::Half<D>> hx, hn::Vec<hn::Half<D>> hy, double* to) {
    const auto fx = hn::PromoteTo(dd, hx), fy = hn::PromoteTo(dd, hy);
    const auto qx = hn::Mul(charge, fx), qa = hn::Sub(charge, qx), ay = hn::Sub(one, fy);
    hn::StoreInterleaved4(hn::Mul(qa, ay), hn::Mul(qa, fy), hn::Mul(qx, ay), hn::Mul(qx, fy), dd,
                          to);
  };
  half(hn::LowerHalf(dh, gx), hn::LowerHalf(dh, gy), w);
  half(hn::UpperHalf(dh, gx), hn::UpperHalf(dh, gy), w + 4 * hn::Lanes(dd));
}
#endif

#undef PIC_WEIGHTS_PERMUTED
#if CUNUMPY_TWO_TABLES_ONE_INSTRUCTION
#define PIC_WEIGHTS_PERMUTED 1
// Where a two-source permute is one instruction (AVX-512's 16 float lanes): StoreWeights's
// products, each vector two particles' four weights made as the product of (q - q g_x,
// q - q g_x, q g_x, q g_x) and (1 - g_y, g_y, 1 - g_y, g_y), each taken from two vectors of 8
// particles by one two-source permute: 16 permutes for 16 particles where the interleaved
// store shuffles 24 times.  The same products, the same bits.
template <class D>
HWY_INLINE void StoreWeightsPermuted(D, double q, hn::Vec<D> gx, hn::Vec<D> gy,
                                     double* HWY_RESTRICT w) {
  const hn::Repartition<double, D> dd;
  const hn::RebindToSigned<decltype(dd)> di;
  const hn::Half<D> dh;
  const auto charge = hn::Set(dd, q), one = hn::Set(dd, 1.0);
  const auto half = [&](hn::Vec<hn::Half<D>> hx, hn::Vec<hn::Half<D>> hy, double* to) {
    const auto fx = hn::PromoteTo(dd, hx), fy = hn::PromoteTo(dd, hy);
    const auto qx = hn::Mul(charge, fx), qa = hn::Sub(charge, qx), ay = hn::Sub(one, fy);
    for (int j = 0; j < 4; ++j) {  // particles 2j and 2j + 1 of the eight
      const std::int64_t a = 2 * j, b = 2 * j + 1;
      HWY_ALIGN const std::int64_t along_x[8] = {a, a, 8 + a, 8 + a, b, b, 8 + b, 8 + b};
      HWY_ALIGN const std::int64_t along_y[8] = {a, 8 + a, a, 8 + a, b, 8 + b, b, 8 + b};
      hn::Store(hn::Mul(cv::TwoTablesLookupLanes(dd, qa, qx, hn::Load(di, along_x)),
                        cv::TwoTablesLookupLanes(dd, ay, fy, hn::Load(di, along_y))),
                dd, to + 8 * j);
    }
  };
  half(hn::LowerHalf(dh, gx), hn::LowerHalf(dh, gy), w);
  half(hn::UpperHalf(dh, gx), hn::UpperHalf(dh, gy), w + 32);
}
#else
#define PIC_WEIGHTS_PERMUTED 0
#endif

// A particle's four weights (StoreWeights) into its cell's sums (add_float_cell), whole
// vectors of up to four doubles: the same sums as one at a time.
HWY_INLINE void AddCell(double* HWY_RESTRICT sums, const double* HWY_RESTRICT w) {
  const hn::CappedTag<double, 4> d4;
  for (size_t k = 0; k < 4; k += hn::Lanes(d4))
    hn::Store(hn::Add(hn::Load(d4, sums + k), hn::Load(d4, w + k)), d4, sums + k);
}

// The stencils of `count` particles (first node first[l]) copied from the lines along the last
// axis they touch (2D: offsets 0, row; 3D: 0, col, row, row + col), each line's two nodes (kPer
// values of T a node: E's components, then any padding) into at_node[2 * line + node], kPer a
// particle, for de-interleaving loads.
template <int kPer, int kLines, typename T, size_t kN>
HWY_INLINE void CopyLines(const T* HWY_RESTRICT nodes, const std::int32_t* HWY_RESTRICT first,
                          long long count, long long row, long long col, T (*at_node)[kN]) {
  const long long line[4] = {0, kLines == 4 ? col : row, row, row + col};
  for (long long l = 0; l < count; ++l)
    for (int a = 0; a < kLines; ++a) {
      const T* HWY_RESTRICT from = nodes + kPer * (first[l] + line[a]);
      std::memcpy(at_node[2 * a] + kPer * l, from, kPer * sizeof(T));
      std::memcpy(at_node[2 * a + 1] + kPer * l, from + kPer, kPer * sizeof(T));
    }
}

// E at x_n from a stencil's corners (2D: 4, 3D: 8) in kernels::for_each_node's order (offsets
// 0, col, row, row + col along the lines, two nodes along the last axis each), each corner's
// weight w_x w_y (3D: (w_x w_y) w_z); load(corner, c0, c1, c2) gives a corner's components
// (corner 2 * line + node).  e0, e1, e2: the sums, from the caller's start (e2 in 3D alone).
template <int Dim, class V, class Load>
HWY_INLINE void GatherCorners(V w00, V w01, V w10, V w11, V az, V fz, const Load& load, V& e0,
                              V& e1, V& e2) {
  const auto corner = [&](const V w, int line_node) {
    V c0, c1, c2;
    load(line_node, c0, c1, c2);
    e0 = hn::Add(e0, hn::Mul(w, c0));
    e1 = hn::Add(e1, hn::Mul(w, c1));
    if constexpr (Dim == 3) e2 = hn::Add(e2, hn::Mul(w, c2));
  };
  if constexpr (Dim == 3) {
    corner(hn::Mul(w00, az), 0);
    corner(hn::Mul(w00, fz), 1);
    corner(hn::Mul(w01, az), 2);
    corner(hn::Mul(w01, fz), 3);
    corner(hn::Mul(w10, az), 4);
    corner(hn::Mul(w10, fz), 5);
    corner(hn::Mul(w11, az), 6);
    corner(hn::Mul(w11, fz), 7);
  } else {
    (void)az, (void)fz;
    corner(w00, 0);
    corner(w01, 1);
    corner(w10, 2);
    corner(w11, 3);
  }
}

// 3D CIC in float lanes: the 2D float loop's scheme with eight corners.  E from the float nodes
// (Step::nodes32: 4 floats a node): a sub-chunk's stencils copied, particle after particle, from
// the four lines along z they touch (two nodes, 32 bytes, each) into one array per line and node,
// and read back de-interleaved (a component a vector); the deposit's weights
// (float_cic3_weights, a vector at a time in double) and the sums in double.
constexpr long long kChunk3 = 256;  // particles a chunk (their weights in L1, 16 KB)
template <class D>
HWY_INLINE void StoreWeights3(D, double q, hn::Vec<D> gx, hn::Vec<D> gy, hn::Vec<D> gz,
                              double (*w)[kChunk3], long long at, hwy::SizeTag<1>) {
  double c[8];
  float_cic3_weights(q, hn::GetLane(gx), hn::GetLane(gy), hn::GetLane(gz), c);
  for (int k = 0; k < 8; ++k) w[k][at] = c[k];
}
#if CUNUMPY_WIDE_VECTORS
template <class D, size_t kLanes>
HWY_INLINE void StoreWeights3(D, double q, hn::Vec<D> gx, hn::Vec<D> gy, hn::Vec<D> gz,
                              double (*w)[kChunk3], long long at, hwy::SizeTag<kLanes>) {
  const hn::Repartition<double, D> dd;
  const hn::Half<D> dh;
  using VD = hn::Vec<decltype(dd)>;
  const auto charge = hn::Set(dd, q), one = hn::Set(dd, 1.0);
  const auto half = [&](hn::Vec<hn::Half<D>> hx, hn::Vec<hn::Half<D>> hy, hn::Vec<hn::Half<D>> hz,
                        long long to) {
    const VD fx = hn::PromoteTo(dd, hx), fy = hn::PromoteTo(dd, hy), fz = hn::PromoteTo(dd, hz);
    const VD qx = hn::Mul(charge, fx), qa = hn::Sub(charge, qx), ay = hn::Sub(one, fy),
             az = hn::Sub(one, fz);
    const auto along_z = [&](VD wab, int k) {
      hn::Store(hn::Mul(wab, az), dd, w[2 * k] + to);
      hn::Store(hn::Mul(wab, fz), dd, w[2 * k + 1] + to);
    };
    along_z(hn::Mul(qa, ay), 0);
    along_z(hn::Mul(qa, fy), 1);
    along_z(hn::Mul(qx, ay), 2);
    along_z(hn::Mul(qx, fy), 3);
  };
  half(hn::LowerHalf(dh, gx), hn::LowerHalf(dh, gy), hn::LowerHalf(dh, gz), at);
  half(hn::UpperHalf(dh, gx), hn::UpperHalf(dh, gy), hn::UpperHalf(dh, gz),
       at + static_cast<long long>(hn::Lanes(dd)));
}
#endif
// A vector of particles' node (4 floats each, from `at`): its three components.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void LoadNodes(D d, const float* HWY_RESTRICT at, V& c0, V& c1, V& c2, hwy::SizeTag<1>) {
  c0 = hn::Set(d, at[0]);
  c1 = hn::Set(d, at[1]);
  c2 = hn::Set(d, at[2]);
}
#if CUNUMPY_WIDE_VECTORS
template <class D, size_t kLanes, class V = hn::Vec<D>>
HWY_INLINE void LoadNodes(D d, const float* HWY_RESTRICT at, V& c0, V& c1, V& c2,
                          hwy::SizeTag<kLanes>) {
  V pad;
  hn::LoadInterleaved4(d, at, c0, c1, c2, pad);
}
#endif

// Float particles with real grids (Step::floats), 2D and 3D CIC, in float lanes (twice
// double's): each particle's gather, push, move and stencil in float (host_step.hpp's
// float_stencil), the deposit's weights (from the float fractions, a vector at a time) and every
// sum in double.  E in float: in 2D from the cells (Step::cells32: each particle's 32-byte entry,
// read from the table on x86's wide vectors, elsewhere copied, then transposed a vector at a
// time; the corners summed in pairs), in 3D from the nodes (Step::nodes32: a stencil's four
// lines along z copied, the corners summed in for_each_node's order); the deposit into cell sums
// in 2D (add_float_cell, in float_deposit_order), into nodes in 3D (add_float_cic3).  A chunk in
// four passes, each loop's dependency chains short so that more of its iterations overlap: E at
// each particle; the push and the move (the new stencils' fractions, each particle's energy term
// v_old . v_new); the deposit's weights and the energy and momentum sums; the deposit.
// D: the full vector, or one lane (CappedTag<float, 1>) for the rest of the particles: lane by
// lane the same operations, so the same bits either way.
// Cells (mixed precision: Step::cx, cy, cz): a particle's stencil is its cell and its offset,
// read as they are; the move adds cell_dt v to the offset in float, moves the cell by the floor
// of the sum and keeps the rest, below 1, as the new offset (a lane that left the box's cells
// after the wrap, moved more than a box length or not finite, takes kernels::move_along).
template <int Dim, bool Cells, class D>
long long FloatsOf(D d, const Step<float>& s, long long begin, long long end,
                   double* HWY_RESTRICT ne, Sums& sums) {
  const hn::RebindToSigned<D> di;
  using V = hn::Vec<D>;
  using VI = hn::Vec<decltype(di)>;
  const auto lanes = static_cast<long long>(hn::Lanes(d));
  // (A sub-chunk of 64: every vector up to SVE's 2048 bits, 64 floats, fits.)
  constexpr long long kChunk = Dim == 3 ? kChunk3 : kFloatChunk, kSub = 64;
  // 2D: the entries straight from the table (x86's vectors of 8 or 16 floats), or copied first.
  constexpr bool kFromTable = Dim == 2 && PIC_ENTRIES_FROM_TABLE && hn::MaxLanes(D()) >= 8;
  if (lanes > kSub) return begin;
  alignas(64) std::int32_t node[kChunk], first[kSub];
  alignas(64) float along_x[kChunk], along_y[kChunk], along_z[Dim == 3 ? kChunk : 1], terms[kChunk];
  alignas(64) double weights[Dim == 3 ? 1 : 4 * kChunk];  // 2D: add_float_cell's order
  alignas(64) double share[Dim == 3 ? 8 : 1][kChunk];     // 3D: node (a, b, l) at 4a + 2b + l
  alignas(64) float entries[Dim == 3 ? 1 : 8 * kSub];     // 2D: the copied entries
  alignas(64) float at_node[Dim == 3 ? 8 : 1][4 * kSub];  // 3D: [2 line + node][4 p + axis]
  const long long row = s.row, col = s.col;
  const FloatStep3 f = Dim == 3 ? float_step3(s) : FloatStep3{float_step(s), 0, 0, 0, 0, 0};
  const V inv_dx = hn::Set(d, f.inv_dx), inv_dy = hn::Set(d, f.inv_dy),
          inv_dz = hn::Set(d, f.inv_dz), lx = hn::Set(d, f.lx), ly = hn::Set(d, f.ly),
          lz = hn::Set(d, f.lz), dv = hn::Set(d, f.dv), dt = hn::Set(d, f.dt),
          below_lx = hn::Set(d, f.below_lx), below_ly = hn::Set(d, f.below_ly),
          below_lz = hn::Set(d, f.below_lz), one = hn::Set(d, 1.0f), zero = hn::Zero(d);
  // The stay region rounded inwards: a float inside it is inside the region in double.
  const V stay_x0 = hn::Set(d, f.stay_lo[0]), stay_x1 = hn::Set(d, f.stay_hi[0]),
          stay_y0 = hn::Set(d, f.stay_lo[1]), stay_y1 = hn::Set(d, f.stay_hi[1]),
          stay_z0 = hn::Set(d, f.stay_lo_z), stay_z1 = hn::Set(d, f.stay_hi_z);
  const VI rows = hn::Set(di, static_cast<std::int32_t>(row)),
           cols = hn::Set(di, static_cast<std::int32_t>(col)),
           base = hn::Set(di, static_cast<std::int32_t>(s.base));
  auto energy = hn::Zero(hn::DFromV<decltype(Promoted(d, zero, WideLanes<D>()))>());
  auto momentum = energy;
  float* HWY_RESTRICT x = s.x;
  float* HWY_RESTRICT y = s.y;
  float* HWY_RESTRICT z = s.z;
  float* HWY_RESTRICT vx = s.vx;
  float* HWY_RESTRICT vy = s.vy;
  float* HWY_RESTRICT vz = s.vz;
  // Cells: the cells, the moves' factors (dt / cell size) and the cells per axis (without
  // cells, lx, ly, lz are lengths, which need not fit an int32: unused then).
  std::int32_t* HWY_RESTRICT cx = s.cx;
  std::int32_t* HWY_RESTRICT cy = s.cy;
  std::int32_t* HWY_RESTRICT cz = s.cz;
  const V cdt_x = hn::Set(d, static_cast<float>(s.cell_dt[0])),
          cdt_y = hn::Set(d, static_cast<float>(s.cell_dt[1])),
          cdt_z = hn::Set(d, static_cast<float>(s.cell_dt[2])), below_one = hn::Set(d, 0.99999994f),
          big = hn::Set(d, 8388608.0f);
  const auto cells_of = [&](double l) {
    return hn::Set(di, Cells ? static_cast<std::int32_t>(l) : 0);
  };
  const VI ncx = cells_of(s.lx), ncy = cells_of(s.ly), ncz = cells_of(Dim == 3 ? s.lz : 0.0),
           zero_i = hn::Zero(di), minus_one = hn::Set(di, -1);
  // The stay region's cells: (cell_lo, cell_hi) exclusive, the block's first cell - 1 and its end.
  const auto cell_at = [&](double v) { return Cells ? static_cast<std::int32_t>(v) : 0; };
  std::int32_t cell_lo[3] = {0, 0, 0}, cell_hi[3] = {0, 0, 0};
  for (int a = 0; a < Dim; ++a) {
    cell_lo[a] = cell_at(s.stay_lo[a]) - 1;
    cell_hi[a] = cell_at(std::ceil(s.stay_hi[a]));
  }
  const VI cell_x0 = hn::Set(di, cell_lo[0]), cell_x1 = hn::Set(di, cell_hi[0]),
           cell_y0 = hn::Set(di, cell_lo[1]), cell_y1 = hn::Set(di, cell_hi[1]),
           cell_z0 = hn::Set(di, cell_lo[2]), cell_z1 = hn::Set(di, cell_hi[2]);
  const double q = s.charge;
  std::vector<std::int64_t>* leavers = s.leavers;
  long long i = begin;
  while (end - i >= lanes) {
    const long long m = std::min(kChunk, (end - i) / lanes * lanes);
    bool missed = false;
    for (long long k = 0; k < m; k += lanes) {  // E at x_n
      if (k % kSub == 0) {  // the next sub-chunk's stencils (their E copied, or not)
        const long long sub = std::min(kSub, m - k);
        for (long long l = 0; l < sub; l += lanes) {
          const long long p = i + k + l;
          VI jx, jy, jz;
          if constexpr (Cells) {
            jx = hn::LoadU(di, cx + p);
            jy = hn::LoadU(di, cy + p);
            jz = Dim == 3 ? hn::LoadU(di, cz + p) : jy;
          } else {
            jx = cv::TruncInRange(d, hn::Mul(hn::LoadU(d, x + p), inv_dx));
            jy = cv::TruncInRange(d, hn::Mul(hn::LoadU(d, y + p), inv_dy));
            jz = Dim == 3 ? cv::TruncInRange(d, hn::Mul(hn::LoadU(d, z + p), inv_dz)) : jy;
          }
          if constexpr (Dim == 3)
            hn::StoreU(hn::Add(hn::Add(hn::Add(hn::Mul(jx, rows), hn::Mul(jy, cols)), jz), base),
                       di, first + l);
          else
            hn::StoreU(hn::Add(hn::Add(hn::Mul(jx, rows), jy), base), di, first + l);
        }
        if constexpr (Dim == 3)
          CopyLines<4, 4>(s.nodes32, first, sub, row, col, at_node);
        else if constexpr (!kFromTable)
          CopyEntries(s.cells32, first, sub, entries);
      }
      const long long p = i + k;
      // (Truncation is floor for x >= 0; with cells the offsets are the fractions.)
      const V x0 = hn::LoadU(d, x + p), y0 = hn::LoadU(d, y + p),
              z0 = Dim == 3 ? hn::LoadU(d, z + p) : zero;
      const auto fraction = [&](V p0, V inv) {
        if constexpr (Cells) return p0;
        const V t = hn::Mul(p0, inv);
        return hn::Sub(t, hn::ConvertTo(d, cv::TruncInRange(d, t)));
      };
      const V fx = fraction(x0, inv_dx), fy = fraction(y0, inv_dy),
              fz = Dim == 3 ? fraction(z0, inv_dz) : zero;
      const V ax = hn::Sub(one, fx), ay = hn::Sub(one, fy), az = hn::Sub(one, fz);
      const V w00 = hn::Mul(ax, ay), w01 = hn::Mul(ax, fy), w10 = hn::Mul(fx, ay),
              w11 = hn::Mul(fx, fy);
      if constexpr (Dim == 3) {
        V e0 = zero, e1 = zero, e2 = zero;
        const long long at = 4 * (k % kSub);
        GatherCorners<3>(
            w00, w01, w10, w11, az, fz,
            [&](int line_node, V& c0, V& c1, V& c2) {
              LoadNodes(d, at_node[line_node] + at, c0, c1, c2, WideLanes<D>());
            },
            e0, e1, e2);
        hn::Store(e0, d, along_x + k);
        hn::Store(e1, d, along_y + k);
        hn::Store(e2, d, along_z + k);
      } else {
        V ex0, ex1, ex2, ex3, ey0, ey1, ey2, ey3;  // the components at the four corners
#if PIC_ENTRIES_FROM_TABLE
        if constexpr (kFromTable)
          TableEntries(d, s.cells32, first + k % kSub, ex0, ex1, ex2, ex3, ey0, ey1, ey2, ey3);
        else
#endif
          LoadEntries(d, entries + 8 * (k % kSub), ex0, ex1, ex2, ex3, ey0, ey1, ey2, ey3,
                      WideLanes<D>());
        hn::Store(hn::Add(hn::Add(hn::Mul(w00, ex0), hn::Mul(w01, ex1)),
                          hn::Add(hn::Mul(w10, ex2), hn::Mul(w11, ex3))),
                  d, along_x + k);
        hn::Store(hn::Add(hn::Add(hn::Mul(w00, ey0), hn::Mul(w01, ey1)),
                          hn::Add(hn::Mul(w10, ey2), hn::Mul(w11, ey3))),
                  d, along_y + k);
      }
    }
    for (long long k = 0; k < m; k += lanes) {  // the push, the move, the new stencils
      const long long p = i + k;
      const V x0 = hn::LoadU(d, x + p), y0 = hn::LoadU(d, y + p),
              z0 = Dim == 3 ? hn::LoadU(d, z + p) : zero;
      const V ox = hn::LoadU(d, vx + p), oy = hn::LoadU(d, vy + p),
              oz = Dim == 3 ? hn::LoadU(d, vz + p) : zero;
      const V nx = hn::Add(ox, hn::Mul(dv, hn::Load(d, along_x + k))),
              ny = hn::Add(oy, hn::Mul(dv, hn::Load(d, along_y + k))),
              nz = Dim == 3 ? hn::Add(oz, hn::Mul(dv, hn::Load(d, along_z + k))) : zero;
      hn::StoreU(nx, d, vx + p);
      hn::StoreU(ny, d, vy + p);
      V term = hn::Add(hn::Mul(ox, nx), hn::Mul(oy, ny));
      if constexpr (Dim == 3) {
        hn::StoreU(nz, d, vz + p);
        term = hn::Add(term, hn::Mul(oz, nz));
      }
      hn::Store(term, d, terms + k);
      V gx, gy, gz = zero;
      VI kx, ky, kz = zero_i;
      if constexpr (Cells) {
        const V tx = hn::Add(x0, hn::Mul(cdt_x, nx)), ty = hn::Add(y0, hn::Mul(cdt_y, ny)),
                tz = Dim == 3 ? hn::Add(z0, hn::Mul(cdt_z, nz)) : zero;
        // A sum of sane size (NaN fails the test) moves the cell by its floor, once wrapped;
        // the other lanes are redone below.
        auto sane = hn::And(hn::Lt(hn::Abs(tx), big), hn::Lt(hn::Abs(ty), big));
        if constexpr (Dim == 3) sane = hn::And(sane, hn::Lt(hn::Abs(tz), big));
        const auto along = [&](V t, const std::int32_t* HWY_RESTRICT c, VI n, V& g, VI& cell) {
          const V fl = hn::IfThenElseZero(sane, hn::Floor(t));
          cell = hn::Add(hn::LoadU(di, c + p), cv::TruncInRange(d, fl));
          cell = hn::IfThenElse(hn::Lt(cell, zero_i), hn::Add(cell, n), cell);
          cell = hn::IfThenElse(hn::Gt(cell, hn::Sub(n, hn::Set(di, 1))), hn::Sub(cell, n), cell);
          g = hn::Min(hn::Sub(t, fl), below_one);
          return hn::And(hn::Gt(cell, minus_one), hn::Lt(cell, n));
        };
        auto in_box = hn::And(along(tx, cx, ncx, gx, kx), along(ty, cy, ncy, gy, ky));
        if constexpr (Dim == 3) in_box = hn::And(in_box, along(tz, cz, ncz, gz, kz));
        const auto ok = hn::And(hn::RebindMask(d, in_box), sane);
        if (!hn::AllTrue(d, ok)) [[unlikely]] {
          // The others: kernels::move_along, lane by lane, from the stored cells and offsets.
          constexpr long long kMax = HWY_MAX_BYTES / sizeof(float);
          alignas(64) float o_l[3][kMax];
          alignas(64) std::int32_t k_l[3][kMax];
          float* HWY_RESTRICT offset[3] = {x, y, z};
          std::int32_t* HWY_RESTRICT cell[3] = {cx, cy, cz};
          const float* HWY_RESTRICT velocity[3] = {vx, vy, vz};
          const double length[3] = {s.lx, s.ly, s.lz};
          for (int a = 0; a < Dim; ++a)
            for (long long l = 0; l < lanes; ++l) {
              o_l[a][l] = offset[a][p + l];
              k_l[a][l] = cell[a][p + l];
              kernels::move_along(o_l[a][l], k_l[a] + l, s.cell_dt[a] * velocity[a][p + l],
                                  length[a]);
            }
          const auto ok_i = hn::RebindMask(di, ok);
          gx = hn::IfThenElse(ok, gx, hn::LoadU(d, o_l[0]));
          gy = hn::IfThenElse(ok, gy, hn::LoadU(d, o_l[1]));
          kx = hn::IfThenElse(ok_i, kx, hn::LoadU(di, k_l[0]));
          ky = hn::IfThenElse(ok_i, ky, hn::LoadU(di, k_l[1]));
          if constexpr (Dim == 3) {
            gz = hn::IfThenElse(ok, gz, hn::LoadU(d, o_l[2]));
            kz = hn::IfThenElse(ok_i, kz, hn::LoadU(di, k_l[2]));
          }
        }
        hn::StoreU(gx, d, x + p);
        hn::StoreU(gy, d, y + p);
        hn::StoreU(kx, di, cx + p);
        hn::StoreU(ky, di, cy + p);
        if constexpr (Dim == 3) {
          hn::StoreU(gz, d, z + p);
          hn::StoreU(kz, di, cz + p);
        }
        if (leavers != nullptr) {  // the block's cells (StepGeometry::stay_lo in cell units)
          auto stays = hn::And(hn::And(hn::Gt(kx, cell_x0), hn::Lt(kx, cell_x1)),
                               hn::And(hn::Gt(ky, cell_y0), hn::Lt(ky, cell_y1)));
          if constexpr (Dim == 3)
            stays = hn::And(stays, hn::And(hn::Gt(kz, cell_z0), hn::Lt(kz, cell_z1)));
          const std::int32_t* c[3] = {cx, cy, cz};
          if (!hn::AllTrue(di, stays)) [[unlikely]]
            for (long long l = p; l < p + lanes; ++l) {
              bool in = true;
              for (int a = 0; a < Dim; ++a) in = in && c[a][l] > cell_lo[a] && c[a][l] < cell_hi[a];
              if (!in) leavers->push_back(l);
            }
        }
      } else {
        const auto wrap = [&](V t, const V l) {
          t = hn::IfThenElse(hn::Lt(t, zero), hn::Add(t, l), t);
          return hn::IfThenElse(hn::Ge(t, l), hn::Sub(t, l), t);
        };
        V px = wrap(hn::Add(x0, hn::Mul(dt, nx)), lx);
        V py = wrap(hn::Add(y0, hn::Mul(dt, ny)), ly);
        V pz = Dim == 3 ? wrap(hn::Add(z0, hn::Mul(dt, nz)), lz) : zero;
        auto inside = hn::And(hn::And(hn::Ge(px, zero), hn::Lt(px, lx)),
                              hn::And(hn::Ge(py, zero), hn::Lt(py, ly)));
        if constexpr (Dim == 3) inside = hn::And(inside, hn::And(hn::Ge(pz, zero), hn::Lt(pz, lz)));
        if (!hn::AllTrue(d, inside)) [[unlikely]] {  // moved more than a box length
          const auto periodic = [&](V v, float lf, double l) {
            alignas(64) float lane[HWY_MAX_BYTES / sizeof(float)];
            hn::StoreU(v, d, lane);
            for (long long j = 0; j < lanes; ++j) lane[j] = float_periodic(lane[j], lf, l);
            return hn::LoadU(d, lane);
          };
          px = periodic(px, f.lx, s.lx);
          py = periodic(py, f.ly, s.ly);
          if constexpr (Dim == 3) pz = periodic(pz, f.lz, s.lz);
        }
        px = hn::Min(px, below_lx);  // a float in [0, L) as the arrays keep it
        py = hn::Min(py, below_ly);
        hn::StoreU(px, d, x + p);
        hn::StoreU(py, d, y + p);
        if constexpr (Dim == 3) {
          pz = hn::Min(pz, below_lz);
          hn::StoreU(pz, d, z + p);
        }
        if (leavers != nullptr) {
          auto stays = hn::And(hn::And(hn::Ge(px, stay_x0), hn::Le(px, stay_x1)),
                               hn::And(hn::Ge(py, stay_y0), hn::Le(py, stay_y1)));
          if constexpr (Dim == 3)
            stays = hn::And(stays, hn::And(hn::Ge(pz, stay_z0), hn::Le(pz, stay_z1)));
          if (!hn::AllTrue(d, stays)) [[unlikely]]  // NaN fails the tests: it leaves
            AppendLeavers<Dim>(s, x, y, z, p, lanes);
        }
        // The stencil at x_{n+1}.
        const V tx = hn::Mul(px, inv_dx), ty = hn::Mul(py, inv_dy), tz = hn::Mul(pz, inv_dz);
        kx = cv::TruncInRange(d, tx);
        ky = cv::TruncInRange(d, ty);
        gx = hn::Sub(tx, hn::ConvertTo(d, kx));
        gy = hn::Sub(ty, hn::ConvertTo(d, ky));
        if constexpr (Dim == 3) {
          kz = cv::TruncInRange(d, tz);
          gz = hn::Sub(tz, hn::ConvertTo(d, kz));
        }
      }
      // The deposit's stencil at x_{n+1}, at the image of it in the block.
      StoreImageNodes<Dim>(di, s, kx, ky, kz, node + k, sums, missed);
      hn::Store(gx, d, along_x + k);
      hn::Store(gy, d, along_y + k);
      if constexpr (Dim == 3) hn::Store(gz, d, along_z + k);
    }
    // The weights, and the sums of the energy terms and of the new v_x, lane by lane in order.
    for (long long k = 0; k < m; k += lanes) {
      const V gx = hn::Load(d, along_x + k), gy = hn::Load(d, along_y + k);
      if constexpr (Dim == 3) {
        StoreWeights3(d, q, gx, gy, hn::Load(d, along_z + k), share, k, WideLanes<D>());
      } else {
#if PIC_WEIGHTS_PERMUTED
        if constexpr (hn::MaxLanes(D()) == 16)
          StoreWeightsPermuted(d, q, gx, gy, weights + 4 * k);
        else
#endif
          StoreWeights(d, q, gx, gy, weights + 4 * k, WideLanes<D>());
      }
      energy = hn::Add(energy, Promoted(d, hn::Load(d, terms + k), WideLanes<D>()));
      momentum = hn::Add(momentum, Promoted(d, hn::LoadU(d, vx + i + k), WideLanes<D>()));
    }
    if constexpr (Dim == 3) {  // the deposit (add_float_cic3), particle after particle
      for (long long k = 0; k < m; ++k) {
        const long long c = node[k];
        if (missed && c < 0) continue;  // beyond the guards: counted above
        const double w[8] = {share[0][k], share[1][k], share[2][k], share[3][k],
                             share[4][k], share[5][k], share[6][k], share[7][k]};
        add_float_cic3(ne, c, row, col, w);
      }
    } else {
      // The deposit into cell sums (add_float_cell) in float_deposit_order: a whole chunk's
      // quarters in turn, a shorter one (the range's last) in order; the test for stencils
      // beyond the guards (counted above) only in chunks that have them.  (Written out with
      // constant offsets; the host-step tests compare it with float_deposit_order.)
      const auto deposit = [&](auto check) {
        const auto one = [&](long long k) {
          const long long c = node[k];
          if (decltype(check)::value && c < 0) return;
          AddCell(ne + 4 * c, weights + 4 * k);
        };
        if (m == kFloatChunk) {
          for (long long k = 0; k < kFloatQuarter; ++k) {
            one(k);
            one(k + kFloatQuarter);
            one(k + 2 * kFloatQuarter);
            one(k + 3 * kFloatQuarter);
          }
        } else {
          for (long long k = 0; k < m; ++k) one(k);
        }
      };
      if (missed)
        deposit(std::true_type{});
      else
        deposit(std::false_type{});
    }
    i += m;
  }
  const hn::DFromV<decltype(energy)> dd;
  sums.energy += hn::GetLane(hn::SumOfLanes(dd, energy));
  sums.momentum += hn::GetLane(hn::SumOfLanes(dd, momentum));
  return i;
}
// Whole vectors, then the rest one lane at a time (or every particle so: Step::one_lane).
template <int Dim, bool Cells>
long long FloatsIn(const Step<float>& s, long long begin, long long end, double* HWY_RESTRICT ne,
                   Sums& sums) {
  if (!s.one_lane) begin = FloatsOf<Dim, Cells>(hn::ScalableTag<float>(), s, begin, end, ne, sums);
  return FloatsOf<Dim, Cells>(hn::CappedTag<float, 1>(), s, begin, end, ne, sums);
}
long long CicFloats(const Step<float>& s, long long begin, long long end, double* HWY_RESTRICT ne,
                    Sums& sums) {
  return s.cx != nullptr ? FloatsIn<2, true>(s, begin, end, ne, sums)
                         : FloatsIn<2, false>(s, begin, end, ne, sums);
}
long long CicFloats3(const Step<float>& s, long long begin, long long end, double* HWY_RESTRICT ne,
                     Sums& sums) {
  return s.cx != nullptr ? FloatsIn<3, true>(s, begin, end, ne, sums)
                         : FloatsIn<3, false>(s, begin, end, ne, sums);
}

// The double loops below need more than one lane (the scalar target runs the scalar loop).
#if CUNUMPY_WIDE_VECTORS
// The particle arrays in their precision (double, or float promoted to double and demoted
// when stored: the double loops' arithmetic is double either way, as in host_step.cpp).
template <class D>
HWY_INLINE hn::Vec<D> LoadP(D d, const double* HWY_RESTRICT p) {
  return hn::LoadU(d, p);
}
template <class D>
HWY_INLINE hn::Vec<D> LoadP(D d, const float* HWY_RESTRICT p) {
  const hn::Rebind<float, D> df;
  return hn::PromoteTo(d, hn::LoadU(df, p));
}
template <class D>
HWY_INLINE void StoreP(D d, hn::Vec<D> v, double* HWY_RESTRICT p) {
  hn::StoreU(v, d, p);
}
template <class D>
HWY_INLINE void StoreP(D d, hn::Vec<D> v, float* HWY_RESTRICT p) {
  const hn::Rebind<float, D> df;
  hn::StoreU(hn::DemoteTo(df, v), df, p);
}
// Positions in [0, l) as the arrays store them (kernels::inside_as): a float that rounds up to
// l takes `below` (the largest float under l).
template <typename R, class D>
HWY_INLINE hn::Vec<D> AsStored(D d, hn::Vec<D> v, hn::Vec<D> l, hn::Vec<D> below) {
  if constexpr (std::is_same_v<R, double>) {
    (void)d, (void)l, (void)below;
    return v;
  } else {
    const hn::Rebind<float, D> df;
    const hn::Vec<D> back = hn::PromoteTo(d, hn::DemoteTo(df, v));
    return hn::IfThenElse(hn::Ge(back, l), below, back);
  }
}
// The largest value of R under l.
template <typename R>
double below_of(double l) {
  return static_cast<double>(kernels::inside_as<R>(std::nextafter(l, 0.0), l));
}
// Lanes outside [0, l) (moved more than a box length, or not finite) by kernels::periodic.
template <class D>
HWY_INLINE hn::Vec<D> PeriodicLanes(D d, hn::Vec<D> v, double l) {
  alignas(64) double lane[HWY_MAX_BYTES / sizeof(double)];
  hn::StoreU(v, d, lane);
  for (size_t k = 0; k < hn::Lanes(d); ++k)
    if (!(lane[k] >= 0.0 && lane[k] < l)) lane[k] = kernels::periodic(lane[k], l);
  return hn::LoadU(d, lane);
}

// kernels::quanta of a vector of weights, into `to`: the same truncation and rest (exact while
// |w 2^24| < 2^63; the deposit's weights are in [0, 1]; NaN lanes give Highway's conversion's
// value, not llround's).
template <class D>
HWY_INLINE void StoreQuanta(D d, hn::Vec<D> w, std::int64_t* HWY_RESTRICT to) {
  const hn::RebindToSigned<D> di;
  const auto v = hn::Mul(w, hn::Set(d, kernels::kQuantum)), t = hn::Trunc(v), rest = hn::Sub(v, t),
             one = hn::Set(d, 1.0);
  const auto up = hn::IfThenElseZero(hn::Ge(rest, hn::Set(d, 0.5)), one),
             down = hn::IfThenElseZero(hn::Le(rest, hn::Set(d, -0.5)), one);
  hn::StoreU(hn::ConvertTo(di, hn::Sub(hn::Add(t, up), down)), di, to);
}

// 2D and 3D CIC by double vectors (double particles, or float ones promoted and demoted as
// stored): lane by lane host_step.cpp's scalar loop.  Chunks of particles whose stencils at
// x_{n+1} wait in L1 for the deposit; E at x_n without gathers: a sub-chunk's stencils copied,
// particle after particle, from the lines along the last axis they touch (two nodes of Dim
// components each: CopyLines) and read back de-interleaved, a component a vector.  The deposit's
// terms: a real grid's fractions (their weights and the charge taken as it adds), an integer
// grid's quanta at the corners (kernels::quanta; corner 4a + 2b + c of the stencil in 3D,
// 2a + b in 2D).
template <int Dim, typename R, typename G>
long long VectorsOf(const Step<R>& s, long long begin, long long end, G* HWY_RESTRICT ne,
                    Sums& sums) {
  const hn::ScalableTag<double> d;
  const hn::Rebind<std::int32_t, decltype(d)> d32;
  using V = hn::Vec<decltype(d)>;
  const auto lanes = static_cast<long long>(hn::Lanes(d));
  constexpr long long kChunk = 512, kSub = Dim == 3 ? 32 : 64;
  constexpr int kLines = Dim == 3 ? 4 : 2, kCorners = 2 * kLines;
  if (lanes > kSub) return begin;
  constexpr bool kQuanta = !std::is_same_v<G, double>;
  constexpr long long kFractions = kQuanta ? 1 : kChunk, kQuantaAt = kQuanta ? kChunk : 1;
  alignas(64) std::int32_t node[kChunk], first[kSub];
  alignas(64) double fractions[Dim][kFractions];
  alignas(64) std::int64_t quanta_at[kCorners][kQuantaAt];
  alignas(64) double at_node[kCorners][Dim * kSub];  // [2 * line + node][Dim * particle + axis]
  const int row = static_cast<int>(s.row), col = static_cast<int>(s.col);
  const V inv_dx = hn::Set(d, s.inv_dx), inv_dy = hn::Set(d, s.inv_dy),
          inv_dz = hn::Set(d, s.inv_dz), lx = hn::Set(d, s.lx), ly = hn::Set(d, s.ly),
          lz = hn::Set(d, s.lz), dv = hn::Set(d, s.dv), dt = hn::Set(d, s.dt),
          one = hn::Set(d, 1.0), zero = hn::Zero(d), half_mass = hn::Set(d, s.half_mass);
  const auto rows = hn::Set(d32, row), cols = hn::Set(d32, col),
             base = hn::Set(d32, static_cast<std::int32_t>(s.base));
  V energy = zero, momentum = zero;
  R* HWY_RESTRICT x = s.x;
  R* HWY_RESTRICT y = s.y;
  R* HWY_RESTRICT z = s.z;
  R* HWY_RESTRICT vx = s.vx;
  R* HWY_RESTRICT vy = s.vy;
  R* HWY_RESTRICT vz = s.vz;
  const V below_lx = hn::Set(d, below_of<R>(s.lx)), below_ly = hn::Set(d, below_of<R>(s.ly)),
          below_lz = hn::Set(d, Dim == 3 ? below_of<R>(s.lz) : 0.0);
  const double* HWY_RESTRICT exy = s.exy;
  const double q = s.charge;
  // (No arrays of vectors: SVE's vectors have no size.)
  const V stay_x0 = hn::Set(d, s.stay_lo[0]), stay_x1 = hn::Set(d, s.stay_hi[0]),
          stay_y0 = hn::Set(d, s.stay_lo[1]), stay_y1 = hn::Set(d, s.stay_hi[1]),
          stay_z0 = hn::Set(d, s.stay_lo[2]), stay_z1 = hn::Set(d, s.stay_hi[2]);
  const auto first_node = [&](auto jx, auto jy, auto jz) {  // of a stencil's cells
    const auto c = hn::Add(hn::Mul(jx, rows), Dim == 3 ? hn::Mul(jy, cols) : jy);
    return hn::Add(Dim == 3 ? hn::Add(c, jz) : c, base);
  };
  std::vector<std::int64_t>* leavers = s.leavers;
  long long i = begin;
  while (end - i >= lanes) {
    const long long m = std::min(kChunk, (end - i) / lanes * lanes);
    bool missed = false;
    for (long long k = 0; k < m; k += lanes) {
      if (k % kSub == 0) {  // the next sub-chunk's stencils, copied in particle order
        const long long sub = std::min(kSub, m - k);
        for (long long l = 0; l < sub; l += lanes) {
          const long long p = i + k + l;
          const auto jx = cv::TruncInRange(d, hn::Mul(LoadP(d, x + p), inv_dx)),
                     jy = cv::TruncInRange(d, hn::Mul(LoadP(d, y + p), inv_dy)),
                     jz = Dim == 3 ? cv::TruncInRange(d, hn::Mul(LoadP(d, z + p), inv_dz)) : jy;
          hn::StoreU(first_node(jx, jy, jz), d32, first + l);
        }
        CopyLines<Dim, kLines>(exy, first, sub, row, col, at_node);
      }
      const long long p = i + k;
      // The field at x_n: kernels::stencil's CIC weights (truncation is floor for x >= 0),
      // summed over the corners in kernels::for_each_node's order.
      const V sx = hn::Mul(LoadP(d, x + p), inv_dx), sy = hn::Mul(LoadP(d, y + p), inv_dy),
              sz = Dim == 3 ? hn::Mul(LoadP(d, z + p), inv_dz) : zero;
      const V fx = hn::Sub(sx, hn::PromoteTo(d, cv::TruncInRange(d, sx))),
              fy = hn::Sub(sy, hn::PromoteTo(d, cv::TruncInRange(d, sy))),
              fz = Dim == 3 ? hn::Sub(sz, hn::PromoteTo(d, cv::TruncInRange(d, sz))) : zero;
      const V ax = hn::Sub(one, fx), ay = hn::Sub(one, fy), az = hn::Sub(one, fz);
      const V w00 = hn::Mul(ax, ay), w01 = hn::Mul(ax, fy), w10 = hn::Mul(fx, ay),
              w11 = hn::Mul(fx, fy);
      V e0 = zero, e1 = zero, e2 = zero;
      const long long at = Dim * (k % kSub);
      GatherCorners<Dim>(
          w00, w01, w10, w11, az, fz,
          [&](int line_node, V& c0, V& c1, V& c2) {
            if constexpr (Dim == 3)
              hn::LoadInterleaved3(d, at_node[line_node] + at, c0, c1, c2);
            else
              hn::LoadInterleaved2(d, at_node[line_node] + at, c0, c1);
          },
          e0, e1, e2);
      // The push and the move.
      const V ox = LoadP(d, vx + p), oy = LoadP(d, vy + p), oz = Dim == 3 ? LoadP(d, vz + p) : zero;
      const V nx = hn::Add(ox, hn::Mul(dv, e0)), ny = hn::Add(oy, hn::Mul(dv, e1)),
              nz = hn::Add(oz, hn::Mul(dv, e2));
      StoreP(d, nx, vx + p);
      StoreP(d, ny, vy + p);
      V en = hn::Add(hn::Mul(ox, nx), hn::Mul(oy, ny));
      if constexpr (Dim == 3) {
        StoreP(d, nz, vz + p);
        en = hn::Add(en, hn::Mul(oz, nz));
      }
      if (s.energies != nullptr)
        hn::StoreU(hn::Mul(half_mass, en), d, s.energies + p);
      else
        energy = hn::Add(energy, en);
      momentum = hn::Add(momentum, nx);
      const auto wrap = [&](V v, const V l) {
        v = hn::IfThenElse(hn::Lt(v, zero), hn::Add(v, l), v);
        return hn::IfThenElse(hn::Ge(v, l), hn::Sub(v, l), v);
      };
      V px = wrap(hn::Add(LoadP(d, x + p), hn::Mul(dt, nx)), lx);
      V py = wrap(hn::Add(LoadP(d, y + p), hn::Mul(dt, ny)), ly);
      V pz = Dim == 3 ? wrap(hn::Add(LoadP(d, z + p), hn::Mul(dt, nz)), lz) : zero;
      auto inside = hn::And(hn::And(hn::Ge(px, zero), hn::Lt(px, lx)),
                            hn::And(hn::Ge(py, zero), hn::Lt(py, ly)));
      if constexpr (Dim == 3) inside = hn::And(inside, hn::And(hn::Ge(pz, zero), hn::Lt(pz, lz)));
      if (!hn::AllTrue(d, inside)) [[unlikely]] {  // moved more than a box length
        px = PeriodicLanes(d, px, s.lx);
        py = PeriodicLanes(d, py, s.ly);
        if constexpr (Dim == 3) pz = PeriodicLanes(d, pz, s.lz);
      }
      px = AsStored<R>(d, px, lx, below_lx);
      py = AsStored<R>(d, py, ly, below_ly);
      StoreP(d, px, x + p);
      StoreP(d, py, y + p);
      if constexpr (Dim == 3) {
        pz = AsStored<R>(d, pz, lz, below_lz);
        StoreP(d, pz, z + p);
      }
      if (leavers != nullptr) {  // NaN fails the tests: it leaves
        auto stays = hn::And(hn::And(hn::Ge(px, stay_x0), hn::Le(px, stay_x1)),
                             hn::And(hn::Ge(py, stay_y0), hn::Le(py, stay_y1)));
        if constexpr (Dim == 3)
          stays = hn::And(stays, hn::And(hn::Ge(pz, stay_z0), hn::Le(pz, stay_z1)));
        if (!hn::AllTrue(d, stays)) [[unlikely]]
          AppendLeavers<Dim>(s, x, y, z, p, lanes);
      }
      // The stencil at x_{n+1}, for the deposit, at the image of it in the block.
      const V tx = hn::Mul(px, inv_dx), ty = hn::Mul(py, inv_dy),
              tz = Dim == 3 ? hn::Mul(pz, inv_dz) : zero;
      const auto kx = cv::TruncInRange(d, tx), ky = cv::TruncInRange(d, ty),
                 kz = Dim == 3 ? cv::TruncInRange(d, tz) : ky;
      const V gx = hn::Sub(tx, hn::PromoteTo(d, kx)), gy = hn::Sub(ty, hn::PromoteTo(d, ky)),
              gz = Dim == 3 ? hn::Sub(tz, hn::PromoteTo(d, kz)) : zero;
      StoreImageNodes<Dim>(d32, s, kx, ky, kz, node + k, sums, missed);
      if constexpr (kQuanta) {  // the weights in kernels::for_each_node's order: (w_x w_y) w_z
        const V hx = hn::Sub(one, gx), hy = hn::Sub(one, gy), hz = hn::Sub(one, gz);
        const auto corner_quanta = [&](V wab, int c) {
          if constexpr (Dim == 3) {
            StoreQuanta(d, hn::Mul(wab, hz), quanta_at[2 * c] + k);
            StoreQuanta(d, hn::Mul(wab, gz), quanta_at[2 * c + 1] + k);
          } else {
            StoreQuanta(d, wab, quanta_at[c] + k);
          }
        };
        corner_quanta(hn::Mul(hx, hy), 0);
        corner_quanta(hn::Mul(hx, gy), 1);
        corner_quanta(hn::Mul(gx, hy), 2);
        corner_quanta(hn::Mul(gx, gy), 3);
      } else {
        hn::StoreU(gx, d, fractions[0] + k);
        hn::StoreU(gy, d, fractions[1] + k);
        if constexpr (Dim == 3) hn::StoreU(gz, d, fractions[Dim - 1] + k);
      }
    }
    for (long long k = 0; k < m; ++k) {  // the deposit, in host_step.cpp's order
      const int n0 = node[k];
      if (missed && n0 < 0) continue;       // beyond the guards: counted above
      constexpr int kZ = Dim == 3 ? 2 : 1;  // nodes along z
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
          G* HWY_RESTRICT line = ne + n0 + a * row + b * (Dim == 3 ? col : 1);
          if constexpr (kQuanta) {  // the deterministic deposit's quantised weights
            for (int c = 0; c < kZ; ++c) line[c] += quanta_at[kZ * (2 * a + b) + c][k];
          } else {
            const double wx = a == 0 ? 1.0 - fractions[0][k] : fractions[0][k],
                         wy = b == 0 ? 1.0 - fractions[1][k] : fractions[1][k], wab = wx * wy;
            if constexpr (Dim == 3) {
              const double fz = fractions[Dim - 1][k];
              line[0] += q * (wab * (1.0 - fz));
              line[1] += q * (wab * fz);
            } else {
              line[0] += q * wab;
            }
          }
        }
    }
    i += m;
  }
  sums.energy += hn::GetLane(hn::SumOfLanes(d, energy));
  sums.momentum += hn::GetLane(hn::SumOfLanes(d, momentum));
  return i;
}
// The entry points HWY_EXPORT names: 2D and 3D, double and float particles, real and integer
// grids.
#define PIC_VECTORS_OF(name, dim, R, G)                                                \
  long long name(const Step<R>& s, long long begin, long long end, G* HWY_RESTRICT ne, \
                 Sums& sums) {                                                         \
    return VectorsOf<dim>(s, begin, end, ne, sums);                                    \
  }
PIC_VECTORS_OF(CicVectors, 2, double, double)
PIC_VECTORS_OF(CicVectorsInt, 2, double, std::int64_t)
PIC_VECTORS_OF(CicVectorsIntF, 2, float, std::int64_t)
PIC_VECTORS_OF(Cic3Vectors, 3, double, double)
PIC_VECTORS_OF(Cic3VectorsInt, 3, double, std::int64_t)
PIC_VECTORS_OF(Cic3VectorsIntF, 3, float, std::int64_t)
#undef PIC_VECTORS_OF
#else
// One lane: host_step.cpp's scalar loop does the work.
#define PIC_NO_VECTORS(name, R, G)                                        \
  long long name(const Step<R>&, long long begin, long long, G*, Sums&) { \
    return begin;                                                         \
  }
PIC_NO_VECTORS(CicVectors, double, double)
PIC_NO_VECTORS(CicVectorsInt, double, std::int64_t)
PIC_NO_VECTORS(CicVectorsIntF, float, std::int64_t)
PIC_NO_VECTORS(Cic3Vectors, double, double)
PIC_NO_VECTORS(Cic3VectorsInt, double, std::int64_t)
PIC_NO_VECTORS(Cic3VectorsIntF, float, std::int64_t)
#undef PIC_NO_VECTORS
#endif

void Quanta(const double* HWY_RESTRICT w, long long n, std::int64_t* HWY_RESTRICT out) {
  long long i = 0;
#if CUNUMPY_WIDE_VECTORS
  const hn::ScalableTag<double> d;
  const auto lanes = static_cast<long long>(hn::Lanes(d));
  for (; i + lanes <= n; i += lanes) StoreQuanta(d, hn::LoadU(d, w + i), out + i);
#endif
  for (; i < n; ++i) out[i] = kernels::quanta(w[i]);
}

// Cells [begin, end) of the cells (fill_cell_fields), every corner inside the grid: each
// component's two pairs of adjacent corners rounded to float and written as one entry, streamed
// to memory (the table, 8 MB on a 512^2 grid, is rewritten every step and not read before),
// fenced before the threads meet.
void FloatCells(const double* HWY_RESTRICT ex, const double* HWY_RESTRICT ey, long long row,
                long long begin, long long end, float* HWY_RESTRICT out) {
#if !CUNUMPY_WIDE_VECTORS
  for (long long c = begin; c < end; ++c) {
    const long long at[4] = {c, c + 1, c + row, c + row + 1};
    for (int k = 0; k < 4; ++k) {
      out[8 * c + k] = static_cast<float>(ex[at[k]]);
      out[8 * c + 4 + k] = static_cast<float>(ey[at[k]]);
    }
  }
#else
  const hn::CappedTag<double, 2> d2;
  const hn::Rebind<float, decltype(d2)> f2;
  const hn::CappedTag<float, 4> f4;
  const bool aligned = reinterpret_cast<std::uintptr_t>(out) % 16 == 0;  // (a vector's storage)
  const auto entry = [&](const double* e, long long c) {
    return hn::Combine(f4, hn::DemoteTo(f2, hn::LoadU(d2, e + c + row)),
                       hn::DemoteTo(f2, hn::LoadU(d2, e + c)));
  };
  for (long long c = begin; c < end; ++c) {
    if (aligned) {
      hn::Stream(entry(ex, c), f4, out + 8 * c);
      hn::Stream(entry(ey, c), f4, out + 8 * c + 4);
    } else {
      hn::StoreU(entry(ex, c), f4, out + 8 * c);
      hn::StoreU(entry(ey, c), f4, out + 8 * c + 4);
    }
  }
  hwy::FlushStream();
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace pic::host_step
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pic::host_step {

HWY_EXPORT(CicVectors);
HWY_EXPORT(CicVectorsInt);
HWY_EXPORT(CicFloats);
HWY_EXPORT(CicVectorsIntF);
HWY_EXPORT(Cic3Vectors);
HWY_EXPORT(Cic3VectorsInt);
HWY_EXPORT(CicFloats3);
HWY_EXPORT(Cic3VectorsIntF);
HWY_EXPORT(FloatCells);
HWY_EXPORT(Quanta);

bool host_vectors() {
  return cunumpy::host_target() != cunumpy::HostTarget::portable;
}

#define PIC_VECTORS(name, kernel, R, G)                                                 \
  long long name(const Step<R>& s, long long begin, long long end, G* ne, Sums& sums) { \
    if (!host_vectors()) return begin;                                                  \
    return CUNUMPY_HOST_DISPATCH(kernel)(s, begin, end, ne, sums);                      \
  }
PIC_VECTORS(cic_vectors, CicVectors, double, double)
PIC_VECTORS(cic_vectors, CicVectorsInt, double, std::int64_t)
PIC_VECTORS(cic_vectors, CicVectorsIntF, float, std::int64_t)
PIC_VECTORS(cic3_vectors, Cic3Vectors, double, double)
PIC_VECTORS(cic3_vectors, Cic3VectorsInt, double, std::int64_t)
PIC_VECTORS(cic3_vectors, Cic3VectorsIntF, float, std::int64_t)
#undef PIC_VECTORS
// One lane at a time (Step::one_lane, and every particle under the portable choice): on the
// baseline target, whose bits the vector targets' lanes give.
long long cic_floats(const Step<float>& s, long long begin, long long end, double* ne, Sums& sums) {
  if (host_vectors() && !s.one_lane)
    return CUNUMPY_HOST_DISPATCH(CicFloats)(s, begin, end, ne, sums);
  Step<float> one = s;
  one.one_lane = true;
  return HWY_STATIC_DISPATCH(CicFloats)(one, begin, end, ne, sums);
}

long long cic3_floats(const Step<float>& s, long long begin, long long end, double* ne,
                      Sums& sums) {
  if (host_vectors() && !s.one_lane)
    return CUNUMPY_HOST_DISPATCH(CicFloats3)(s, begin, end, ne, sums);
  Step<float> one = s;
  one.one_lane = true;
  return HWY_STATIC_DISPATCH(CicFloats3)(one, begin, end, ne, sums);
}

void quanta(const double* w, long long n, std::int64_t* out) {
  if (host_vectors())
    CUNUMPY_HOST_DISPATCH(Quanta)(w, n, out);
  else
    HWY_STATIC_DISPATCH(Quanta)(w, n, out);
}

// Cell c's entry: E_x at its four corners (c, c + 1, c + row, c + row + 1), then E_y, in float:
// the interior's cells by vectors (FloatCells, on the library's target, the baseline's under
// `portable`), the last row and column's (their entries are never read) with zeros past the grid.
void fill_cell_fields(long long nodes, long long row, const double* ex, const double* ey,
                      std::vector<float>& cells) {
  const auto interior_cells =
      host_vectors() ? CUNUMPY_HOST_DISPATCH(FloatCells) : HWY_STATIC_DISPATCH(FloatCells);
  cells.resize(static_cast<std::size_t>(8 * nodes));
  float* out = cells.data();
  const long long interior = std::max(0LL, nodes - row - 1);  // cells whose corners all exist
  constexpr long long kPart = 4096;
#pragma omp parallel for schedule(static)
  for (long long part = 0; part < (interior + kPart - 1) / kPart; ++part)
    interior_cells(ex, ey, row, part * kPart, std::min(interior, (part + 1) * kPart), out);
  for (long long c = interior; c < nodes; ++c) {
    const long long at[4] = {c, c + 1, c + row, c + row + 1};
    for (int k = 0; k < 4; ++k) {
      out[8 * c + k] = at[k] < nodes ? static_cast<float>(ex[at[k]]) : 0.0f;
      out[8 * c + 4 + k] = at[k] < nodes ? static_cast<float>(ey[at[k]]) : 0.0f;
    }
  }
}

}  // namespace pic::host_step
#endif  // HWY_ONCE
