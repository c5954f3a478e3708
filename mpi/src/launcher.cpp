// Launcher detection from the environment (launcher.hpp).
#include <cunumpy/launcher.hpp>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <cunumpy/backend.hpp>
#include <cunumpy/errors.hpp>

namespace cunumpy {
namespace {

std::optional<int> read_int(const EnvironmentLookup& env, const char* name) {
  const char* v = env(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  // The whole value must be the number: "4abc" is not 4.
  if (end == v || *end != '\0' || x < 0 || x > 1 << 30) return std::nullopt;
  return static_cast<int>(x);
}

bool is_set(const EnvironmentLookup& env, const char* name) {
  const char* v = env(name);
  return v != nullptr && *v != '\0';
}

std::string shown(const EnvironmentLookup& env, const char* name) {
  const char* v = env(name);
  return std::string(name) + "=" + (v ? v : "");
}

// The first number of a Slurm task list such as "4" or "2(x3),1".
std::optional<int> first_count(const char* v) {
  if (v == nullptr || !std::isdigit(static_cast<unsigned char>(*v))) return std::nullopt;
  return std::atoi(v);
}

}  // namespace

LauncherInfo detect_launcher(const EnvironmentLookup& env) {
  LauncherInfo info;
  info.launcher = "none";

  // Who launched us: the first family whose per-rank variables are present.
  struct Family {
    const char* name;
    const char* marker;  // must be set
    const char* also;    // must be set too (or nullptr)
    const char* size;    // declared world size (or nullptr)
    const char* rank;    // world rank (or nullptr)
  };
  static const Family families[] = {
      {"Open MPI", "OMPI_COMM_WORLD_SIZE", nullptr, "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
      {"MVAPICH2", "MV2_COMM_WORLD_SIZE", nullptr, "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"},
      {"Slurm srun", "SLURM_STEP_ID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NUM_TASKS",
       "SLURM_PROCID"},
      {"MPICH/Hydra or Intel MPI (PMI)", "PMI_RANK", "PMI_SIZE", "PMI_SIZE", "PMI_RANK"},
      {"PMIx", "PMIX_RANK", nullptr, nullptr, "PMIX_RANK"},
      {"Cray PALS", "PALS_RANKID", nullptr, nullptr, "PALS_RANKID"},
      {"Flux", "FLUX_TASK_RANK", nullptr, "FLUX_JOB_SIZE", "FLUX_TASK_RANK"},
  };
  for (const Family& f : families) {
    if (!is_set(env, f.marker) || (f.also != nullptr && !is_set(env, f.also))) continue;
    info.under_mpi = true;
    info.launcher = f.name;
    info.evidence = shown(env, f.marker);
    if (f.also != nullptr) info.evidence += ", " + shown(env, f.also);
    if (f.size != nullptr) info.world_size = read_int(env, f.size);
    if (f.rank != nullptr) info.world_rank = read_int(env, f.rank);
    break;
  }

  if (auto forced = detail::parse_flag(env("CUNUMPY_MPI"))) {
    info.under_mpi = *forced;
    info.evidence = shown(env, "CUNUMPY_MPI") + " (overrides" +
                    (info.evidence.empty() ? std::string(" the detection") : " " + info.evidence) +
                    ")";
  } else if (is_set(env, "CUNUMPY_MPI")) {
    info.warning =
        shown(env, "CUNUMPY_MPI") +
        " is not one of 1/true/yes/on or 0/false/no/off; ignored, the launcher detection decides";
  }

  // The rank within the node: each launcher's own variable first, then the generic ones.
  static const char* const local_ranks[] = {"OMPI_COMM_WORLD_LOCAL_RANK",
                                            "MV2_COMM_WORLD_LOCAL_RANK",
                                            "MPI_LOCALRANKID",
                                            "PMI_LOCAL_RANK",
                                            "PALS_LOCAL_RANKID",
                                            "FLUX_TASK_LOCAL_ID",
                                            "SLURM_LOCALID",
                                            "LOCAL_RANK"};
  for (const char* name : local_ranks)
    if (auto v = read_int(env, name)) {
      info.local_rank = *v;
      break;
    }
  static const char* const local_sizes[] = {"OMPI_COMM_WORLD_LOCAL_SIZE",
                                            "MV2_COMM_WORLD_LOCAL_SIZE",
                                            "MPI_LOCALNRANKS",
                                            "PMI_LOCAL_SIZE",
                                            "PALS_LOCAL_SIZE",
                                            "LOCAL_WORLD_SIZE"};
  bool have_local_size = false;
  for (const char* name : local_sizes)
    if (auto v = read_int(env, name); v && *v > 0) {
      info.local_size = *v;
      have_local_size = true;
      break;
    }
  if (!have_local_size)
    if (auto v = first_count(env("SLURM_STEP_TASKS_PER_NODE")); v && *v > 0) {
      info.local_size = *v;
      have_local_size = true;
    }
  // Without a variable for it, the local size is at least what the local rank implies.
  if (!have_local_size && info.local_rank >= info.local_size) info.local_size = info.local_rank + 1;
  // An inconsistent environment (a rank within the node outside the node's ranks) would bind
  // two ranks to one GPU or none: say so, and fold the rank into range.
  if (have_local_size && (info.local_rank < 0 || info.local_rank >= info.local_size)) {
    const int folded = ((info.local_rank % info.local_size) + info.local_size) % info.local_size;
    const std::string text =
        "the local rank " + std::to_string(info.local_rank) + " is not below the local size " +
        std::to_string(info.local_size) +
        " the launcher's variables give (an inconsistent environment); using local rank " +
        std::to_string(folded);
    info.warning = info.warning.empty() ? text : info.warning + "; " + text;
    info.local_rank = folded;
  }
  return info;
}

const LauncherInfo& launcher_info() {
  static const LauncherInfo info = [] {
    LauncherInfo i = detect_launcher([](const char* name) { return std::getenv(name); });
    if (!i.warning.empty()) std::fprintf(stderr, "cunumpy: warning: %s\n", i.warning.c_str());
    return i;
  }();
  return info;
}

bool launched_under_mpi() {
  return launcher_info().under_mpi;
}
int local_rank() {
  return launcher_info().local_rank;
}
int local_size() {
  return launcher_info().local_size;
}

}  // namespace cunumpy
