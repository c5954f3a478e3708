// cunumpy/launcher.hpp: what the MPI launcher told this process, read from the environment
// before (and without) MPI_Init.
//
//   if (cunumpy::launched_under_mpi()) ...      // mpiexec, mpirun, srun, aprun/PALS, flux run
//   int local = cunumpy::local_rank();          // rank within the node, for GPU binding
//
// A process counts as launched under MPI when a launcher has started it as one rank of a
// job: the per-rank variables of Open MPI (OMPI_COMM_WORLD_SIZE), MPICH/Hydra and Intel MPI
// (PMI_RANK and PMI_SIZE), MVAPICH2 (MV2_COMM_WORLD_SIZE), PMIx (PMIX_RANK), Cray PALS
// (PALS_RANKID), Flux (FLUX_TASK_RANK), or a Slurm job step started by srun (SLURM_STEP_ID
// with SLURM_PROCID and SLURM_STEP_NUM_TASKS).  Variables that describe an allocation but not
// a launch (SLURM_JOB_ID alone, as in a shell inside salloc or a batch script) do not count:
// MPI_Init there would start a singleton, which is what the serial stand-in already is.
// CUNUMPY_MPI=1 or 0 overrides the detection (true/yes/on and false/no/off work too).
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace cunumpy {

// What the launcher's environment says about this process.
struct LauncherInfo {
  bool under_mpi = false;
  std::string launcher;  // "Open MPI", "MPICH/Hydra", "Slurm srun", ... or "none"
  std::string evidence;  // the variable(s) that decided, e.g. "OMPI_COMM_WORLD_SIZE=4"
  int local_rank = 0;    // rank within the node (0 when no variable says)
  int local_size = 1;    // ranks on this node (when no variable says: 1, or local_rank + 1)
  std::optional<int> world_size;  // the size the launcher declared, when it declares one
  std::optional<int> world_rank;
  std::string warning;  // a variable that was set but not understood (printed once at start-up)
};

// Reads the launcher variables through `getenv` (the process environment by default).
using EnvironmentLookup = std::function<const char*(const char*)>;
LauncherInfo detect_launcher(const EnvironmentLookup& getenv);
// The process's launcher, read once and cached.
const LauncherInfo& launcher_info();

// The process's launcher's answers: whether it runs as an MPI rank, its rank and rank count on
// its node.
bool launched_under_mpi();
int local_rank();
int local_size();

}  // namespace cunumpy
