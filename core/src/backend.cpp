// Backend selection, CUDA availability, synchronize and version (backend.hpp).
#include <cunumpy/backend.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include <cunumpy/build_config.hpp>
#include <cunumpy/device.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/ledger.hpp>

#include <cunumpy/stream.hpp>

#include <cunumpy/internal/cuda_api.hpp>
#include <cunumpy/internal/emulated_stream.hpp>

namespace cunumpy {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<Backend> backend_named(std::string_view name) {
  const std::string n = lower(name);
  if (n == "host" || n == "numpy") return Backend::host;
  if (n == "cuda" || n == "cupy") return Backend::cuda;
  if (n == "emulated") return Backend::emulated;
  return std::nullopt;
}

const detail::cuda_api::Probe& cuda_probe() {
  static const detail::cuda_api::Probe probe = detail::cuda_api::probe();
  return probe;
}

// Applies a request: cuda without a device becomes host, with the reason recorded.
detail::BackendSelection resolve(Backend requested, const std::string& why) {
  if (requested == Backend::cuda && !cuda_available())
    return {Backend::host,
            why + ", but CUDA is unavailable (" + cuda_unavailable_reason() + "); using host"};
  return {requested, why};
}

// The process default: read from the environment once, changed by set_backend.  The backend
// is an atomic (read on every array creation and loop), the reason is guarded by the mutex.
struct ProcessDefault {
  std::atomic<Backend> backend{Backend::host};
  std::mutex mutex;
  std::string reason;
};

ProcessDefault& process_default() {
  static ProcessDefault* d = [] {
    auto* p = new ProcessDefault;  // never destroyed: arrays freed at exit may still ask
    const auto request = detail::backend_from_environment(std::getenv("CUNUMPY_BACKEND"),
                                                          std::getenv("ARRAY_BACKEND"));
    if (!request.warning.empty()) std::cerr << "cunumpy: warning: " << request.warning << "\n";
    detail::BackendSelection s = resolve(request.backend, request.reason);
    p->backend.store(s.backend);
    p->reason = std::move(s.reason);
    return p;
  }();
  return *d;
}

// The calling thread's innermost UseBackend scope (nullptr: the thread follows the default).
thread_local detail::BackendSelection* t_scope = nullptr;

}  // namespace

std::string_view to_string(Backend backend) noexcept {
  switch (backend) {
    case Backend::host:
      return "host";
    case Backend::cuda:
      return "cuda";
    case Backend::emulated:
      return "emulated";
  }
  return "unknown";
}

std::ostream& operator<<(std::ostream& os, Backend backend) {
  return os << to_string(backend);
}

Backend parse_backend(std::string_view name) {
  if (auto b = backend_named(name)) return *b;
  throw ValueError("unknown backend '" + std::string(name) +
                   "'; expected one of host, cuda, emulated (or the Python names numpy, cupy)");
}

namespace {
// One variable's request: the backend it names when it is one of `names`, else host with a
// warning that lists `expected`; nothing when the variable is unset or empty.
std::optional<detail::BackendRequest> request_from(const char* variable, const char* value,
                                                   std::initializer_list<std::string_view> names,
                                                   const char* expected) {
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::string setting = std::string(variable) + "=" + value;
  const std::string n = lower(value);
  detail::BackendRequest r;
  if (std::find(names.begin(), names.end(), n) != names.end()) {
    r.backend = *backend_named(n);
    r.reason = setting;
  } else {
    r.backend = Backend::host;
    r.reason = setting + " is not understood; using host";
    r.warning = setting + " is not one of " + expected + "; using the host backend";
  }
  return r;
}
}  // namespace

namespace detail {
BackendRequest backend_from_environment(const char* cunumpy_backend, const char* array_backend) {
  if (auto r = request_from("CUNUMPY_BACKEND", cunumpy_backend, {"host", "cuda", "emulated"},
                            "host, cuda, emulated"))
    return *r;
  if (auto r = request_from("ARRAY_BACKEND", array_backend, {"numpy", "cupy"},
                            "numpy, cupy (or CUNUMPY_BACKEND=host|cuda|emulated)"))
    return *r;
  BackendRequest r;
  r.reason = "default (CUNUMPY_BACKEND is not set)";
  return r;
}

std::optional<bool> parse_flag(const char* value) {
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::string s = lower(value);
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  return std::nullopt;
}
}  // namespace detail

void set_backend(Backend backend) {
  detail::BackendSelection s =
      resolve(backend, "set_backend(" + std::string(to_string(backend)) + ")");
  if (t_scope != nullptr) *t_scope = s;  // this thread's scope too (restored when it ends)
  ProcessDefault& d = process_default();
  const std::lock_guard lock(d.mutex);
  d.backend.store(s.backend);
  d.reason = std::move(s.reason);
}

