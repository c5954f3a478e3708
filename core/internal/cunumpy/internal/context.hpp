// cunumpy/internal/context.hpp: how each layer reaches the state the Runtime owns.
//
// Library-internal (not installed, not for applications).  Every layer keeps its mutable
// process state in one context object (the core's ledger and memory resources, the memory
// layer's pools, the kernels' random streams, the MPI layer's answers).  The Runtime, the
// composition root at the top, creates one context of each layer and installs it in the
// layer's ContextSlot before it does anything else; code in a layer reaches its context with
// slot.get(), one atomic load, and never includes a layer above it.
//
// Programs that never construct a Runtime get the default runtime: the first get() of any
// slot starts it (once per process) through the factory that the top layer registers at
// static initialisation.  A layer used without the top layer linked falls back to a context
// of its own, default-constructed.  Contexts are installed once and never replaced or
// destroyed (they outlive static destruction, like the arrays that may still point into
// their pools), so the references get() returns stay valid.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

namespace cunumpy::detail {

// Starts the default runtime through the registered factory, once per process; returns at
// once when there is no factory, when it has run, or when called from inside it.
void ensure_default_runtime();
using DefaultRuntimeFactory = void (*)();
// Called by the top layer's static initialisation.
void register_default_runtime(DefaultRuntimeFactory factory) noexcept;

template <typename T>
class ContextSlot {
 public:
  T& get() {
    if (T* p = current_.load(std::memory_order_acquire)) return *p;
    return slow();
  }

  // Installs `context` unless one is installed already; returns the one installed now.
  std::shared_ptr<T> install(std::shared_ptr<T> context) {
    std::lock_guard lock(mutex_);
    if (!*owner_) {
      *owner_ = std::move(context);
      current_.store(owner_->get(), std::memory_order_release);
    }
    return *owner_;
  }

 private:
  T& slow() {
    ensure_default_runtime();
    std::lock_guard lock(mutex_);
    if (!*owner_) {
      *owner_ = std::make_shared<T>();
      current_.store(owner_->get(), std::memory_order_release);
    }
    return **owner_;
  }

  std::atomic<T*> current_{nullptr};
  std::mutex mutex_;
  std::shared_ptr<T>* owner_ = new std::shared_ptr<T>();  // never destroyed (see above)
};

// The slot of a layer's context type: one per process, never destroyed.
template <typename T>
ContextSlot<T>& context_slot() {
  static ContextSlot<T>* slot = new ContextSlot<T>();
  return *slot;
}

}  // namespace cunumpy::detail
