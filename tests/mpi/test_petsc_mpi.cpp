// petsc_vec at 1, 2 and 4 ranks: the Vec shares the array's memory both ways, its local part is
// the array, the reference's errors; and a distributed Poisson solve with PETSc (DMDA laid
// out as the CartesianDecomposition, CG preconditioned by algebraic multigrid) through
// petsc_vec, against the known solution of the discrete problem.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <petscdmda.h>
#include <petscksp.h>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/petsc.hpp>

namespace cn = cunumpy;

TEST(PetscVecMpi, SharesTheArraysMemoryBothWays) {
  const cn::Comm world = cn::Comm::world();
  const long long n = 10 + world.rank();  // uneven parts
  auto a = cn::zeros<double>({n}, cn::Backend::host);
  cn::PetscVec v = cn::petsc_vec(a, world);
  cn::check_petsc(VecSet(v, 3.0), "VecSet");
  for (long long i = 0; i < n; ++i) ASSERT_EQ(a(i), 3.0);  // PETSc's write, in the array
  a(0) = 10.0;                                             // the array's write, in the Vec
  PetscScalar sum = 0;
  cn::check_petsc(VecSum(v, &sum), "VecSum");
  const long long total = world.allreduce(n, cn::Op::sum);
  EXPECT_DOUBLE_EQ(sum, 3.0 * total + 7.0 * world.size());
  PetscInt size = 0, lo = 0, hi = 0;
  cn::check_petsc(VecGetSize(v, &size), "VecGetSize");
  cn::check_petsc(VecGetOwnershipRange(v, &lo, &hi), "VecGetOwnershipRange");
  EXPECT_EQ(size, total);
  EXPECT_EQ(hi - lo, n);
  EXPECT_EQ(lo, world.scan(n, cn::Op::sum) - n);
  const PetscScalar* raw = nullptr;
  cn::check_petsc(VecGetArrayRead(v, &raw), "VecGetArrayRead");
  EXPECT_EQ(raw, a.data());  // never copied
  cn::check_petsc(VecRestoreArrayRead(v, &raw), "VecRestoreArrayRead");
}

TEST(PetscVecMpi, TheReferencesErrors) {
  auto f = cn::zeros<float>({4}, cn::Backend::host);
  try {
    cn::petsc_vec(f);
    ADD_FAILURE();
  } catch (const cn::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos) << e.what();
  }
  auto d = cn::zeros<double>({4}, cn::Backend::emulated);
  EXPECT_THROW(cn::petsc_vec(d), cn::BackendError);
}

