// tests/pic/host_step_case.hpp: one particle step of the mini-app's host loop (host_step.hpp)
// on a small random 2D or 3D CIC case (far movers, a position that rounds to the last node),
// through the vector loop or the scalar loop alone, on a grid that is the whole box or a block of
// it (a decomposed rank's, whose particles' images may lie beyond its guards), with real or integer
// (deterministic) grids.  Float particles on real grids take the float step (host_step.hpp:
// StepGeometry::floats), whose scalar loop is its vector loop one lane at a time; so do mixed
// precision's (cells and offsets).  Shared by
// test_pic and tests/arm/pic_step_check.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "host_step.hpp"
#include "host_step_simd.hpp"
#include "pic_kernels.hpp"

namespace pic::host_step {

struct CaseResult {
  std::vector<double> x, y, z, vx, vy, vz, ne, energies;
  Sums sums;
  // On a block: the rows the step found outside the block (its stay region).
  std::vector<std::int64_t> leavers;
  // On the whole box (or a block without far movers): the density of the deposit alone
  // (host_step::deposit) at the new
  // positions, which must be the push's (a restart redeposits).
  std::vector<double> ne_redeposited;
  // Mixed precision: the stored offsets and cells per axis.
  std::vector<float> offsets[3];
  std::vector<std::int32_t> cells[3];
};

// A guarded block of an nx x ny (x nz in 3D) periodic grid: nodes [x0, x0 + lnx) x [y0, y0 +
// lny) (x [z0, z0 + lnz)) with `guard` nodes around, E random on the whole grid (the guards its
// periodic images).
struct CaseGrid {
  int dim = 2;
  long long nx = 16, ny = 12, nz = 1, x0 = 0, y0 = 0, z0 = 0, lnx = 16, lny = 12, lnz = 1,
            guard = 2;
  double dx = 1.0;            // the cells' size along x (the box: nx hx() x ny hy() [x nz hz()])
  double sy = 1.0, sz = 1.0;  // the cells' size along y and z over dx
  // Without far movers no particle leaves a block's guards: the deposit alone runs on blocks
  // too.
  bool far_movers = true;
  double hx() const { return dx; }
  double hy() const { return dx * sy; }
  double hz() const { return dx * sz; }
  // The cells' size and the far movers as a test names them ("" for cubic cells of 1).
  std::string cells_text() const {
    std::string t;
    if (dx != 1.0) t += ", cells of " + std::to_string(dx);
    if (sy != 1.0 || sz != 1.0)
      t += " (y " + std::to_string(sy) + " x, z " + std::to_string(sz) + " x)";
    if (!far_movers) t += ", no far movers";
    return t;
  }
  long long col() const { return dim == 3 ? lnz + 2 * guard : 1; }
  long long row() const { return (lny + 2 * guard) * col(); }
  long long nodes() const { return (lnx + 2 * guard) * row(); }
  long long base() const {
    return (guard - x0) * row() + (guard - y0) * col() + (dim == 3 ? guard - z0 : 0);
  }
  bool whole() const { return lnx == nx && lny == ny && lnz == nz; }
  // The same in 3D: a 10 x 8 x 6 box.
  static CaseGrid three() {
    CaseGrid g;
    g.dim = 3;
    g.nx = g.lnx = 10;
    g.ny = g.lny = 8;
    g.nz = g.lnz = 6;
    return g;
  }
};

// The cases the vector loops are checked on: the whole box and a decomposed rank's block, 2D
// and 3D, the same with cells of pi / 4 (lengths no float holds exactly), in 3D with cells of
// three sizes (pi / 4 along x, 1.37 times that along y, 0.61 times along z), and a 3D block
// without far movers (its deposit alone checked too).
inline std::vector<CaseGrid> vector_loop_cases() {
  CaseGrid whole, block, whole3 = CaseGrid::three();
  block.x0 = 4;
  block.lnx = 8;
  block.y0 = 3;
  block.lny = 6;
  CaseGrid scaled = whole, scaled_block = block;
  scaled.dx = scaled_block.dx = 0.78539816339744831;
  CaseGrid block3 = whole3;
  block3.x0 = 2;
  block3.lnx = 5;
  block3.y0 = 3;
  block3.lny = 4;
  block3.z0 = 1;
  block3.lnz = 3;
  CaseGrid boxes3 = whole3, boxes_block3 = block3;
  for (CaseGrid* g : {&boxes3, &boxes_block3}) {
    g->dx = 0.78539816339744831;
    g->sy = 1.37;
    g->sz = 0.61;
  }
  boxes_block3.far_movers = false;
  return {whole, block, whole3, block3, scaled, scaled_block, boxes3, boxes_block3};
}

// A particle's charge in the cases: not a power of two, so the weights' products round and each
// density sum depends on the order of its terms, which the vector loop, its one-lane loop and
// the deposit alone must share.
inline constexpr double kCaseCharge = 0.3;

// Real: the particles' precision (the arrays of the step; the result holds their values).
// `in_cells` (Real float): mixed precision, each position a cell and an offset in it (the result's
// positions in cell units, cell + offset; on a block, the stay region the block's cells).
// `float_lanes` false: float particles on real grids in double arithmetic (the scalar loop).
template <typename Real = double>
CaseResult run_case(bool vectors, const CaseGrid& g = {}, bool integer = false,
                    bool in_cells = false, bool float_lanes = true) {
  const long long n = 1003;
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const bool three = g.dim == 3;
  const long long cells_total = g.nx * g.ny * g.nz;
  std::vector<double> gex(cells_total), gey(cells_total), gez(cells_total);
  for (auto& e : gex) e = u(gen) - 0.5;
  for (auto& e : gey) e = u(gen) - 0.5;
  for (auto& e : gez) e = u(gen) - 0.5;
  std::vector<double> ex(g.nodes()), ey(g.nodes()), ez(g.nodes()), exy;
  std::vector<float> cells32, nodes32;
  const long long lz = three ? g.lnz + 2 * g.guard : 1;
  for (long long i = 0; i < g.lnx + 2 * g.guard; ++i)
    for (long long j = 0; j < g.lny + 2 * g.guard; ++j)
      for (long long l = 0; l < lz; ++l) {
        const long long gi = ((g.x0 + i - g.guard) % g.nx + g.nx) % g.nx;
        const long long gj = ((g.y0 + j - g.guard) % g.ny + g.ny) % g.ny;
        const long long gl = three ? ((g.z0 + l - g.guard) % g.nz + g.nz) % g.nz : 0;
        const long long at = i * g.row() + j * g.col() + l, from = (gi * g.ny + gj) * g.nz + gl;
        ex[at] = gex[from];
        ey[at] = gey[from];
        ez[at] = gez[from];
      }
  interleave_fields(g.nodes(), ex.data(), ey.data(), three ? ez.data() : nullptr, exy);
  // Float particles on real grids: the step's arithmetic in float (the mini-app's fused step);
  // the scalar loop is the float loop one lane at a time.
  const bool floats = std::is_same_v<Real, float> && !integer && float_lanes;
  if (floats && !three) fill_cell_fields(g.nodes(), g.row(), ex.data(), ey.data(), cells32);
  if (floats && three) fill_node_fields(g.nodes(), ex.data(), ey.data(), ez.data(), nodes32);
  CaseResult r;
  r.x.resize(n);
  r.y.resize(n);
  r.z.assign(n, 0.0);
  r.vx.resize(n);
  r.vy.resize(n);
  r.vz.assign(n, 0.0);
  r.energies.assign(n, 0.0);
  const double h = g.hx(), hy = g.hy(), hz = g.hz();
  for (long long i = 0; i < n; ++i) {  // at x_n in the block
    r.x[i] = (static_cast<double>(g.x0) + u(gen) * static_cast<double>(g.lnx)) * h;
    r.y[i] = (static_cast<double>(g.y0) + u(gen) * static_cast<double>(g.lny)) * hy;
    r.vx[i] = 4.0 * (u(gen) - 0.5) * h;
    r.vy[i] = 4.0 * (u(gen) - 0.5) * hy;
    if (three) {
      r.z[i] = (static_cast<double>(g.z0) + u(gen) * static_cast<double>(g.lnz)) * hz;
      r.vz[i] = 4.0 * (u(gen) - 0.5) * hz;
    }
  }
  if (g.far_movers) {
    if (three) r.vz[21] = -17.0 * g.nz * hz;
    r.vx[17] = 31.0 * g.nx * h;  // far moves, inside the vector loop's range
    r.vy[18] = -22.0 * g.ny * hy;
    r.x[40] = (static_cast<double>(g.x0 + g.lnx) - 0.5) * h;  // moves 3 cells: beyond the guards
    r.vx[40] = 30.0 * h;
    r.x[17] = (static_cast<double>(g.x0 + g.lnx) - 0.25) * h;  // 49.6 cells on: beyond them too
  }
  if (g.whole()) r.x[19] = std::nextafter(g.nx * h, 0.0);  // the last node
  // The particles in the step's precision (rounded once from the doubles drawn above; a
  // position kept below the box's end, as the mini-app stores it: particle 19 rounds up to it
  // in float).
  const auto positions = [](const std::vector<double>& v, long long length, double size) {
    std::vector<Real> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      out[i] = kernels::inside_as<Real>(v[i], static_cast<double>(length) * size);
    return out;
  };
  std::vector<Real> px = positions(r.x, g.nx, h), py = positions(r.y, g.ny, hy),
                    pz = positions(r.z, g.nz, hz), pvx(r.vx.begin(), r.vx.end()),
                    pvy(r.vy.begin(), r.vy.end()), pvz(r.vz.begin(), r.vz.end());
  // Mixed precision: the cells and offsets of the doubles drawn above.
  std::vector<std::int32_t> kx, ky, kz;
  if (in_cells) {
    const auto split = [](const std::vector<double>& v, long long length, double size,
                          std::vector<Real>& off, std::vector<std::int32_t>& cell) {
      cell.resize(v.size());
      for (std::size_t i = 0; i < v.size(); ++i)
        kernels::store_position(v[i], static_cast<double>(length) * size,
                                static_cast<double>(length), off[i], &cell[i]);
    };
    split(r.x, g.nx, h, px, kx);
    split(r.y, g.ny, hy, py, ky);
    split(r.z, g.nz, hz, pz, kz);
  }
  Step<Real> s{};
  s.x = px.data();
  s.y = py.data();
  s.z = three ? pz.data() : nullptr;
  s.vx = pvx.data();
  s.vy = pvy.data();
  s.vz = three ? pvz.data() : nullptr;
  s.n = n;
  s.dim = g.dim;
  s.order = 1;
  s.inv_dx = 1.0 / h;
  s.inv_dy = 1.0 / hy;
  s.inv_dz = 1.0 / hz;
  s.lx = static_cast<double>(g.nx) * h;
  s.ly = static_cast<double>(g.ny) * hy;
  s.lz = static_cast<double>(g.nz) * hz;
  s.dv = -0.1;
  s.dt = 0.1;
  s.charge = kCaseCharge;
  s.base = g.base();
  s.row = g.row();
  s.col = g.col();
  s.nx = g.nx;
  s.ny = g.ny;
  s.nz = g.nz;
  s.i_lo = g.x0 - g.guard;
  s.i_hi = g.x0 + g.lnx + g.guard - 1;
  s.j_lo = g.y0 - g.guard;
  s.j_hi = g.y0 + g.lny + g.guard - 1;
  s.k_lo = g.z0 - g.guard;
  s.k_hi = g.z0 + g.lnz + g.guard - 1;
  s.whole_box = g.whole();
  s.exy = exy.data();
  s.vectors = vectors;
  s.integer = integer;
  s.floats = floats;
  s.one_lane = floats && !vectors;
  s.cells32 = floats && !three ? cells32.data() : nullptr;
  s.nodes32 = floats && three ? nodes32.data() : nullptr;
  if (integer) {
    s.energies = r.energies.data();
    s.half_mass = 0.5;
  }
  if (in_cells) {  // in cell units
    s.cx = kx.data();
    s.cy = ky.data();
    s.cz = three ? kz.data() : nullptr;
    s.inv_dx = s.inv_dy = s.inv_dz = 1.0;
    s.lx = static_cast<double>(g.nx);
    s.ly = static_cast<double>(g.ny);
    s.lz = static_cast<double>(g.nz);
    s.cell_dt[0] = s.dt / h;
    s.cell_dt[1] = s.dt / hy;
    s.cell_dt[2] = s.dt / hz;
  }
  if (!g.whole() && in_cells) {  // the block's cells, in cell units
    const long long first[3] = {g.x0, g.y0, g.z0}, count[3] = {g.lnx, g.lny, g.lnz};
    for (int a = 0; a < 3; ++a) {
      s.stay_lo[a] = static_cast<double>(first[a]);
      s.stay_hi[a] = std::nextafter(static_cast<double>(first[a] + count[a]), 0.0);
    }
    s.leavers = &r.leavers;
  } else if (!g.whole()) {  // the block is the stay region
    s.stay_lo[0] = static_cast<double>(g.x0) * h;
    s.stay_hi[0] = static_cast<double>(g.x0 + g.lnx) * h;
    s.stay_lo[1] = static_cast<double>(g.y0) * hy;
    s.stay_hi[1] = static_cast<double>(g.y0 + g.lny) * hy;
    s.stay_lo[2] = static_cast<double>(g.z0) * hz;
    s.stay_hi[2] = static_cast<double>(g.z0 + g.lnz) * hz;
    s.leavers = &r.leavers;
  }
  ThreadGrids grids;
  grids.ensure(1, g.nodes(), integer);
  r.sums = push_and_deposit(s, grids);
  r.x.assign(px.begin(), px.end());
  r.y.assign(py.begin(), py.end());
  r.z.assign(pz.begin(), pz.end());
  if (in_cells) {
    r.offsets[0].assign(px.begin(), px.end());
    r.offsets[1].assign(py.begin(), py.end());
    r.offsets[2].assign(pz.begin(), pz.end());
    r.cells[0] = kx;
    r.cells[1] = ky;
    r.cells[2] = kz;
  }
  for (std::size_t i = 0; in_cells && i < r.x.size(); ++i) {
    r.x[i] += kx[i];
    r.y[i] += ky[i];
    if (three) r.z[i] += kz[i];
  }
  r.vx.assign(pvx.begin(), pvx.end());
  r.vy.assign(pvy.begin(), pvy.end());
  r.vz.assign(pvz.begin(), pvz.end());
  r.ne.assign(g.nodes(), 0.0);
  fold(grids, g.nodes(), r.ne.data());
  if (g.whole() || !g.far_movers) {
    Step<Real> again = s;
    again.leavers = nullptr;
    deposit(again, grids);
    r.ne_redeposited.assign(g.nodes(), 0.0);
    fold(grids, g.nodes(), r.ne_redeposited.data());
  }
  return r;
}

// The scalar loop's and the vector loop's result of one case, with double or float particles.
struct ScalarAndVector {
  CaseResult scalar, vector;
  // On the whole box (or a block without far movers): the deposit alone at the new positions
  // gave the push's density.
  bool redeposited_as_pushed() const {
    return vector.ne_redeposited.empty() ||
           (vector.ne_redeposited == vector.ne && scalar.ne_redeposited == scalar.ne);
  }
  // The first field that differs ("" when none).
  std::string differs() const {
    const std::pair<const char*, bool> fields[] = {
        {"x", vector.x == scalar.x},
        {"y", vector.y == scalar.y},
        {"z", vector.z == scalar.z},
        {"vx", vector.vx == scalar.vx},
        {"vy", vector.vy == scalar.vy},
        {"vz", vector.vz == scalar.vz},
        {"density", vector.ne == scalar.ne},
        {"energies", vector.energies == scalar.energies},
        {"undeposited", vector.sums.undeposited == scalar.sums.undeposited},
        {"leavers", vector.leavers == scalar.leavers},
        {"redeposited density", redeposited_as_pushed()}};
    for (const auto& [name, equal] : fields)
      if (!equal) return name;
    return "";
  }
  // Positions, velocities, density, energies, undeposited counts and leavers bit for bit.
  bool same() const {
    return vector.x == scalar.x && vector.y == scalar.y && vector.z == scalar.z &&
           vector.vx == scalar.vx && vector.vy == scalar.vy && vector.vz == scalar.vz &&
           vector.ne == scalar.ne && vector.energies == scalar.energies &&
           vector.sums.undeposited == scalar.sums.undeposited && vector.leavers == scalar.leavers &&
           redeposited_as_pushed();
  }
};
// `cells`: float particles in mixed precision (single true).
inline ScalarAndVector scalar_and_vector(bool single, const CaseGrid& g, bool integer,
                                         bool cells = false) {
  if (single)
    return {run_case<float>(false, g, integer, cells), run_case<float>(true, g, integer, cells)};
  return {run_case<double>(false, g, integer), run_case<double>(true, g, integer)};
}

}  // namespace pic::host_step
