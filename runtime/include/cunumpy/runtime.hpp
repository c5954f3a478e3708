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
//      (CUNUMPY_BACKEND, or the options); with a device required (CUNUMPY_REQUIRE_DEVICE=1 or
//      options.require_device), a backend that is not a device (cuda asked for on a node whose
//      GPU is missing or broken became host) stops every rank here, before MPI, with the reason;
//   2. the GPU: on the cuda backend, device local_rank % device_count is bound and its context
//      created, before MPI_Init, so that a CUDA-aware MPI sees the right device;
//   3. MPI_Init_thread, only when launched under MPI (or forced with options.mpi / CUNUMPY_MPI=1);
//      built without MPI but launched under a launcher: a warning, then the serial stand-in;
//   4. the launcher's declared world size must equal MPI_Comm_size (N singletons under a
//      misconfigured srun are caught here, with how to fix the launch);
//   5. CUDA-awareness: the library query, and on the cuda backend the collective probe;
//   6. the random streams: seeded with options.seed (or a seed rank 0 draws and shares) and
//      the world rank.
// Before step 1 it creates the state of every layer and installs it (the ledger, the memory
// pools the arrays come from, the random streams, the MPI layer's answers): the Runtime owns
// it.  Destruction, in this order: synchronises the device (every stream's work is done),
// releases the pools' cached blocks and the device pool, frees the world communicator, then
// calls MPI_Finalize if this Runtime initialised MPI.  Blocks that live arrays still hold go
// back to their pool when those arrays go.
//
// Programs that never construct a Runtime get the default runtime, started by the first call
// into cunumpy: the same state, the backend from the environment, no MPI started (the world
// is MPI's when the application started MPI itself), no device bound.  cunumpy::runtime()
// returns the constructed Runtime, else the default one.  A Runtime constructed after the
// default one started takes its state over; when it ends, the default one goes on.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cunumpy/backend.hpp>
#include <cunumpy/comm.hpp>
#include <cunumpy/launcher.hpp>
#include <cunumpy/mpi_buffer.hpp>

namespace cunumpy {

// The Runtime's choices; each defaults to the environment's.
struct RuntimeOptions {
  std::optional<Backend> backend;     // default: the environment (CUNUMPY_BACKEND)
  std::optional<bool> mpi;            // default: launched_under_mpi(); true in a build without
                                      // MPI: BackendError (the Python get_mpi(True)'s ImportError)
  bool probe_cuda_awareness = true;   // run the collective probe on the cuda backend
  std::optional<std::uint64_t> seed;  // the random streams' seed (default: drawn by rank 0, shared)
  // The job must run on a device backend (cuda, or emulated chosen explicitly): BackendError at
  // start-up, with the reason, instead of running on the host.  Default: CUNUMPY_REQUIRE_DEVICE
  // (1/true/yes/on), else false.
  std::optional<bool> require_device;
};

namespace detail {
struct RuntimeParts;
}

// Starts cunumpy in the right order (device binding, then MPI, then the backend) and stops it
// (see the top of this header).
class Runtime {
 public:
  Runtime(int& argc, char**& argv, RuntimeOptions options = {});
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The world communicator (for the default runtime: MPI's world once the application has
  // started MPI, the serial stand-in before).
  const Comm& world() const;
  const LauncherInfo& launcher() const noexcept { return launcher_info(); }
  std::optional<int> device() const noexcept { return device_; }
  const CudaAwareness& cuda_awareness() const noexcept { return awareness_; }
  bool initialized_mpi() const noexcept { return initialized_mpi_; }
  // The steps of start-up in the order they ran, e.g. "bind device: none (host backend)".
  const std::vector<std::string>& startup_steps() const noexcept { return steps_; }

  // The default runtime of a program that constructed none.
  bool is_default() const noexcept { return default_; }
  // The seed of the random streams (set at start-up; drawn on first use by the default one).
  std::uint64_t seed() const;

  // One line: version, backend and why, device, rank/size (local, launcher), host threads,
  // CUDA-awareness.
  std::string summary() const;
  // The OpenMP threads of this rank and why (OMP_NUM_THREADS, or the node's cores shared
  // among its ranks when it is unset).
  const std::string& host_threads() const noexcept { return threads_; }

 private:
  struct DefaultTag {};
  explicit Runtime(DefaultTag);
  friend struct detail::RuntimeParts;  // starts the default runtime
  void start(int* argc, char*** argv, const RuntimeOptions& options);

  std::shared_ptr<detail::RuntimeParts> parts_;
  mutable Comm world_ = Comm::serial();
  bool default_ = false;
  std::optional<int> device_;
  CudaAwareness awareness_;
  bool initialized_mpi_ = false;
  std::vector<std::string> steps_;
  std::string threads_;
};

namespace detail {
// The OpenMP threads a rank takes when OMP_NUM_THREADS is unset: the cores it may run on (its
// affinity mask) when the launcher bound it to fewer than the node has, else its share of the
// node's cores among the node's ranks; at least 1.
int threads_per_rank(int node_cores, int affinity_cores, int ranks_on_node) noexcept;
// Sets this rank's OpenMP threads so (unless OMP_NUM_THREADS is set) and says how many and
// why; the Runtime calls it at start-up, programs without one (the MPI test main) may too.
std::string configure_host_threads(const LauncherInfo& launcher);
}  // namespace detail

// The process's Runtime: the constructed one, else the default runtime (started now if it
// has not started yet).
Runtime& runtime();

// Which GPU a node-local rank uses: device local_rank % devices (the CUDA index, counted in
// CUDA_VISIBLE_DEVICES's order when it is set), the entry of CUDA_VISIBLE_DEVICES that index is
// (what nvidia-smi calls it), and how many of the node's ranks share it: ranks up to the device
// count get a device each; more ranks than devices share them round robin (each device
// local_size / devices ranks, one more for the first local_size % devices).
struct DeviceBinding {
  int device = -1;          // the CUDA device index; -1 without devices
  std::string visible_as;   // its CUDA_VISIBLE_DEVICES entry ("3", "GPU-8f0c..."), else the index
  int ranks_sharing = 0;    // node-local ranks on this device, this one included
  std::string description;  // e.g. "device 1 of 4 (CUDA_VISIBLE_DEVICES entry 3), 2 ranks share it"
};
// The binding of `local_rank` of `local_size` ranks on a node with `devices` visible devices and
// the CUDA_VISIBLE_DEVICES text `visible` (nullptr or empty: unset).  Pure: tests and
// bind_local_device use it.  ValueError for a rank outside [0, local_size).
DeviceBinding device_binding(int local_rank, int local_size, int devices, const char* visible);

// Selects device local_rank() % device_count() (device_binding) and creates its context; call it
// before MPI_Init so that a CUDA-aware MPI sees the right device (start-up does).  Returns the
// id, or nothing on the host and emulated backends or without devices.
std::optional<int> bind_local_device();

namespace detail {
// Step 4: throws MpiError when the launcher declared a world size other than `mpi_size`.
void check_world_size(const LauncherInfo& launcher, int mpi_size);
// Step 1: throws BackendError when a device is required (`option`, else CUNUMPY_REQUIRE_DEVICE)
// and the active backend is host.
void check_required_device(std::optional<bool> option);
}  // namespace detail

}  // namespace cunumpy
