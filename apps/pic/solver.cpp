// The table of field solvers (solver.hpp): Config::solver names the row.  A new solver is a new
// file and a row here.
#include "solver.hpp"

#include "config.hpp"

namespace pic {

namespace cn = cunumpy;

std::unique_ptr<FieldSolver> make_solver(const Config& config, const SolverSetup& setup) {
  struct Row {
    const char* name;
    std::unique_ptr<FieldSolver> (*make)(const SolverSetup&);
  };
  constexpr Row rows[] = {{"fft", &make_fft_solver}, {"petsc", &make_petsc_solver}};
  for (const Row& r : rows)
    if (config.solver == r.name) return r.make(setup);
  throw cn::ValueError("pic: no field solver named '" + config.solver + "'; expected fft or petsc");
}

}  // namespace pic
