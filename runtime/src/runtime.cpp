// Runtime start-up and shut-down, and the default runtime (runtime.hpp).
#include <cunumpy/runtime.hpp>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <random>
#include <string>

#include <cunumpy/build_config.hpp>
#include <cunumpy/device.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/internal/comm_impl.hpp>
#include <cunumpy/internal/core_context.hpp>
#include <cunumpy/internal/cuda_api.hpp>
#include <cunumpy/internal/memory_context.hpp>
#include <cunumpy/memory.hpp>
#include <cunumpy/rng.hpp>

#include "device_binding.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

// Referenced by the link option of the runtime target (CMakeLists.txt), so that this file,
// and with it the default runtime's registration below, is in every program.
extern "C" {
extern const int cunumpy_default_runtime_anchor;
const int cunumpy_default_runtime_anchor = 1;
}

namespace cunumpy {

namespace detail {

// The state of every layer, created once per process and installed in the layers' slots; each
// Runtime (the default one, and a constructed one) holds it.
struct RuntimeParts {
  std::shared_ptr<MemoryContext> memory;
  std::shared_ptr<CoreContext> core;
  std::shared_ptr<RandomStreams> random;
  std::shared_ptr<MpiContext> mpi;

  // Installs what is not installed yet, pools first (the core allocates arrays from them),
  // and returns what is installed.  Nothing here reaches a slot's get(), which would start
  // the default runtime.
  static std::shared_ptr<RuntimeParts> installed() {
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    auto parts = std::make_shared<RuntimeParts>();
    parts->memory = context_slot<MemoryContext>().install(std::make_shared<MemoryContext>());
    parts->core = context_slot<CoreContext>().install(
        std::make_shared<CoreContext>(parts->memory->resources));
    parts->random = context_slot<RandomStreams>().install(std::make_shared<RandomStreams>());
    parts->mpi = context_slot<MpiContext>().install(std::make_shared<MpiContext>());
    return parts;
  }

