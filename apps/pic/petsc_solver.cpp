// The finite-difference field solver on PETSc (solver.hpp): -lap phi = rho on the 5-point
// stencil (3-point in 1D) of a periodic DMDA whose ownership is the layout's blocks, solved by
// conjugate gradients with multigrid, geometric where the blocks halve, else algebraic (the
// constants, the periodic operator's null space, removed), then E = -grad phi by centred
// differences from phi's ghosts.
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <petscdmda.h>
#include <petscksp.h>

#include <cunumpy/petsc.hpp>

#include "solver.hpp"

namespace pic {

namespace cn = cunumpy;

namespace {

void check(PetscErrorCode code, const char* call) {
  cn::check_petsc(code, call);
}

class PetscSolver final : public FieldSolver {
 public:
  explicit PetscSolver(const SolverSetup& s) : grid_(s.grid), comm_(s.comm) {
    if (s.backend != cn::Backend::host)
      throw cn::ValueError(
          "--solver petsc runs on the host backend (PETSc works on host vectors "
          "here), got " +
          std::string(cn::to_string(s.backend)) + "; use --solver fft on a device");
    cn::petsc_initialize();
    const LocalGrid& g = grid_;
    const cn::CartesianDecomposition& d = s.decomposition;
    MPI_Comm comm = s.comm.native();
    // The cells each rank along an axis owns: the DMDA's ownership is the layout's.
    auto parts = [&](int axis) {
      std::vector<PetscInt> v;
      for (int c = 0; c < d.dims()[axis]; ++c) {
        const cn::IndexRange r = d.owned_by(axis, c);
        v.push_back(static_cast<PetscInt>(r.end - r.begin));
      }
      return v;
    };
    if (g.two()) {
      // The DMDA's x (its fastest axis) is the layout's axis 1 (contiguous), its y the layout's
      // axis 0: ranks are then numbered alike (row-major over the layout's rank grid).
      const std::vector<PetscInt> l1 = parts(1), l0 = parts(0);
      check(DMDACreate2d(comm, DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DMDA_STENCIL_STAR,
                         static_cast<PetscInt>(g.ny), static_cast<PetscInt>(g.nx), d.dims()[1],
                         d.dims()[0], 1, 1, l1.data(), l0.data(), &da_),
            "DMDACreate2d");
    } else {
      const std::vector<PetscInt> l0 = parts(0);
      check(DMDACreate1d(comm, DM_BOUNDARY_PERIODIC, static_cast<PetscInt>(g.nx), 1, 1, l0.data(),
                         &da_),
            "DMDACreate1d");
    }
    check(DMSetUp(da_), "DMSetUp");
    PetscInt xs = 0, ys = 0, zs = 0, xm = 0, ym = 0, zm = 0;
    check(DMDAGetCorners(da_, &xs, &ys, &zs, &xm, &ym, &zm), "DMDAGetCorners");
    const bool same = g.two() ? (xs == g.y0 && xm == g.lny && ys == g.x0 && ym == g.lnx)
                              : (xs == g.x0 && xm == g.lnx);
    if (!same)
      throw cn::Error(
          "--solver petsc: PETSc's DMDA gave this rank another block than the "
          "layout's (a rank numbering that differs); please report it");
    assemble();
    check(MatNullSpaceCreate(comm, PETSC_TRUE, 0, nullptr, &null_), "MatNullSpaceCreate");
    check(MatSetNullSpace(a_, null_), "MatSetNullSpace");
    check(DMCreateGlobalVector(da_, &b_), "DMCreateGlobalVector");
    check(VecDuplicate(b_, &x_), "VecDuplicate");
    check(VecSet(x_, 0.0), "VecSet");
    check(DMCreateLocalVector(da_, &local_), "DMCreateLocalVector");
    check(KSPCreate(comm, &ksp_), "KSPCreate");
    check(KSPSetOperators(ksp_, a_, a_), "KSPSetOperators");
    // The grid's hierarchy for geometric multigrid (-pc_type mg); the operators are ours.
    check(KSPSetDM(ksp_, da_), "KSPSetDM");
    check(KSPSetDMActive(ksp_, PETSC_FALSE), "KSPSetDMActive");
    // Our choices go into the options database under the prefix pic_, unless given there
    // (PETSC_OPTIONS="-pic_ksp_rtol 1e-10 -pic_pc_type gamg" overrides them).
    check(KSPSetOptionsPrefix(ksp_, "pic_"), "KSPSetOptionsPrefix");
    const int levels = multigrid_levels(parts(0), g.two() ? parts(1) : std::vector<PetscInt>{});
    const std::string n_levels = std::to_string(levels);
    // Geometric multigrid on the DMDA's hierarchy when every rank's block halves `levels` - 1
    // times (Galerkin coarse operators, one SOR sweep each way, the singular coarse problem by
    // SVD); algebraic multigrid otherwise.  A residual of 1e-6 of rho's: far below the
    // particles' noise.
    const std::vector<std::pair<const char*, std::string>> defaults =
        levels >= 3
            ? std::vector<std::pair<const char*, std::string>>{{"-pic_ksp_type", "cg"},
                                                               {"-pic_pc_type", "mg"},
                                                               {"-pic_pc_mg_levels", n_levels},
                                                               {"-pic_pc_mg_galerkin", "both"},
                                                               {"-pic_mg_levels_ksp_type",
                                                                "richardson"},
                                                               {"-pic_mg_levels_ksp_max_it", "1"},
                                                               {"-pic_mg_levels_pc_type", "sor"},
                                                               {"-pic_mg_coarse_pc_type", "svd"},
                                                               {"-pic_ksp_rtol", "1e-6"}}
            : std::vector<std::pair<const char*, std::string>>{
                  {"-pic_ksp_type", "cg"}, {"-pic_pc_type", "gamg"}, {"-pic_ksp_rtol", "1e-6"}};
    // A preconditioner given by the user takes none of the multigrid defaults.
    PetscBool pc_given = PETSC_FALSE;
    check(PetscOptionsHasName(nullptr, nullptr, "-pic_pc_type", &pc_given), "PetscOptionsHasName");
    std::vector<const char*> ours;
    for (const auto& [name, value] : defaults) {
      const std::string_view option(name);
      const bool of_pc = option.starts_with("-pic_pc_") || option.starts_with("-pic_mg_");
      PetscBool given = PETSC_FALSE;
      check(PetscOptionsHasName(nullptr, nullptr, name, &given), "PetscOptionsHasName");
      if (!given && !(pc_given && of_pc)) {
        check(PetscOptionsSetValue(nullptr, name, value.c_str()), "PetscOptionsSetValue");
        ours.push_back(name);
      }
    }
    // The previous step's potential is the next one's first guess.
    check(KSPSetInitialGuessNonzero(ksp_, PETSC_TRUE), "KSPSetInitialGuessNonzero");
    check(KSPSetFromOptions(ksp_), "KSPSetFromOptions");
    check(KSPSetUp(ksp_), "KSPSetUp");  // the multigrid hierarchy reads its options now
    // Ours leave the database again: the next solver (another grid) chooses afresh.
    for (const char* name : ours)
      check(PetscOptionsClearValue(nullptr, name), "PetscOptionsClearValue");
  }

