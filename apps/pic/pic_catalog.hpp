// apps/pic/pic_catalog.hpp: the mini-app's particle kernels as Kernel pairs in a catalog: a
// host version here (OpenMP) and a CUDA source compiled at run time from
// kernels/<name>/<name>_cuda.cu (NVRTC on cuda, the kernel emulator on emulated).  `pic
// --kernels rtc` runs them (rtc_step.cpp); `--kernels builtin` (the default) the parallel_for
// loops of builtin_step.cpp, compiled by nvcc.  Both give the same physics.
#pragma once

#include <filesystem>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/kernel_catalog.hpp>

#include "pic_kernels.hpp"

namespace pic {

using Vec = cunumpy::Array<double>;

// The grid is a rank's guarded local grid (grid.hpp): node (i, j) of the whole grid at
// (i - x0 + guard) * row + (j - y0 + guard) (1D: row 1).
//
// ne = the density at the nodes (each particle adds q * w to its stencil's nodes); in 1D y is
// not read (pass x).  Per-thread private grids summed in thread order (no atomics on CPUs).
void deposit_host(const Vec& x, const Vec& y, const Vec& ne, long long x0, long long y0,
                  long long guard, long long row, int order, bool two, double inv_dx, double inv_dy,
                  double q, long long n);
// The field at the particles; in 1D y, ey and ey_p are not used (pass x, ex and ex_p).
void gather_host(const Vec& x, const Vec& y, const Vec& ex, const Vec& ey, const Vec& ex_p,
                 const Vec& ey_p, long long x0, long long y0, long long guard, long long row,
                 int order, bool two, double inv_dx, double inv_dy, long long n);
// v += dv E, then x += dt v when `move`; energy[i] = mass / 2 * v_old . v_new.  In 1D y, vy and
// ey_p are not used (pass x, vx and ex_p).
void push_host(const Vec& x, const Vec& y, const Vec& vx, const Vec& vy, const Vec& ex_p,
               const Vec& ey_p, const Vec& energy, double dv, double dt, double lx, double ly,
               double mass, bool move, bool two, long long n);

using DepositKernel = cunumpy::Kernel<decltype(&deposit_host)>;

// deposit_host's work on any grid (1D to 3D): ne[0, cells) = the density of particles [0, n) at
// (x, y, z) (y and z read only where the grid has the axis), summed in per-thread private grids
// (OpenMP) in thread order.
void deposit_into_thread_grids(const kernels::Grid& grid, const double* x, const double* y,
                               const double* z, double* ne, long long cells, double q, long long n);
using GatherKernel = cunumpy::Kernel<decltype(&gather_host)>;
using PushKernel = cunumpy::Kernel<decltype(&push_host)>;

// The folder of the CUDA sources: CUNUMPY_PIC_KERNELS when set, else the source tree's.
std::filesystem::path kernel_folder();
// deposit, gather and push (built at first use; the CUDA sources are read then).
cunumpy::KernelCatalog& kernel_catalog();

}  // namespace pic
