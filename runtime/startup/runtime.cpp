// Runtime start-up and shut-down (runtime.hpp).
#include <cunumpy/runtime.hpp>

#include <iostream>
#include <string>

#include <cunumpy/build_config.hpp>
#include <cunumpy/detail/memory.hpp>
#include <cunumpy/device.hpp>
#include <cunumpy/errors.hpp>

namespace cunumpy {
namespace {
Runtime* g_runtime = nullptr;
}

namespace detail {
void check_world_size(const LauncherInfo& launcher, int mpi_size) {
  if (!launcher.world_size || *launcher.world_size == mpi_size) return;
  throw MpiError("Runtime: the launcher (" + launcher.launcher + ") declared " + std::to_string(*launcher.world_size) +
                 " ranks, but MPI_Comm_size is " + std::to_string(mpi_size) +
                 ": each process started its own MPI world (singletons), so the launcher and the MPI "
                 "library do not talk to each other; under Slurm launch with srun --mpi=pmix (see srun "
                 "--mpi=list), or use the mpiexec of the MPI cunumpy was built with");
}
}  // namespace detail

Runtime::Runtime(int& argc, char**& argv, RuntimeOptions options) { start(&argc, &argv, options); }
Runtime::Runtime(RuntimeOptions options) { start(nullptr, nullptr, options); }

void Runtime::start(int* argc, char*** argv, const RuntimeOptions& options) {
  if (g_runtime != nullptr)
    throw Error("Runtime: a Runtime already exists in this process; create one at the start of main and "
                "reach it with cunumpy::runtime()");
  // 1. The environment.
  const LauncherInfo& launcher = launcher_info();
  if (options.backend) set_backend(*options.backend);
  const bool want_mpi = options.mpi.value_or(launcher.under_mpi);
  steps_.push_back("environment: backend " + std::string(to_string(get_backend())) + " (" + backend_reason() +
                   "), launcher " + launcher.launcher + ", local rank " + std::to_string(launcher.local_rank));

  // 2. The GPU, before MPI_Init.
  device_ = bind_local_device();
  steps_.push_back(device_ ? "bind device: " + std::to_string(*device_) + " of " + std::to_string(device_count())
                           : "bind device: none (" + std::string(to_string(get_backend())) + " backend)");

  // 3. MPI.
  if (want_mpi) {
#if CUNUMPY_HAS_MPI()
    initialized_mpi_ = init_mpi(argc, argv);
    steps_.push_back(initialized_mpi_ ? "MPI_Init_thread" : "MPI already initialised by the application");
#else
    (void)argc;
    (void)argv;
    std::cerr << "cunumpy: warning: launched under MPI (" << launcher.evidence
              << "), but cunumpy was built without MPI; every process runs alone with the serial "
                 "stand-in (rebuild with -DCUNUMPY_ENABLE_MPI=ON)\n";
    steps_.push_back("MPI not built: serial stand-in");
#endif
  } else {
    (void)argc;
    (void)argv;
    steps_.push_back("MPI not started (not launched under MPI): serial stand-in");
  }
  world_ = Comm::world();

  // 4. The launcher's size against MPI's (when MPI runs: without it we warned above).
  if (!world_.is_serial()) {
    try {
      detail::check_world_size(launcher, world_.size());
    } catch (...) {
      if (initialized_mpi_) finalize_mpi();
      throw;
    }
    steps_.push_back("world size checked: " + std::to_string(world_.size()));
  }

  // 5. CUDA-awareness.
  awareness_ = (options.probe_cuda_awareness && !world_.is_serial()) ? mpi_is_cuda_aware(world_)
                                                                      : query_cuda_awareness();
  steps_.push_back("CUDA-aware MPI: " + std::string(to_string(awareness_.state)));
  g_runtime = this;
}

Runtime::~Runtime() {
  try {
    synchronize();
  } catch (const std::exception& e) {
    std::cerr << "cunumpy: warning: synchronisation at shut-down failed: " << e.what() << "\n";
  }
  detail::release_pinned_pool();
  detail::release_host_cache();
  world_ = Comm::serial();  // free the duplicated communicator before MPI_Finalize
  if (initialized_mpi_) finalize_mpi();
  g_runtime = nullptr;
}

std::string Runtime::summary() const {
  const LauncherInfo& l = launcher();
  std::string s = "cunumpy " + std::string(version()) + " | backend " + std::string(to_string(get_backend())) + " (" +
                  backend_reason() + ")";
  s += device_ ? " | device " + std::to_string(*device_) + " of " + std::to_string(device_count()) : " | no device bound";
  s += " | rank " + std::to_string(world_.rank()) + "/" + std::to_string(world_.size()) +
       (world_.is_serial() ? " (serial stand-in)" : " (MPI)") + ", local " + std::to_string(l.local_rank) + "/" +
       std::to_string(l.local_size) + ", launcher " + l.launcher;
  s += " | CUDA-aware MPI: " + std::string(to_string(awareness_.state)) + " (" + awareness_.reason + ")";
  return s;
}

Runtime& runtime() {
  if (g_runtime == nullptr)
    throw Error("cunumpy::runtime(): no Runtime exists; create `cunumpy::Runtime rt(argc, argv);` at the start of main");
  return *g_runtime;
}

}  // namespace cunumpy
