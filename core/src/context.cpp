// The default runtime's start (internal/context.hpp).
#include <cunumpy/internal/context.hpp>

#include <atomic>
#include <mutex>

namespace cunumpy::detail {
namespace {
std::atomic<DefaultRuntimeFactory> g_factory{nullptr};
thread_local bool t_starting = false;
}  // namespace

void register_default_runtime(DefaultRuntimeFactory factory) noexcept {
  g_factory.store(factory);
}

void ensure_default_runtime() {
  const DefaultRuntimeFactory factory = g_factory.load();
  if (factory == nullptr || t_starting) return;
  static std::once_flag once;
  struct Starting {
    Starting() { t_starting = true; }
    ~Starting() { t_starting = false; }
  } starting;
  std::call_once(once, factory);
}

}  // namespace cunumpy::detail
