// Launcher detection from each launcher's variables, the CUNUMPY_MPI override, local ranks.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {
cn::LauncherInfo detect(const std::map<std::string, std::string>& vars) {
  return cn::detect_launcher([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}
}  // namespace

TEST(Launcher, NoneSet) {
  const auto info = detect({});
  EXPECT_FALSE(info.under_mpi);
  EXPECT_EQ(info.launcher, "none");
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.local_size, 1);
  EXPECT_FALSE(info.world_size.has_value());
}

TEST(Launcher, OpenMpi) {
  const auto info = detect({{"OMPI_COMM_WORLD_SIZE", "4"},
                            {"OMPI_COMM_WORLD_RANK", "3"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                            {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                            {"PMIX_RANK", "3"}});
  EXPECT_TRUE(info.under_mpi);
  EXPECT_EQ(info.launcher, "Open MPI");
  EXPECT_EQ(info.evidence, "OMPI_COMM_WORLD_SIZE=4");
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.world_rank, 3);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_size, 2);
}

TEST(Launcher, MpichHydraAndIntel) {
  const auto info = detect(
      {{"PMI_RANK", "5"}, {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "4"}});
  EXPECT_TRUE(info.under_mpi);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_size, 4);
  EXPECT_FALSE(detect({{"PMI_RANK", "0"}}).under_mpi)
      << "PMI_RANK without PMI_SIZE is not a launch";
}

TEST(Launcher, Mvapich2) {
  const auto info = detect({{"MV2_COMM_WORLD_SIZE", "2"},
                            {"MV2_COMM_WORLD_RANK", "1"},
                            {"MV2_COMM_WORLD_LOCAL_RANK", "1"}});
  EXPECT_TRUE(info.under_mpi);
  EXPECT_EQ(info.launcher, "MVAPICH2");
  EXPECT_EQ(info.local_rank, 1);
}

TEST(Launcher, SlurmStepButNotAnAllocation) {
  const auto step = detect({{"SLURM_JOB_ID", "7"},
                            {"SLURM_STEP_ID", "0"},
                            {"SLURM_STEP_NUM_TASKS", "4"},
                            {"SLURM_PROCID", "2"},
                            {"SLURM_LOCALID", "2"},
                            {"SLURM_STEP_TASKS_PER_NODE", "4"}});
  EXPECT_TRUE(step.under_mpi);
  EXPECT_EQ(step.launcher, "Slurm srun");
  EXPECT_EQ(step.world_size, 4);
  EXPECT_EQ(step.world_rank, 2);
  EXPECT_EQ(step.local_rank, 2);
  EXPECT_EQ(step.local_size, 4);
  // A shell inside salloc or a batch script: an allocation, no launch.
  const auto alloc = detect({{"SLURM_JOB_ID", "7"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"}});
  EXPECT_FALSE(alloc.under_mpi);
  EXPECT_EQ(detect({{"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"},
                    {"SLURM_STEP_ID", "1"},
                    {"SLURM_STEP_NUM_TASKS", "7"}})
                .local_size,
            2);
}

TEST(Launcher, PmixPalsFlux) {
  EXPECT_EQ(detect({{"PMIX_RANK", "0"}}).launcher, "PMIx");
  const auto pals = detect({{"PALS_RANKID", "3"}, {"PALS_LOCAL_RANKID", "1"}});
  EXPECT_EQ(pals.launcher, "Cray PALS");
  EXPECT_EQ(pals.local_rank, 1);
  const auto flux =
      detect({{"FLUX_TASK_RANK", "2"}, {"FLUX_TASK_LOCAL_ID", "0"}, {"FLUX_JOB_SIZE", "3"}});
  EXPECT_EQ(flux.launcher, "Flux");
  EXPECT_EQ(flux.world_size, 3);
  EXPECT_EQ(detect({{"LOCAL_RANK", "3"}}).local_rank, 3);
  EXPECT_FALSE(detect({{"LOCAL_RANK", "3"}}).under_mpi) << "LOCAL_RANK alone is not an MPI launch";
}

TEST(Launcher, OverrideBothWays) {
  const auto off = detect({{"OMPI_COMM_WORLD_SIZE", "2"}, {"CUNUMPY_MPI", "0"}});
  EXPECT_FALSE(off.under_mpi);
  EXPECT_NE(off.evidence.find("CUNUMPY_MPI=0"), std::string::npos);
  EXPECT_TRUE(detect({{"CUNUMPY_MPI", "yes"}}).under_mpi);
  EXPECT_FALSE(detect({{"CUNUMPY_MPI", "maybe"}, {}}).under_mpi)
      << "an unreadable override is ignored";
}

TEST(DeviceSelection, RankModuloDevices) {
  EXPECT_EQ(cn::detail::device_for(5, 4), 1);
  EXPECT_EQ(cn::detail::device_for(3, 0), 0);
  if (cn::cuda_available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(cn::set_device_for_rank(5), 0) << "no devices: 0, nothing selected";
  EXPECT_FALSE(cn::bind_local_device().has_value());
}

// A launcher variable must be a whole number: trailing text makes it unreadable, not truncated.
TEST(Launcher, NumbersWithTrailingTextAreNotRead) {
  const auto info = detect({{"OMPI_COMM_WORLD_SIZE", "4abc"},
                            {"OMPI_COMM_WORLD_RANK", "1"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "2x"}});
  EXPECT_TRUE(info.under_mpi);
  EXPECT_FALSE(info.world_size.has_value()) << "4abc is not 4";
  EXPECT_EQ(info.world_rank, 1);
  EXPECT_EQ(info.local_rank, 0) << "2x is not read; the default stays";
}

// A CUNUMPY_MPI value that is not understood is a warning, not silently ignored.
TEST(Launcher, AnUnknownCunumpyMpiValueIsAWarning) {
  const auto info = detect({{"CUNUMPY_MPI", "maybe"}});
  EXPECT_FALSE(info.under_mpi);
  EXPECT_NE(info.warning.find("CUNUMPY_MPI=maybe is not one of 1/true/yes/on or 0/false/no/off"),
            std::string::npos)
      << info.warning;
  EXPECT_TRUE(detect({{"CUNUMPY_MPI", "1"}}).warning.empty());
}

TEST(Launcher, ALocalRankOutsideTheNodeIsAWarningAndFolded) {
  const auto i = detect({{"OMPI_COMM_WORLD_SIZE", "8"},
                         {"OMPI_COMM_WORLD_RANK", "6"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "6"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(i.local_rank, 2);
  EXPECT_NE(i.warning.find("the local rank 6 is not below the local size 4"), std::string::npos)
      << i.warning;
  const auto slurm = detect({{"SLURM_LOCALID", "3"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}});
  EXPECT_EQ(slurm.local_rank, 1);
  EXPECT_FALSE(slurm.warning.empty());
  EXPECT_EQ(detect({{"LOCAL_RANK", "3"}}).local_rank, 3)
      << "without a local size nothing is folded";
  const auto fine = detect({{"OMPI_COMM_WORLD_SIZE", "4"},
                            {"OMPI_COMM_WORLD_RANK", "3"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                            {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(fine.local_rank, 3);
  EXPECT_TRUE(fine.warning.empty()) << fine.warning;
}
