// apps/pic/host_step.hpp: the host backend's particle step in one pass (1D to 3D, CIC and
// TSC): each particle's field is gathered, its velocity and position advanced, and its charge
// at the new position deposited into the calling thread's grid, while its numbers are in
// registers.  Separate passes (gather, push, deposit) sweep the particle arrays three times and
// keep the field at the particles in two more arrays; this one reads x, y, vx, vy once and
// writes them once.
//
// It runs on the layout's guarded local grid (grid.hpp): node (i, j) of the whole grid at
// base + i * row + j.  A particle's new position is wrapped into the box, and its stencil
// deposited at the periodic image of it that lies in the block (the block's own nodes or its
// guards), which the layout then sums into the owners: the same contribution, bit for bit, as
// the separate deposit's on the owning rank after the migration.  A particle whose image lies
// beyond the guards (it moved more than the guards between two steps) is not deposited but
// counted (Sums::undeposited): the caller redeposits every particle after the migration.
//
// The same math per particle as the separate kernels (kernels::stencil's weights, the
// gather's sums in the same order, the push's roundings), but for float particles on real 2D
// and 3D CIC grids, below.  Deterministic (integer grids): each
// node's weight quantised to multiples of 2^-24 and summed as integers (exact in any order),
// as DeterministicStep does, and the kinetic energy left per particle for a fixed-order sum.
// Float particles on real 2D and 3D CIC grids (StepGeometry::floats) step in float: the gather,
// push, move and stencil of each particle in float lanes (twice double's: cic_floats,
// cic3_floats), E rounded to float once per step, the kinetic energy's terms in float, the
// deposit's weights and every sum in double; the deterministic step keeps double's arithmetic
// (its bits are every backend's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace pic::host_step {

// What a step is about, but for the particle arrays (Step adds them in their precision).
struct StepGeometry {
  long long n;
  int dim;                        // 1, 2 or 3
  int order;                      // 1: CIC, 2: TSC
  double inv_dx, inv_dy, inv_dz;  // 1 / cell size
  double lx, ly, lz;              // box
  double dv, dt;                  // v += dv * E; x += dt * v
  double charge;  // a particle's density per unit weight (unused with integer grids)
  // The guarded local grid: node (i, j) of the whole grid at base + i * row + j in 2D, node
  // (i, j, l) at base + i * row + j * col + l in 3D; nodes of the block and its guards i in
  // [i_lo, i_hi], j in [j_lo, j_hi], l in [k_lo, k_hi] (global node numbers); nx, ny, nz: the
  // whole grid's nodes (the periodic images lie nx, ny, nz apart).
  long long base, row, col, nx, ny, nz;
  long long i_lo, i_hi, j_lo, j_hi, k_lo, k_hi;
  bool whole_box;  // the block is the box: every image lies in it
  // E at the guarded nodes, its components interleaved (E_x, E_y, E_z: dim doubles a node);
  // null with `floats`, whose loops (cic_floats, cic3_floats: every particle) read cells32 (2D)
  // or nodes32 (3D).
  const double* exy;
  // 2D and 3D CIC: whole vectors of particles first (cic_vectors, cic3_vectors), then the
  // scalar loop.
  bool vectors = false;
  // Float particles, 2D and 3D CIC, real grids (`floats`): each particle's arithmetic in float,
  // the loop over float lanes (cic_floats, cic3_floats) reading E in float, in 2D from the cells
  // (fill_cell_fields), in 3D from the nodes (fill_node_fields: E_x, E_y, E_z and a zero, 16
  // bytes a node); every particle one lane at a time on the baseline target with `one_lane`
  // (the same bits).
  bool floats = false;
  bool one_lane = false;
  const float* cells32 = nullptr;
  const float* nodes32 = nullptr;
  // Deterministic: integer grids, and the particles' kinetic energies (mass / 2 v_old . v_new)
  // into `energies` instead of a sum.
  bool integer = false;
  double* energies = nullptr;
  double half_mass = 0;  // with `energies`
  // With `leavers`: the rows whose new position lies outside [stay_lo, stay_hi] along an axis
  // (or is NaN) are appended there, in increasing order (push_and_deposit gives each thread a
  // list of its own and joins them): the rows a migration needs to examine.
  double stay_lo[3] = {0.0, 0.0, 0.0}, stay_hi[3] = {0.0, 0.0, 0.0};
  std::vector<std::int64_t>* leavers = nullptr;
  // Mixed precision (Step::cx set): positions in cell units, cell + offset; inv_dx, inv_dy,
  // inv_dz are 1, lx, ly, lz the cells per axis, and a move is cell_dt[a] * v (dt / cell size):
  // the builtin push's arithmetic (kernels::push_particle), bit for bit.  The stay region is
  // in cell units too: [first cell, the double below the block's end] (a particle stays when
  // its cell is the block's, as the migration decides for cells).
  double cell_dt[3] = {0.0, 0.0, 0.0};
};

