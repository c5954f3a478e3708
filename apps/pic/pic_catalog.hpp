// apps/pic/pic_catalog.hpp: the mini-app's particle kernels as Kernel pairs in a catalog: a
// host version here (OpenMP) and a CUDA source compiled at run time from
// kernels/<name>/<name>_cuda.cu (NVRTC on cuda, the kernel emulator on emulated).  `pic
// --kernels rtc` runs them (rtc_step.cpp); `--kernels builtin` (the default) the parallel_for
// loops of builtin_step.cpp, compiled by nvcc.  Both give the same physics.
#pragma once

#include <filesystem>
#include <vector>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/kernel_catalog.hpp>

#include "pic_kernels.hpp"

namespace pic {

using Vec = cunumpy::Array<double>;
// The particles' arrays: double, or float for --precision single (the kernels *_single).
template <typename R>
using Particle = cunumpy::Array<R>;

// The grid is a rank's guarded local grid (grid.hpp): node (i, j, l) of the whole grid at
// (i - x0 + guard) * row + (j - y0 + guard) * col + (l - z0 + guard) in 3D (2D: col 1, no l;
// 1D: row 1).  `dim` is 1, 2 or 3: past it the coordinates, velocities and field components are
// not read or written (pass x, vx, ex and ex_p in their places).  R: the particles' precision
// (double: deposit, gather, push; float: deposit_single, gather_single, push_single).
//
// ne = the density at the nodes (each particle adds q * w to its stencil's nodes).  Per-thread
// private grids summed in thread order (no atomics on CPUs).
template <typename R>
void deposit_host(const Particle<R>& x, const Particle<R>& y, const Particle<R>& z, const Vec& ne,
                  long long x0, long long y0, long long z0, long long guard, long long row,
                  long long col, int order, int dim, double inv_dx, double inv_dy, double inv_dz,
                  double q, long long n);
// The field at the particles.
template <typename R>
void gather_host(const Particle<R>& x, const Particle<R>& y, const Particle<R>& z, const Vec& ex,
                 const Vec& ey, const Vec& ez, const Vec& ex_p, const Vec& ey_p, const Vec& ez_p,
                 long long x0, long long y0, long long z0, long long guard, long long row,
                 long long col, int order, int dim, double inv_dx, double inv_dy, double inv_dz,
                 long long n);
// v += dv E, then x += dt v when `move`; energy[i] = mass / 2 * v_old . v_new.
template <typename R>
void push_host(const Particle<R>& x, const Particle<R>& y, const Particle<R>& z,
               const Particle<R>& vx, const Particle<R>& vy, const Particle<R>& vz, const Vec& ex_p,
               const Vec& ey_p, const Vec& ez_p, const Vec& energy, double dv, double dt, double lx,
               double ly, double lz, double mass, bool move, int dim, long long n);

// Mixed precision (--precision mixed: deposit_mixed, gather_mixed, push_mixed): each position
// a float offset within its cell in cell units (x, y, z), beside the int32 cell (cx, cy, cz;
// past the dimension pass cx); the grid in cell units.  The push moves dt_x v (dt / dx) and so
// on along each axis, wrapping into nx, ny, nz cells.
using Cells = cunumpy::Array<std::int32_t>;
void deposit_mixed_host(const Particle<float>& x, const Particle<float>& y,
                        const Particle<float>& z, const Cells& cx, const Cells& cy, const Cells& cz,
                        const Vec& ne, long long x0, long long y0, long long z0, long long guard,
                        long long row, long long col, int order, int dim, double q, long long n);
void gather_mixed_host(const Particle<float>& x, const Particle<float>& y, const Particle<float>& z,
                       const Cells& cx, const Cells& cy, const Cells& cz, const Vec& ex,
                       const Vec& ey, const Vec& ez, const Vec& ex_p, const Vec& ey_p,
                       const Vec& ez_p, long long x0, long long y0, long long z0, long long guard,
                       long long row, long long col, int order, int dim, long long n);
void push_mixed_host(const Particle<float>& x, const Particle<float>& y, const Particle<float>& z,
                     const Cells& cx, const Cells& cy, const Cells& cz, const Particle<float>& vx,
                     const Particle<float>& vy, const Particle<float>& vz, const Vec& ex_p,
                     const Vec& ey_p, const Vec& ez_p, const Vec& energy, double dv, double dt_x,
                     double dt_y, double dt_z, double nx, double ny, double nz, double mass,
                     bool move, int dim, long long n);

using DepositKernel = cunumpy::Kernel<decltype(&deposit_host<double>)>;

// deposit_host's work on any grid (1D to 3D): ne[0, cells) = the density of particles [0, n) at
// the positions (y and z read only where the grid has the axis), summed in per-thread private grids
// (OpenMP) in thread order.
// P: the positions' type (double or float; with cells, the offsets'; `grid` in their units).
template <typename P>
void deposit_into_thread_grids(const kernels::Grid& grid, const kernels::Positions<P>& positions,
                               double* ne, long long cells, double q, long long n);
using GatherKernel = cunumpy::Kernel<decltype(&gather_host<double>)>;
using PushKernel = cunumpy::Kernel<decltype(&push_host<double>)>;

// The folder of the CUDA sources: CUNUMPY_PIC_KERNELS when set, else the source tree's.
std::filesystem::path kernel_folder();
// The folders the kernels' sources include pic_kernels.hpp from.
std::vector<std::filesystem::path> kernel_include_dirs();
// deposit, gather and push, and their *_single and *_mixed versions (built at first use; the
// CUDA sources are read then).
cunumpy::KernelCatalog& kernel_catalog();

}  // namespace pic
