// The PETSc field solver where cunumpy was built without PETSc: a clear error.
#include "solver.hpp"

namespace pic {

std::unique_ptr<FieldSolver> make_petsc_solver(const SolverSetup&) {
  throw cunumpy::ValueError(
      "--solver petsc: cunumpy was built without PETSc; install petsc-dev (scripts/install_deps.sh "
      "does) and configure with -DCUNUMPY_ENABLE_PETSC=ON, or use --solver fft");
}

}  // namespace pic