// Real: the particles' precision (double or float).  The arithmetic is double, each new
// position and velocity rounded once when stored (positions kept inside the box), unless
// StepGeometry::floats (float particles, 2D or 3D CIC, real grids): then it is float.
template <typename Real>
struct Step : StepGeometry {
  Real* x = nullptr;
  Real* y = nullptr;  // 2D and 3D
  Real* z = nullptr;  // 3D
  Real* vx = nullptr;
  Real* vy = nullptr;  // 2D and 3D
  Real* vz = nullptr;  // 3D
  // Mixed precision: the cells (x, y, z the offsets in them); the float lanes in 2D and 3D CIC
  // with real grids, the scalar loops otherwise.
  std::int32_t* cx = nullptr;
  std::int32_t* cy = nullptr;  // 2D and 3D
  std::int32_t* cz = nullptr;  // 3D
};

// The float step's geometry (StepGeometry::floats): rounded once to float; the largest floats
// under the box's lengths; the stay region rounded inwards (a float inside it lies inside the
// region in double).
struct FloatStep {
  float inv_dx, inv_dy, lx, ly, dv, dt, below_lx, below_ly;
  float stay_lo[2], stay_hi[2];
};
FloatStep float_step(const StepGeometry& s);
// The same with z's (the 3D float step).
struct FloatStep3 : FloatStep {
  float inv_dz, lz, below_lz, stay_lo_z, stay_hi_z;
};
FloatStep3 float_step3(const StepGeometry& s);
// A float position after the move's one wrap by the float length lf: itself inside [0, lf),
// else kernels::periodic_as's answer for the box length l.
float float_periodic(float p, float lf, double l);
// The float step's CIC stencil along an axis at float position p (inv: 1 / cell size in float):
// first node and the fraction g, as the float lanes compute them.  The deposit's weights are
// products of q - q g, q g and 1 - g, g in double (deposit_float_cic2).
inline float float_stencil(float p, float inv, long long& first) {
  const float t = p * inv;
  const auto j = static_cast<std::int32_t>(t);
  first = j;
  return t - static_cast<float>(j);
}
// The float step's CIC deposit of a particle whose stencil starts at guarded node c with
// fractions gx, gy: weights (q - q gx, q gx) along x and (1 - gy, gy) along y in double (six
// roundings where charge times each product takes eight: float_cic2_weights), the same in the
// vector loop (which computes them a vector of particles at a time) and in the deposit alone
// (a restart redeposits the push's density bit for bit).  Into cell sums (ThreadGrids::cells,
// add_float_cell): entry c holds, at 4c to 4c + 3, the sums of the weights that the particles
// whose stencil starts at node c give its four nodes; fold adds each node's four entries.  A
// particle's deposit is then one 32-byte read, add and write, where four nodes took four.
struct FloatCic2Weights {
  double w00, w01, w10, w11;  // nodes c, c + 1, c + row, c + row + 1
};
inline FloatCic2Weights float_cic2_weights(double charge, float gx, float gy) {
  const double fx = gx, fy = gy, qx = charge * fx, qa = charge - qx, ay = 1.0 - fy;
  return {qa * ay, qa * fy, qx * ay, qx * fy};
}
// A particle's four weights w (float_cic2_weights's order) into cell c's sums.
inline void add_float_cell(double* cells, long long c, const double* w) {
  double* sums = cells + 4 * c;
  for (int k = 0; k < 4; ++k) sums[k] += w[k];
}
// The order of the float step's deposit, the same in every loop: chunks of kFloatChunk
// particles from the start of a thread's range, each chunk's four quarters in turn, one
// particle of each (particles k, k + 128, k + 256, k + 384, then k + 1, ...): consecutive
// particles, which a sorted array puts in the same cell, then do not wait for each other's
// sums; a shorter chunk (the range's last) in particle order.  Position t of a chunk of m
// particles deposits its particle float_deposit_order(t, m).
constexpr long long kFloatChunk = 512, kFloatQuarter = kFloatChunk / 4;
inline long long float_deposit_order(long long t, long long m) {
  return m == kFloatChunk ? (t % 4) * kFloatQuarter + t / 4 : t;
}