  // The default runtime: created by the first slot that finds nothing installed, never
  // destroyed (arrays and communicators may outlive main).
  static Runtime& default_runtime() {
    static Runtime* d = new Runtime(Runtime::DefaultTag{});
    return *d;
  }
  static void start_default() { (void)default_runtime(); }
};

namespace {
Runtime* g_runtime = nullptr;  // the constructed Runtime, if any

const bool g_registered = [] {
  register_default_runtime(&RuntimeParts::start_default);
  return true;
}();

}  // namespace

void check_required_device(std::optional<bool> option) {
  const char* env = std::getenv("CUNUMPY_REQUIRE_DEVICE");
  const std::optional<bool> from_env = parse_flag(env);
  if (env != nullptr && *env != '\0' && !from_env)
    throw ValueError(std::string("Runtime: CUNUMPY_REQUIRE_DEVICE=") + env +
                     " is not one of 1/true/yes/on or 0/false/no/off");
  const bool required = option.value_or(from_env.value_or(false));
  if (!required || get_backend() != Backend::host) return;
  const std::string by = option ? "RuntimeOptions::require_device" : "CUNUMPY_REQUIRE_DEVICE=1";
  throw BackendError("Runtime: this job must run on a device (" + by +
                     "), but the backend is host: " + backend_reason() +
                     ". Stopping instead of running the job on the CPU; check the node's GPU "
                     "and driver (nvidia-smi), CUDA_VISIBLE_DEVICES and CUNUMPY_BACKEND");
}

void check_world_size(const LauncherInfo& launcher, int mpi_size) {
  if (!launcher.world_size || *launcher.world_size == mpi_size) return;
  throw MpiError(
      "Runtime: the launcher (" + launcher.launcher + ") declared " +
      std::to_string(*launcher.world_size) + " ranks, but MPI_Comm_size is " +
      std::to_string(mpi_size) +
      ": each process started its own MPI world (singletons), so the launcher and the MPI "
      "library do not talk to each other; under Slurm launch with srun --mpi=pmix (see srun "
      "--mpi=list), or use the mpiexec of the MPI cunumpy was built with");
}
}  // namespace detail

Runtime::Runtime(int& argc, char**& argv, RuntimeOptions options) {
  start(&argc, &argv, options);
}
Runtime::Runtime(RuntimeOptions options) {
  start(nullptr, nullptr, options);
}

Runtime::Runtime(DefaultTag) : parts_(detail::RuntimeParts::installed()), default_(true) {
  (void)detail::g_registered;
  steps_.push_back(
      "default runtime: no Runtime was constructed; the state of every layer is installed, MPI is "
      "not started by cunumpy, no device is bound");
}

void Runtime::start(int* argc, char*** argv, const RuntimeOptions& options) {
  if (detail::g_runtime != nullptr)
    throw Error(
        "Runtime: a Runtime already exists in this process; create one at the start of main and "
        "reach it with cunumpy::runtime()");
  if (options.mpi.value_or(false) && !CUNUMPY_HAS_MPI())
    throw BackendError(
        "Runtime: RuntimeOptions::mpi = true, but this build of cunumpy has no MPI; build with "
        "-DCUNUMPY_ENABLE_MPI=ON, or leave mpi unset to run serial wherever MPI is missing");
  // 0. The state of every layer (taken over from the default runtime if it started).
  parts_ = detail::RuntimeParts::installed();

  // 1. The environment.
  const LauncherInfo& launcher = launcher_info();
  if (options.backend) set_backend(*options.backend);
  const bool want_mpi = options.mpi.value_or(launcher.under_mpi);
  steps_.push_back("environment: backend " + std::string(to_string(get_backend())) + " (" +
                   backend_reason() + "), launcher " + launcher.launcher + ", local rank " +
                   std::to_string(launcher.local_rank));
  detail::check_required_device(options.require_device);

  // 1b. The host threads: ranks sharing a node share its cores (an OpenMP team per core per
  // rank oversubscribes them), unless the user chose.
  threads_ = detail::configure_host_threads(launcher);
  steps_.push_back("host threads: " + threads_);

  // 2. The GPU, before MPI_Init.
  const std::optional<DeviceBinding> binding = detail::bind_device();
  if (binding) device_ = binding->device;
  steps_.push_back(binding ? "bind device: " + binding->description
                           : "bind device: none (" + std::string(to_string(get_backend())) +
                                 " backend)");

  // 3. MPI.
  if (want_mpi && !CUNUMPY_HAS_MPI()) {
    std::cerr << "cunumpy: warning: launched under MPI (" << launcher.evidence
              << "), but cunumpy was built without MPI; every process runs alone with the serial "
                 "stand-in (rebuild with -DCUNUMPY_ENABLE_MPI=ON)\n";
    steps_.push_back("MPI not built: serial stand-in");
  } else if (want_mpi) {
    initialized_mpi_ = init_mpi(argc, argv);
    steps_.push_back(initialized_mpi_ ? "MPI_Init_thread"
                                      : "MPI already initialised by the application");
  } else {
    steps_.push_back("MPI not started (not launched under MPI): serial stand-in");
  }
  world_ = Comm::world();

  // 4. The launcher's size against MPI's (when MPI runs: without it we warned above).
  if (!world_.is_serial()) {
    try {
      detail::check_world_size(launcher, world_.size());
    } catch (...) {
      world_ = Comm::serial();
      if (initialized_mpi_) finalize_mpi();
      throw;
    }
    steps_.push_back("world size checked: " + std::to_string(world_.size()));
  }

  // 5. CUDA-awareness.
  awareness_ = (options.probe_cuda_awareness && !world_.is_serial()) ? mpi_is_cuda_aware(world_)
                                                                     : query_cuda_awareness();
  steps_.push_back("CUDA-aware MPI: " + std::string(to_string(awareness_.state)));

  // 6. The random streams: one seed for all ranks, a stream per rank.
  std::uint64_t seed = 0;
  if (options.seed) {
    seed = *options.seed;
  } else {
    std::random_device os;
    seed = (static_cast<std::uint64_t>(os()) << 32) ^ os();
    seed = world_.bcast(seed, 0);
  }
  parts_->random->seed(seed, world_.rank());
  steps_.push_back("random streams: seed " + std::to_string(seed) +
                   (options.seed ? " (given)" : " (drawn by rank 0)") + ", stream of rank " +
                   std::to_string(world_.rank()));
  detail::g_runtime = this;
}

Runtime::~Runtime() {
  if (default_) return;  // never destroyed; kept for symmetry
  try {
    synchronize();
  } catch (const std::exception& e) {
    std::cerr << "cunumpy: warning: synchronisation at shut-down failed: " << e.what() << "\n";
  }
  detail::release_runtime_streams();
  try {
    free_memory_pool();
  } catch (const std::exception& e) {
    std::cerr << "cunumpy: warning: releasing the memory pools at shut-down failed: " << e.what()
              << "\n";
  }
  world_ = Comm::serial();  // free the duplicated communicator before MPI_Finalize
  if (initialized_mpi_) finalize_mpi();
  detail::g_runtime = nullptr;
}

const Comm& Runtime::world() const {
  // The default runtime follows MPI: the application may start it after the first call.
  if (default_ && world_.is_serial() && mpi_initialized()) world_ = Comm::world();
  return world_;
}

std::uint64_t Runtime::seed() const {
  return parts_->random->seed_value();
}

namespace detail {
int threads_per_rank(int node_cores, int affinity_cores, int ranks_on_node) noexcept {
  node_cores = std::max(node_cores, 1);
  if (affinity_cores > 0 && affinity_cores < node_cores)
    return affinity_cores;  // bound by the launcher
  return std::max(1, node_cores / std::max(ranks_on_node, 1));
}
}  // namespace detail

namespace detail {
std::string configure_host_threads(const LauncherInfo& launcher) {
#if defined(_OPENMP)
  if (const char* set = std::getenv("OMP_NUM_THREADS"); set != nullptr && *set != '\0')
    return std::to_string(omp_get_max_threads()) + " OpenMP thread(s) (OMP_NUM_THREADS=" + set +
           ")";
  const int node = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  int affinity = 0;
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) affinity = CPU_COUNT(&mask);
  if (launcher.local_size <= 1 && (affinity == 0 || affinity >= node))
    return std::to_string(omp_get_max_threads()) + " OpenMP thread(s) (one rank on the node)";
  const int threads = detail::threads_per_rank(node, affinity, launcher.local_size);
  omp_set_num_threads(threads);
  return std::to_string(threads) + " OpenMP thread(s) (" + std::to_string(node) + " cores, " +
         std::to_string(launcher.local_size) + " rank(s) on the node" +
         (affinity > 0 && affinity < node
              ? ", " + std::to_string(affinity) + " in this rank's affinity"
              : "") +
         "; set OMP_NUM_THREADS to choose)";
#else
  (void)launcher;
  return "1 (built without OpenMP)";
#endif
}
}  // namespace detail

std::string Runtime::summary() const {
  const LauncherInfo& l = launcher();
  const Comm& w = world();
  std::string s = "cunumpy " + std::string(version()) + " | backend " +
                  std::string(to_string(get_backend())) + " (" + backend_reason() + ")";
  s += device_ ? " | device " + std::to_string(*device_) + " of " + std::to_string(device_count())
               : " | no device bound";
  s += " | rank " + std::to_string(w.rank()) + "/" + std::to_string(w.size()) +
       (w.is_serial() ? " (serial stand-in)" : " (MPI)") + ", local " +
       std::to_string(l.local_rank) + "/" + std::to_string(l.local_size) + ", launcher " +
       l.launcher;
  if (!threads_.empty()) s += " | " + threads_;
  s += " | CUDA-aware MPI: " + std::string(to_string(awareness_.state)) + " (" + awareness_.reason +
       ")";
  if (default_) s += " | default runtime";
  return s;
}

Runtime& runtime() {
  if (detail::g_runtime != nullptr) return *detail::g_runtime;
  return detail::RuntimeParts::default_runtime();
}

}  // namespace cunumpy
