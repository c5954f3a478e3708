// apps/pic/solver.hpp: how E follows from rho on the layout's grid, one interface, a type per
// method (a file each), chosen by --solver:
//
//   fft (fft_solver.cpp): spectral, E_k = -i k rho_k / |k|^2 through cunumpy::DistributedFft
//     (FFTW's MPI transforms; cuFFT for device arrays): exact for the grid's modes, but its
//     all-to-all transposes stop scaling at some thousand ranks.
//   petsc (petsc_solver.cpp): second-order finite differences, -lap phi = rho on the 5-point
//     (3-point in 1D) stencil, solved by PETSc (a DMDA whose ownership is the layout's blocks,
//     conjugate gradients preconditioned by multigrid (geometric or algebraic), the constants
//     removed as the periodic operator's null space), then E = -grad phi by centred differences:
//     neighbour messages only, so it scales where the FFT does not.  Host arrays.  PETSC_OPTIONS
//     (-ksp_type, -pc_type, -ksp_rtol, ...) overrides the choices.
//
// Both read rho on the owned nodes and write E on the owned nodes (the layout fills E's
// guards afterwards), and give the field energy of the perturbed mode (k, 0) for the fits.
#pragma once

#include <array>
#include <memory>
#include <string>

#include <cunumpy/cunumpy.hpp>

#include "grid.hpp"

namespace pic {

struct Config;

// What a solver is built from: the layout's grid, its decomposition and the communicator they
// run on (the world when decomposed; this rank alone when replicated), the backend.
struct SolverSetup {
  const LocalGrid& grid;
  const cunumpy::CartesianDecomposition& decomposition;
  const cunumpy::Comm& comm;
  cunumpy::Backend backend;
  std::array<int, 3> mode{1, 0, 0};  // the perturbed mode (mode_power's), per axis
};

class FieldSolver {
 public:
  virtual ~FieldSolver() = default;
  // The --solver value it answers to.
  virtual std::string name() const = 0;
  // E_x (and E_y from 2D, E_z in 3D) on the owned nodes from rho on the owned nodes (guarded
  // arrays of the layout's grid; the components past the dimension are empty).
  virtual void solve(const cunumpy::Array<double>& rho, cunumpy::Array<double>& ex,
                     cunumpy::Array<double>& ey, cunumpy::Array<double>& ez) = 0;
  // |rho_k|^2 of the perturbed mode (SolverSetup::mode) of the last solve's rho, times
  // `scale`: this rank's share, so that the sum over the ranks of `comm` is the whole.
  virtual double mode_power(double scale) = 0;
  // Bytes this rank has sent to others in its solves (what the solver can count).
  virtual long long bytes_sent() const = 0;
};

// The solvers (one file each), and the table that picks one by Config::solver.
std::unique_ptr<FieldSolver> make_fft_solver(const SolverSetup& setup);
std::unique_ptr<FieldSolver> make_petsc_solver(const SolverSetup& setup);
std::unique_ptr<FieldSolver> make_solver(const Config& config, const SolverSetup& setup);

}  // namespace pic