// The 3D float step's CIC deposit of a particle whose stencil starts at guarded node c with
// fractions gx, gy, gz: weights (q - q gx, q gx) along x, (1 - gy, gy) along y, their products,
// then (1 - gz, gz) along z, in double (float_cic3_weights: node (a, b, l) of the stencil at
// w[4a + 2b + l], at c + a row + b col + l), the same in the vector loop and in the deposit
// alone.  Into node grids (the 2D step's cell sums, ThreadGrids::cells, are not used in 3D).
inline void float_cic3_weights(double charge, float gx, float gy, float gz, double* w) {
  const double fx = gx, fy = gy, fz = gz, qx = charge * fx, qa = charge - qx, ay = 1.0 - fy,
               az = 1.0 - fz;
  const double wab[4] = {qa * ay, qa * fy, qx * ay, qx * fy};
  for (int k = 0; k < 4; ++k) {
    w[2 * k] = wab[k] * az;
    w[2 * k + 1] = wab[k] * fz;
  }
}
inline void add_float_cic3(double* ne, long long c, long long row, long long col, const double* w) {
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      double* line = ne + c + a * row + b * col;
      line[0] += w[4 * a + 2 * b];
      line[1] += w[4 * a + 2 * b + 1];
    }
}

struct Sums {
  double energy = 0.0;        // sum of v_old . v_new (time-centred kinetic energy / (m / 2))
  double momentum = 0.0;      // sum of v_x after the push
  long long undeposited = 0;  // particles whose image lay beyond the guards
};

// 64-byte aligned storage (a cell's four sums, 32 bytes, within one cache line).
template <typename T>
struct LineAllocator {
  using value_type = T;
  LineAllocator() = default;
  template <typename U>
  LineAllocator(const LineAllocator<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}));
  }
  void deallocate(T* p, std::size_t) { ::operator delete (p, std::align_val_t{64}); }
  template <typename U>
  bool operator==(const LineAllocator<U>&) const {
    return true;
  }
};

// One grid per thread of the team (`nodes` doubles, 4 `nodes` as cell sums, or int64 with
// integer grids), cleared.
// Real grids hold cell sums (`cells`: four sums an entry, add_float_cell, `row` the grid's)
// while the 2D float step (StepGeometry::floats) deposits into them: push_and_deposit and
// deposit turn them into cell sums or back as the step needs (keeping each node's sum), fold
// adds each node's entries.
struct ThreadGrids {
  std::vector<std::vector<double, LineAllocator<double>>> real;
  std::vector<std::vector<std::int64_t>> integer;
  bool cells = false;
  long long row = 0;  // with `cells`
  void ensure(int threads, long long nodes, bool integer_grids);
  void use_cells(bool on, long long grid_row);
};

// Particles [0, n) over the OpenMP threads (the guarded grid's nodes are 32-bit indices), each
// thread depositing into its grid of `grids`; with integer grids and `energies`, the energy sum
// is left to the caller.  With s.leavers, the rows outside the stay region end there.
template <typename Real>
Sums push_and_deposit(const Step<Real>& s, ThreadGrids& grids);
// The deposit alone, at the particles' positions (the same stencils): for the first step and
// after a step that left particles undeposited.
template <typename Real>
void deposit(const Step<Real>& s, ThreadGrids& grids);
// ne (the guarded grid, `nodes`) = the sum of the threads' grids (integers: exact, as doubles);
// the grids are cleared for the next deposit.
void fold(ThreadGrids& grids, long long nodes, double* ne);

// E on the guarded nodes (guards filled) interleaved for the loops: (E_x, E_y, E_z) triples in
// 3D, (E_x, E_y) pairs in 2D, E_x in 1D (ey, ez null past the dimension).
void interleave_fields(long long nodes, const double* ex, const double* ey, const double* ez,
                       std::vector<double>& exy);
// The 3D float step's E (StepGeometry::nodes32): node c's E_x, E_y, E_z rounded to float at
// 4c, 4c + 1, 4c + 2, and a zero at 4c + 3 (a node 16 bytes, two along z one 32-byte line).
void fill_node_fields(long long nodes, const double* ex, const double* ey, const double* ez,
                      std::vector<float>& nodes32);

}  // namespace pic::host_step
