// cunumpy/atomic_counter.hpp: counting the atomic operations of the emulated device's kernels.
//
//   auto atomics = cunumpy::count_atomics();   // counts until it goes out of scope
//   deposit(cunumpy::threads(n), ...);
//   cunumpy::synchronize();                    // queued launches have run
//   atomics.global();                          // atomics on the device's memory
//   atomics.shared();                          // on shared memory
//
// The kernel emulator counts every atomic operation (atomicAdd to atomicXor and their _block and
// _system forms, cunumpy_atomic_add) of the kernels this thread launches while a counter is
// alive, on global memory (the emulated device's arrays, module-scope variables) and on shared
// memory (__shared__ and dynamic shared memory; an atomic on a thread's local variable counts
// here too) apart: what a GPU's deposit pays, measured without a GPU.  A launch queued on a
// stream counts, when it runs, in the counters alive when it was launched; read the counts after
// it completed.  Counters nest.  With no counter alive in the process an atomic costs one
// relaxed load more than without counting; with one, a call into the emulator.  Launches on the
// cuda backend are not counted (launches() says how many were): Nsight Compute's atomic metrics
// measure a GPU.
#pragma once

#include <atomic>
#include <memory>

namespace cunumpy {

// Counts the emulated kernels' atomic operations while alive (see above).
class AtomicCounter {
 public:
  AtomicCounter();
  ~AtomicCounter();
  AtomicCounter(const AtomicCounter&) = delete;
  AtomicCounter& operator=(const AtomicCounter&) = delete;

  // Atomic operations on global memory, on shared memory, and the emulated launches counted.
  long long global() const noexcept { return state_->global.load(std::memory_order_relaxed); }
  long long shared() const noexcept { return state_->shared.load(std::memory_order_relaxed); }
  long long launches() const noexcept { return state_->launches.load(std::memory_order_relaxed); }

  // The counts, shared with the launches that add to them (queued ones may outlive the counter).
  struct State {
    std::atomic<long long> global{0}, shared{0}, launches{0};
  };

 private:
  std::shared_ptr<State> state_;
};

// Starts a counter of this thread's emulated launches: `auto atomics = count_atomics();`.
[[nodiscard]] inline AtomicCounter count_atomics() {
  return AtomicCounter();
}

}  // namespace cunumpy
