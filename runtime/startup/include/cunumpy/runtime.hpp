// cunumpy/runtime.hpp: Runtime, the object that starts and owns cunumpy in a process.
//
//   int main(int argc, char** argv) {
//     cunumpy::Runtime rt(argc, argv);           // one per process, first thing in main
//     std::puts(rt.summary().c_str());
//     const cunumpy::Comm& world = rt.world();
//     ...
//   }                                            // synchronises, releases pools, MPI_Finalize
//
// Start-up runs in this order, each step recorded in startup_steps():
//   1. the environment: launcher (launched_under_mpi, CUNUMPY_MPI), node-local rank, backend
//      (CUNUMPY_BACKEND, or the options);
//   2. the GPU: on the cuda backend, device local_rank % device_count is bound and its context
//      created, before MPI_Init, so that a CUDA-aware MPI sees the right device;
//   3. MPI_Init_thread, only when launched under MPI (or forced with options.mpi / CUNUMPY_MPI=1);
//      built without MPI but launched under a launcher: a warning, then the serial stand-in;
//   4. the launcher's declared world size must equal MPI_Comm_size (N singletons under a
//      misconfigured srun are caught here, with how to fix the launch);
//   5. CUDA-awareness: the library query, and on the cuda backend the collective probe.
// Destruction synchronises the device, frees the cached pinned staging memory and calls
// MPI_Finalize if this Runtime initialised MPI.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <cunumpy/backend.hpp>
#include <cunumpy/comm.hpp>
#include <cunumpy/launcher.hpp>
#include <cunumpy/mpi_buffer.hpp>

namespace cunumpy {

struct RuntimeOptions {
  std::optional<Backend> backend;   // default: the environment (CUNUMPY_BACKEND)
  std::optional<bool> mpi;          // default: launched_under_mpi()
  bool probe_cuda_awareness = true; // run the collective probe on the cuda backend
};

class Runtime {
 public:
  Runtime(int& argc, char**& argv, RuntimeOptions options = {});
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const Comm& world() const noexcept { return world_; }
  const LauncherInfo& launcher() const noexcept { return launcher_info(); }
  std::optional<int> device() const noexcept { return device_; }
  const CudaAwareness& cuda_awareness() const noexcept { return awareness_; }
  bool initialized_mpi() const noexcept { return initialized_mpi_; }
  // The steps of start-up in the order they ran, e.g. "bind device: none (host backend)".
  const std::vector<std::string>& startup_steps() const noexcept { return steps_; }

  // One line: version, backend and why, device, rank/size (local, launcher), CUDA-awareness.
  std::string summary() const;

 private:
  void start(int* argc, char*** argv, const RuntimeOptions& options);

  Comm world_ = Comm::serial();
  std::optional<int> device_;
  CudaAwareness awareness_;
  bool initialized_mpi_ = false;
  std::vector<std::string> steps_;
};

// The process's Runtime; Error when none exists.
Runtime& runtime();

namespace detail {
// Step 4: throws MpiError when the launcher declared a world size other than `mpi_size`.
void check_world_size(const LauncherInfo& launcher, int mpi_size);
}  // namespace detail

}  // namespace cunumpy
