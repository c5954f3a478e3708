// CUDA-awareness of the MPI library (mpi_buffer.hpp).
#include <cunumpy/mpi_buffer.hpp>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include <cunumpy/internal/comm_impl.hpp>

#if CUNUMPY_HAS_MPI() && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_CUDA_AWARE_SUPPORT and MPIX_Query_cuda_support
#endif

namespace cunumpy {

std::string_view to_string(Awareness a) noexcept {
  switch (a) {
    case Awareness::yes:
      return "yes";
    case Awareness::no:
      return "no";
    case Awareness::unknown:
      return "unknown";
  }
  return "unknown";
}

namespace {
// The MPI library by name, for messages about it ("Open MPI 4.1.4", "MPICH 4.0.2").
[[maybe_unused]] std::string mpi_library_name() {
#if CUNUMPY_HAS_MPI()
#if defined(OPEN_MPI) && OPEN_MPI
  return "Open MPI " + std::to_string(OMPI_MAJOR_VERSION) + "." +
         std::to_string(OMPI_MINOR_VERSION) + "." + std::to_string(OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
  return std::string("MPICH ") + MPICH_VERSION;
#else
  return "the MPI library";
#endif
#else
  return "the MPI library";
#endif
}
}  // namespace

CudaAwareness query_cuda_awareness() {
  CudaAwareness out;
  const char* env = std::getenv("CUNUMPY_MPI_CUDA_AWARE");
  if (const auto forced = detail::parse_flag(env)) {
    out.state = *forced ? Awareness::yes : Awareness::no;
    out.reason = "CUNUMPY_MPI_CUDA_AWARE=" + std::string(env);
    return out;
  }
  if (env != nullptr && *env != '\0') {  // set, but not understood: say so, once
    static std::once_flag warned;
    const std::string value(env);
    std::call_once(warned, [&] {
      std::fprintf(stderr,
                   "cunumpy: warning: CUNUMPY_MPI_CUDA_AWARE=%s is not one of 1/true/yes/on or "
                   "0/false/no/off; "
                   "ignored, the library decides\n",
                   value.c_str());
    });
    out.reason = "CUNUMPY_MPI_CUDA_AWARE=" + value + " is not understood (ignored); ";
  }
#if !CUNUMPY_HAS_MPI()
  out.state = Awareness::no;
  out.reason += "built without MPI: the serial stand-in copies host buffers only";
#else
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  out.reason += "compile time: MPIX_CUDA_AWARE_SUPPORT=1";
  bool compile_yes = true;
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
  out.reason += "compile time: MPIX_CUDA_AWARE_SUPPORT=0";
  bool compile_yes = false;
#else
  out.reason += "compile time: MPIX_CUDA_AWARE_SUPPORT not defined";
  bool compile_yes = false;
#endif
#if defined(OPEN_MPI) && OPEN_MPI && defined(MPIX_CUDA_AWARE_SUPPORT)
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    const int runtime = MPIX_Query_cuda_support();
    out.reason += "; run time: MPIX_Query_cuda_support()=" + std::to_string(runtime);
    out.state = runtime ? Awareness::yes : Awareness::no;
    return out;
  }
#endif
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000
  {
    int initialized = 0;
    MPI_Initialized(&initialized);
    int supported = 0;
    if (initialized && MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported) == MPI_SUCCESS) {
      out.reason += "; run time: MPIX_GPU_query_support(CUDA)=" + std::to_string(supported);
      out.state = supported ? Awareness::yes : Awareness::no;
      return out;
    }
  }
#endif
  out.state = compile_yes ? Awareness::unknown : Awareness::no;
  if (!compile_yes) out.reason += " (" + mpi_library_name() + " was built without CUDA support)";
#endif
  return out;
}

void set_mpi_cuda_aware(std::optional<bool> aware) {
  detail::mpi_context().recorded_cuda_awareness.store(aware ? (*aware ? 1 : 0) : -1);
}

CudaAwareness mpi_cuda_aware() {
  if (const int recorded = detail::mpi_context().recorded_cuda_awareness.load(); recorded >= 0)
    return {recorded == 1 ? Awareness::yes : Awareness::no, "set_mpi_cuda_aware"};
  return query_cuda_awareness();
}

namespace detail {
bool device_pointer_ok(Backend backend, std::optional<bool> aware) {
  if (backend == Backend::host) return true;
  if (aware) return *aware;
  return mpi_cuda_aware().state == Awareness::yes;
}

bool ring_exchange_probe(const Comm& comm, Backend memory_backend) {
  const int n = 4;
  int ok = 1;
  try {
    const int right = (comm.rank() + 1) % comm.size();
    const int left = (comm.rank() + comm.size() - 1) % comm.size();
    auto send = full<int>({n}, 1000 + comm.rank(), memory_backend);
    auto recv = full<int>({n}, -1, memory_backend);
    synchronize_backend(memory_backend, SyncKind::mpi, "mpi_is_cuda_aware probe",
                        std::source_location::current());
    comm.sendrecv<int>(std::span<const int>(send.data(), n), right, std::span<int>(recv.data(), n),
                       left, 31415);
    auto host = to_host(recv);
    for (int i = 0; i < n; ++i) ok = ok && host(i) == 1000 + left;
  } catch (const std::exception&) {
    ok = 0;
  }
  return comm.allreduce(ok, Op::logical_and) != 0;
}
}  // namespace detail

CudaAwareness mpi_is_cuda_aware(const Comm& comm) {
  CudaAwareness q = query_cuda_awareness();
  if (get_backend() != Backend::cuda) {
    q.reason += "; no exchange probe on the " + std::string(to_string(get_backend())) + " backend";
    return q;
  }
  if (q.state != Awareness::no) {
    const bool passed = detail::ring_exchange_probe(comm, Backend::cuda);
    q.state = passed ? Awareness::yes : Awareness::no;
    q.reason += passed ? "; probe: device ring exchange passed on all ranks"
                       : "; probe: device ring exchange failed on at least one rank";
  }
  set_mpi_cuda_aware(q.state == Awareness::yes);
  return q;
}

void require_cuda_aware_mpi(const Comm& comm) {
  if (get_backend() != Backend::cuda) return;
  const CudaAwareness a = mpi_is_cuda_aware(comm);
  if (a.state == Awareness::yes) return;
  throw BackendError(
      "require_cuda_aware_mpi: this MPI cannot take device buffers (" + a.reason +
      "); use a CUDA-aware build: Open MPI configured --with-cuda (and UCX with CUDA), "
      "MPICH with a CUDA-enabled UCX or OFI, or your site's CUDA-aware MPI module; "
      "otherwise drop this requirement and cunumpy stages device buffers through "
      "pinned host memory");
}

}  // namespace cunumpy