TEST(PetscVecMpi, APoissonSolveOnTheDecomposedGrid) {
  const cn::Comm world = cn::Comm::world();
  const long long N0 = 48, N1 = 40;
  const double L0 = 2.0, L1 = 1.5, h0 = L0 / N0, h1 = L1 / N1;
  const cn::CartesianDecomposition d(world, {N0, N1});
  // PETSc's x is our fastest axis (1), its y our axis 0; its ranks are row-major as ours.
  std::vector<PetscInt> lx, ly;
  for (int c = 0; c < d.dims()[1]; ++c) lx.push_back(d.owned_by(1, c).end - d.owned_by(1, c).begin);
  for (int c = 0; c < d.dims()[0]; ++c) ly.push_back(d.owned_by(0, c).end - d.owned_by(0, c).begin);
  DM da;
  cn::check_petsc(
      DMDACreate2d(world.native(), DM_BOUNDARY_PERIODIC, DM_BOUNDARY_PERIODIC, DMDA_STENCIL_STAR,
                   N1, N0, d.dims()[1], d.dims()[0], 1, 1, lx.data(), ly.data(), &da),
      "DMDACreate2d");
  cn::check_petsc(DMSetUp(da), "DMSetUp");
  PetscInt xs, ys, xm, ym;
  cn::check_petsc(DMDAGetCorners(da, &xs, &ys, nullptr, &xm, &ym, nullptr), "DMDAGetCorners");
  ASSERT_EQ(xs, d.owned(1).begin);
  ASSERT_EQ(ys, d.owned(0).begin);
  ASSERT_EQ(ym, d.local_cells(0));
  ASSERT_EQ(xm, d.local_cells(1));
  // -Laplacian, 5 points, periodic; its null space: the constants.
  Mat A;
  cn::check_petsc(DMCreateMatrix(da, &A), "DMCreateMatrix");
  for (PetscInt j = ys; j < ys + ym; ++j)
    for (PetscInt i = xs; i < xs + xm; ++i) {
      MatStencil row{0, j, i, 0};
      MatStencil col[5] = {
          {0, j, i, 0}, {0, j - 1, i, 0}, {0, j + 1, i, 0}, {0, j, i - 1, 0}, {0, j, i + 1, 0}};
      const PetscScalar v[5] = {2.0 / (h0 * h0) + 2.0 / (h1 * h1), -1.0 / (h0 * h0),
                                -1.0 / (h0 * h0), -1.0 / (h1 * h1), -1.0 / (h1 * h1)};
      cn::check_petsc(MatSetValuesStencil(A, 1, &row, 5, col, v, INSERT_VALUES),
                      "MatSetValuesStencil");
    }
  cn::check_petsc(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
  cn::check_petsc(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
  MatNullSpace constants;
  cn::check_petsc(MatNullSpaceCreate(world.native(), PETSC_TRUE, 0, nullptr, &constants),
                  "MatNullSpaceCreate");
  cn::check_petsc(MatSetNullSpace(A, constants), "MatSetNullSpace");
  // A mode of the discrete operator: phi = sin(2 pi x / L0) cos(4 pi y / L1), rhs = lambda phi.
  const double lambda = 4.0 / (h0 * h0) * std::pow(std::sin(M_PI / N0), 2) +
                        4.0 / (h1 * h1) * std::pow(std::sin(2.0 * M_PI / N1), 2);
  const long long n0 = d.local_cells(0), n1 = d.local_cells(1);
  auto phi = cn::zeros<double>({n0, n1}, cn::Backend::host);
  auto rhs = cn::zeros<double>({n0, n1}, cn::Backend::host);
  auto x = cn::zeros<double>({n0, n1}, cn::Backend::host);
  for (long long i = 0; i < n0; ++i)
    for (long long j = 0; j < n1; ++j) {
      const double gx = static_cast<double>(d.to_global(0, i)),
                   gy = static_cast<double>(d.to_global(1, j));
      phi(i, j) = std::sin(2.0 * M_PI * gx / N0) * std::cos(4.0 * M_PI * gy / N1);
      rhs(i, j) = lambda * phi(i, j);
    }
  {
    cn::PetscVec b = cn::petsc_vec(rhs, world), xv = cn::petsc_vec(x, world);
    KSP ksp;
    PC pc;
    cn::check_petsc(KSPCreate(world.native(), &ksp), "KSPCreate");
    cn::check_petsc(KSPSetOperators(ksp, A, A), "KSPSetOperators");
    cn::check_petsc(KSPSetType(ksp, KSPCG), "KSPSetType");
    cn::check_petsc(KSPGetPC(ksp, &pc), "KSPGetPC");
    cn::check_petsc(PCSetType(pc, PCGAMG), "PCSetType");
    cn::check_petsc(KSPSetTolerances(ksp, 1e-12, 1e-14, PETSC_DEFAULT, 500), "KSPSetTolerances");
    cn::check_petsc(KSPSolve(ksp, b, xv), "KSPSolve");
    KSPConvergedReason reason;
    cn::check_petsc(KSPGetConvergedReason(ksp, &reason), "KSPGetConvergedReason");
    EXPECT_GT(reason, 0) << "KSP did not converge: " << reason;
    PetscInt its = 0;
    KSPGetIterationNumber(ksp, &its);
    if (world.rank() == 0)
      std::printf("CG + GAMG: %d iterations on %s\n", static_cast<int>(its), d.str().c_str());
    cn::check_petsc(KSPDestroy(&ksp), "KSPDestroy");
  }
  double worst = 0.0;
  for (long long i = 0; i < n0; ++i)
    for (long long j = 0; j < n1; ++j) worst = std::max(worst, std::abs(x(i, j) - phi(i, j)));
  EXPECT_LT(world.allreduce(worst, cn::Op::max), 1e-8);  // PETSc wrote the solution into x
  MatNullSpaceDestroy(&constants);
  MatDestroy(&A);
  DMDestroy(&da);
}