void set_backend(std::string_view name) {
  set_backend(parse_backend(name));
}

Backend get_backend() {
  if (t_scope != nullptr) return t_scope->backend;
  return process_default().backend.load(std::memory_order_relaxed);
}
std::string backend_reason() {
  if (t_scope != nullptr) return t_scope->reason;
  ProcessDefault& d = process_default();
  const std::lock_guard lock(d.mutex);
  return d.reason;
}

Backend default_backend() {
  return process_default().backend.load(std::memory_order_relaxed);
}

bool host_backend() {
  return get_backend() == Backend::host;
}
bool cuda_backend() {
  return get_backend() == Backend::cuda;
}
bool emulated_backend() {
  return get_backend() == Backend::emulated;
}
bool device_backend() {
  return get_backend() != Backend::host;
}

UseBackend::UseBackend(Backend backend)
    : selection_(resolve(backend, "use_backend(" + std::string(to_string(backend)) + ")")),
      previous_(t_scope) {
  t_scope = &selection_;
}

UseBackend::~UseBackend() {
  t_scope = previous_;
}

bool cuda_available() {
  return cuda_probe().count > 0;
}
std::string cuda_unavailable_reason() {
  return cuda_probe().reason;
}
int device_count() {
  return cuda_probe().count;
}

namespace detail {
void synchronize_backend(Backend backend, SyncKind kind, const char* what,
                         const std::source_location& where) {
  if (backend == Backend::host) return;
  const bool whole_device = kind == SyncKind::device || kind == SyncKind::timer;
  if (backend == Backend::cuda) {
    if (whole_device)
      cuda_api::device_synchronize();
    else
      cuda_api::stream_synchronize(current_stream(Backend::cuda).native_handle());
  }
  if (backend == Backend::emulated) {
    if (whole_device)
      emulated::drain_all();
    else
      emulated_drain(current_stream(Backend::emulated));
  }
  record_sync(
      kind, [what] { return std::string(what); }, where);
}
}  // namespace detail

void synchronize(std::source_location where) {
  detail::synchronize_backend(get_backend(), SyncKind::device, "synchronize()", where);
}

void set_device(int id) {
  if (get_backend() != Backend::cuda) return;
  if (id < 0 || id >= device_count())
    throw ValueError("set_device: device " + std::to_string(id) + " does not exist; " +
                     std::to_string(device_count()) +
                     " device(s) are visible (check CUDA_VISIBLE_DEVICES)");
  detail::cuda_api::set_device(id);
}

int current_device() {
  return cuda_available() ? detail::cuda_api::current_device() : 0;
}

int set_device_for_rank(int rank, int devices_per_node) {
  const int count = device_count();
  if (count == 0) return 0;
  const int id =
      detail::device_for(rank, devices_per_node > 0 ? std::min(devices_per_node, count) : count);
  set_device(id);
  return id;
}

std::string_view version() noexcept {
  return CUNUMPY_VERSION_STRING;
}

namespace {
// The numeric parts of a version string: "0.5.0rc1" -> {0, 5, 0}; stops at the first part
// that does not start with a digit.
std::vector<long> numeric_parts(std::string_view text) {
  std::vector<long> parts;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i) break;
    long part = 0;
    const auto [end, error] = std::from_chars(text.data() + i, text.data() + j, part);
    if (error != std::errc())
      throw ValueError("version '" + std::string(text) + "': the part '" +
                       std::string(text.substr(i, j - i)) +
                       "' is not a number cunumpy can compare; pass e.g. \"0.4.0\"");
    (void)end;
    parts.push_back(part);
    while (j < text.size() && text[j] != '.') ++j;  // skip a suffix such as "rc1"
    i = j + 1;
  }
  return parts;
}
}  // namespace

void require_version(std::string_view minimum) {
  std::vector<long> want = numeric_parts(minimum);
  if (want.empty())
    throw ValueError("require_version: '" + std::string(minimum) +
                     "' is not a version; pass e.g. \"0.4.0\"");
  std::vector<long> have = numeric_parts(version());
  const std::size_t n = std::max(want.size(), have.size());
  want.resize(n, 0);
  have.resize(n, 0);
  if (have < want)
    throw VersionError("cunumpy " + std::string(version()) + " is older than the required " +
                       std::string(minimum) + "; install cunumpy " + std::string(minimum) +
                       " or newer");
}

}  // namespace cunumpy
