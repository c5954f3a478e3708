// CUDA-awareness of the MPI library (mpi_buffer.hpp).
#include <cunumpy/mpi_buffer.hpp>

#include <cstdlib>
#include <string>

#if CUNUMPY_HAS_MPI() && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_CUDA_AWARE_SUPPORT and MPIX_Query_cuda_support
#endif

namespace cunumpy {

std::string_view to_string(Awareness a) noexcept {
  switch (a) {
    case Awareness::yes: return "yes";
    case Awareness::no: return "no";
    case Awareness::unknown: return "unknown";
  }
  return "unknown";
}

namespace {
std::optional<bool> g_recorded;
}

CudaAwareness query_cuda_awareness() {
  CudaAwareness out;
  if (const char* env = std::getenv("CUNUMPY_MPI_CUDA_AWARE"); env && *env) {
    const std::string v(env);
    if (v == "1" || v == "0") {
      out.state = v == "1" ? Awareness::yes : Awareness::no;
      out.reason = "CUNUMPY_MPI_CUDA_AWARE=" + v;
      return out;
    }
  }
#if !CUNUMPY_HAS_MPI()
  out.state = Awareness::no;
  out.reason = "built without MPI: the serial stand-in copies host buffers only";
#else
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  out.reason = "compile time: MPIX_CUDA_AWARE_SUPPORT=1";
  bool compile_yes = true;
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
  out.reason = "compile time: MPIX_CUDA_AWARE_SUPPORT=0";
  bool compile_yes = false;
#else
  out.reason = "compile time: MPIX_CUDA_AWARE_SUPPORT not defined";
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
  out.state = compile_yes ? Awareness::unknown : Awareness::no;
  if (!compile_yes) out.reason += " (the library was built without CUDA support)";
#endif
  return out;
}

void set_mpi_cuda_aware(std::optional<bool> aware) { g_recorded = aware; }

CudaAwareness mpi_cuda_aware() {
  if (g_recorded) return {*g_recorded ? Awareness::yes : Awareness::no, "set_mpi_cuda_aware"};
  return query_cuda_awareness();
}

namespace detail {
bool device_pointer_ok(Backend backend) {
  return backend != Backend::host && mpi_cuda_aware().state == Awareness::yes;
}
}  // namespace detail

}  // namespace cunumpy