  ~PetscSolver() override {
    PetscBool finalized = PETSC_FALSE;
    PetscFinalized(&finalized);
    if (finalized) return;
    KSPDestroy(&ksp_);
    VecDestroy(&local_);
    VecDestroy(&x_);
    VecDestroy(&b_);
    MatNullSpaceDestroy(&null_);
    MatDestroy(&a_);
    DMDestroy(&da_);
  }
  PetscSolver(const PetscSolver&) = delete;
  PetscSolver& operator=(const PetscSolver&) = delete;

  std::string name() const override { return "petsc"; }

  // 1D and 2D (validate() refuses --dim 3 with this solver): ez stays empty.
  void solve(const cn::Array<double>& rho, cn::Array<double>& ex, cn::Array<double>& ey,
             cn::Array<double>&) override {
    const LocalGrid& g = grid_;
    const double* r = rho.data();
    const double kx = 2.0 * M_PI / static_cast<double>(g.nx);
    double re = 0.0, im = 0.0;
    // rho's owned nodes into b (the DMDA's global indices), and its mode (1, 0) on the way.
    if (g.two()) {
      PetscScalar** b = nullptr;
      check(DMDAVecGetArray(da_, b_, &b), "DMDAVecGetArray");
      for (long long i = 0; i < g.lnx; ++i) {
        const double c = std::cos(kx * static_cast<double>(g.x0 + i)),
                     s = std::sin(kx * static_cast<double>(g.x0 + i));
        for (long long j = 0; j < g.lny; ++j) {
          const double v = r[(i + g.guard) * g.row + j + g.guard];
          b[g.x0 + i][g.y0 + j] = v;
          re += v * c;
          im -= v * s;
        }
      }
      check(DMDAVecRestoreArray(da_, b_, &b), "DMDAVecRestoreArray");
    } else {
      PetscScalar* b = nullptr;
      check(DMDAVecGetArray(da_, b_, &b), "DMDAVecGetArray");
      for (long long i = 0; i < g.lnx; ++i) {
        const double v = r[i + g.guard];
        b[g.x0 + i] = v;
        re += v * std::cos(kx * static_cast<double>(g.x0 + i));
        im -= v * std::sin(kx * static_cast<double>(g.x0 + i));
      }
      check(DMDAVecRestoreArray(da_, b_, &b), "DMDAVecRestoreArray");
    }
    mode_[0] = re;
    mode_[1] = im;
    // The periodic operator is singular: rho's mean (zero up to the deposit's rounding) goes.
    check(MatNullSpaceRemove(null_, b_), "MatNullSpaceRemove");
    check(KSPSolve(ksp_, b_, x_), "KSPSolve");
    KSPConvergedReason reason = KSP_CONVERGED_ITERATING;
    check(KSPGetConvergedReason(ksp_, &reason), "KSPGetConvergedReason");
    if (reason < 0)
      throw cn::Error(std::string("--solver petsc: the Poisson solve did not converge (") +
                      KSPConvergedReasons[reason] +
                      "); check rho for NaN, or choose other PETSC_OPTIONS (-ksp_type, -pc_type)");
    // phi with its ghosts (PETSc's own neighbour exchange), then E = -grad phi, centred.
    check(DMGlobalToLocalBegin(da_, x_, INSERT_VALUES, local_), "DMGlobalToLocalBegin");
    check(DMGlobalToLocalEnd(da_, x_, INSERT_VALUES, local_), "DMGlobalToLocalEnd");
    double* e_x = ex.data();
    const double hx = 0.5 / g.dx;
    if (g.two()) {
      double* e_y = ey.data();
      const double hy = 0.5 / g.dy;
      const PetscScalar** phi = nullptr;
      check(DMDAVecGetArrayRead(da_, local_, &phi), "DMDAVecGetArrayRead");
      for (long long i = 0; i < g.lnx; ++i) {
        const long long I = g.x0 + i;
        for (long long j = 0; j < g.lny; ++j) {
          const long long J = g.y0 + j;
          const long long at = (i + g.guard) * g.row + j + g.guard;
          e_x[at] = -(phi[I + 1][J] - phi[I - 1][J]) * hx;
          e_y[at] = -(phi[I][J + 1] - phi[I][J - 1]) * hy;
        }
      }
      check(DMDAVecRestoreArrayRead(da_, local_, &phi), "DMDAVecRestoreArrayRead");
    } else {
      const PetscScalar* phi = nullptr;
      check(DMDAVecGetArrayRead(da_, local_, &phi), "DMDAVecGetArrayRead");
      for (long long i = 0; i < g.lnx; ++i) {
        const long long I = g.x0 + i;
        e_x[i + g.guard] = -(phi[I + 1] - phi[I - 1]) * hx;
      }
      check(DMDAVecRestoreArrayRead(da_, local_, &phi), "DMDAVecRestoreArrayRead");
    }
  }

