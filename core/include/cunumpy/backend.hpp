// cunumpy/backend.hpp: which backend new arrays and parallel loops use.
//
// Three backends: `host` (CPU memory, OpenMP loops), `cuda` (a real GPU) and `emulated`
// (host memory behind the device API, so that every device code path runs in CI without a
// GPU).
//
// The active backend is per thread, on top of a process-wide default:
//   - the process default comes from CUNUMPY_BACKEND=host|cuda|emulated (the Python
//     reference's ARRAY_BACKEND=numpy|cupy is accepted too) and is changed by set_backend()
//     (or RuntimeOptions::backend); every thread that is in no use_backend() scope follows it;
//   - use_backend(b) selects b for the calling thread only, until the scope ends: other
//     threads, and threads started inside the scope, keep following the process default.
// Asking for cuda without a working device selects host instead, and backend_reason() says
// why.  Every call here is thread-safe.
//
// The active backend is only a default for application code: the library itself never reads
// it to decide where an array's work runs (an operation on arrays runs where they live, see
// <cunumpy/target.hpp>), and never changes it.
#pragma once

#include <iosfwd>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>

#include <cunumpy/ledger.hpp>

namespace cunumpy {

// Where work runs and arrays live: the host (CPU, OpenMP), a CUDA GPU, or the emulated device
// (host memory behind the device API, for CI without a GPU).
enum class Backend { host, cuda, emulated };

// "host", "cuda" or "emulated".
std::string_view to_string(Backend backend) noexcept;

std::ostream& operator<<(std::ostream& os, Backend backend);

// Parses "host", "cuda", "emulated" (and the Python names "numpy" -> host, "cupy" -> cuda).
// Throws ValueError naming the accepted values.
Backend parse_backend(std::string_view name);

// Selects the process default.  Backend::cuda without a functional CUDA device selects host
// instead and records the reason.  Called inside a use_backend() scope, it also changes that
// scope's selection for the calling thread (the scope still restores its predecessor when it
// ends).  Existing arrays do not move.
void set_backend(Backend backend);
void set_backend(std::string_view name);

// The calling thread's active backend (its innermost use_backend() scope, else the process
// default) and why it is the one it is (e.g. "CUNUMPY_BACKEND=cuda requested; CUDA
// unavailable (no driver: cudaGetDeviceCount returned 35); using host").
Backend get_backend();
std::string backend_reason();
// The process default, whatever scope the calling thread is in.
Backend default_backend();

// Convenience checks of the calling thread's active backend.
bool host_backend();
bool cuda_backend();
bool emulated_backend();
// cuda or emulated: arrays created now live in device memory.
bool device_backend();

namespace detail {
struct BackendSelection {
  Backend backend = Backend::host;
  std::string reason;
};
}  // namespace detail

// RAII guard: selects `backend` for the calling thread for its scope and restores the
// thread's previous selection when the scope ends, also when it is left by an exception.
// Scopes nest; they must end in the thread that began them, in reverse order.
class [[nodiscard]] UseBackend {
 public:
  explicit UseBackend(Backend backend);
  ~UseBackend();
  UseBackend(const UseBackend&) = delete;
  UseBackend& operator=(const UseBackend&) = delete;

 private:
  detail::BackendSelection selection_;
  detail::BackendSelection* previous_;
};
// Makes `backend` the calling thread's active backend until the scope ends.
[[nodiscard]] inline UseBackend use_backend(Backend backend) {
  return UseBackend(backend);
}

// Whether a CUDA device can be used by this process (cached).  Without one,
// cuda_unavailable_reason() says why: "built without CUDA", "no driver: cudaGetDeviceCount
// returned 35 (cudaErrorInsufficientDriver)", "no CUDA device visible".
bool cuda_available();
std::string cuda_unavailable_reason();

// Number of visible CUDA devices; 0 when CUDA is unavailable.  Independent of the active
// backend.
int device_count();

// Waits for all queued device work (cuda), counted as a device synchronisation on the
// device backends; a no-op on host.
void synchronize(std::source_location where = std::source_location::current());

// The cunumpy version ("0.1.0") and a check for components that need a minimum version:
// throws VersionError when the library is older than `minimum` (numeric parts compared,
// e.g. "0.4.0", "1.2", "0.5.0rc1" -> 0.5.0).  ValueError when `minimum` has no number.
std::string_view version() noexcept;
void require_version(std::string_view minimum);

namespace detail {
// Waits for the device work of `backend` (the whole device for SyncKind::device and timer, the
// current stream otherwise) and records the synchronisation as `kind`; nothing on host.
void synchronize_backend(Backend backend, SyncKind kind, const char* what,
                         const std::source_location& where);

// What the environment asks for: the backend, the reason text, and a warning for a value
// that is not understood (empty when there is none).  Exposed for tests.
struct BackendRequest {
  Backend backend = Backend::host;
  std::string reason;
  std::string warning;
};
BackendRequest backend_from_environment(const char* cunumpy_backend, const char* array_backend);

// An on/off environment value: 1/true/yes/on or 0/false/no/off (any case); nothing for an
// unset, empty or unreadable value.
std::optional<bool> parse_flag(const char* value);
}  // namespace detail

}  // namespace cunumpy