  // rho's mode (1, 0) summed over the solver's ranks; its power on the first of them.
  double mode_power(double scale) override {
    double sum[2] = {mode_[0], mode_[1]};
    if (comm_.size() > 1) comm_.allreduce<double>(mode_, std::span<double>(sum), cn::Op::sum);
    return comm_.rank() == 0 ? (sum[0] * sum[0] + sum[1] * sum[1]) * scale : 0.0;
  }

  // PETSc's messages are its own: not counted.
  long long bytes_sent() const override { return 0; }

 private:
  // Levels of geometric multigrid the blocks allow: each halves (the DMDA coarsens every
  // rank's block by 2 along each axis) while every block keeps at least 4 nodes per axis.
  static int multigrid_levels(const std::vector<PetscInt>& a, const std::vector<PetscInt>& b) {
    int levels = 1;
    for (;;) {
      const PetscInt f = PetscInt{1} << levels;  // the next level's coarsening factor
      bool ok = true;
      for (const auto* parts : {&a, &b})
        for (const PetscInt n : *parts) ok = ok && n % f == 0 && n / f >= 4;
      if (!ok || levels >= 12) return levels;
      ++levels;
    }
  }

  // A = -lap on the DMDA's nodes (second-order, periodic).
  void assemble() {
    const LocalGrid& g = grid_;
    check(DMCreateMatrix(da_, &a_), "DMCreateMatrix");
    const double ax = 1.0 / (g.dx * g.dx), ay = g.two() ? 1.0 / (g.dy * g.dy) : 0.0;
    for (long long i = 0; i < g.lnx; ++i)
      for (long long j = 0; j < g.lny; ++j) {
        MatStencil row{}, cols[5]{};
        double values[5];
        int n = 0;
        const auto at = [&](long long I, long long J, double v) {
          // 2D: the DMDA's (i, j) are the layout's (axis 1, axis 0); 1D: its i is axis 0.
          cols[n].i = static_cast<PetscInt>(g.two() ? J : I);
          cols[n].j = static_cast<PetscInt>(g.two() ? I : 0);
          values[n++] = v;
        };
        const long long I = g.x0 + i, J = g.y0 + j;
        row.i = static_cast<PetscInt>(g.two() ? J : I);
        row.j = static_cast<PetscInt>(g.two() ? I : 0);
        at(I, J, 2.0 * ax + 2.0 * ay);
        at(I - 1, J, -ax);
        at(I + 1, J, -ax);
        if (g.two()) {
          at(I, J - 1, -ay);
          at(I, J + 1, -ay);
        }
        check(MatSetValuesStencil(a_, 1, &row, n, cols, values, INSERT_VALUES),
              "MatSetValuesStencil");
      }
    check(MatAssemblyBegin(a_, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
    check(MatAssemblyEnd(a_, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
  }

  LocalGrid grid_;
  cn::Comm comm_;
  DM da_ = nullptr;
  Mat a_ = nullptr;
  MatNullSpace null_ = nullptr;
  Vec b_ = nullptr, x_ = nullptr, local_ = nullptr;
  KSP ksp_ = nullptr;
  double mode_[2] = {0.0, 0.0};
};

}  // namespace

std::unique_ptr<FieldSolver> make_petsc_solver(const SolverSetup& setup) {
  return std::make_unique<PetscSolver>(setup);
}

}  // namespace pic
