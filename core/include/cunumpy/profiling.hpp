// cunumpy/profiling.hpp: counting transfers, NVTX ranges and timed regions.
//
//   auto counter = cunumpy::count_transfers();   // counts until it goes out of scope
//   step(dt);
//   EXPECT_EQ(counter.total(), 0) << counter.report();
//
//   cunumpy::assert_no_transfers([&] { step(dt); });   // throws TransferAssertionError
//
//   { cunumpy::NvtxRange range("push");  push(...); }  // a range on the Nsight timeline
//   cunumpy::Timing t = cunumpy::timed("push", [&] { push(...); });
//
// Counters nest: every active counter sees every event in its scope.  A counter counts the
// transfers and synchronisations of the thread that created it (CountScope::thread, the
// default: an output or communication thread's copies do not show in the compute thread's
// assert_no_transfers), or of every thread of the process (CountScope::process).  An event is
// counted in the thread that asks for it: the caller of to_host, copy, HostStaging::copy,
// synchronize..., also when the work itself then runs on a stream's worker.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <source_location>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cunumpy/build_config.hpp>
#include <cunumpy/ledger.hpp>

namespace cunumpy {

// Whose transfers a TransferCounter counts.
enum class CountScope {
  thread,   // the thread that created the counter
  process,  // every thread
};

// Records the transfers and synchronisations made through cunumpy while it is alive.  The
// counts and report() may be read at any time, also while other threads record into a
// process counter; events() and sync_events() return references: read them once the threads
// that record into the counter are done.
class TransferCounter {
 public:
  explicit TransferCounter(CountScope scope = CountScope::thread);
  ~TransferCounter();
  TransferCounter(const TransferCounter&) = delete;
  TransferCounter& operator=(const TransferCounter&) = delete;

  long long to_host() const noexcept { return count(TransferKind::to_host); }
  long long to_device() const noexcept { return count(TransferKind::to_device); }
  long long kernel_conversions() const noexcept { return count(TransferKind::kernel_conversion); }
  long long fallbacks() const noexcept { return count(TransferKind::fallback); }
  // Copies through host memory for an MPI that is not CUDA-aware (counted in total() too).
  long long mpi_stagings() const noexcept { return count(TransferKind::mpi_staging); }
  long long count(TransferKind kind) const noexcept;
  long long total() const noexcept;
  const std::vector<TransferEvent>& events() const noexcept { return events_; }
  std::vector<TransferEvent> kernel_conversion_calls() const;

  long long synchronizations() const noexcept;
  long long synchronizations(SyncKind kind) const noexcept;
  CountScope scope() const noexcept { return scope_; }
  // The thread that created it.
  std::thread::id owner() const noexcept { return owner_; }
  const std::vector<SyncEvent>& sync_events() const noexcept { return syncs_; }

  // The report of the Python reference:
  //   4 transfer(s) through cunumpy (3 to_host, 1 to_device, 0 kernel_conversion, 0 fallback)
  //   to_host (3):
  //     sim/diagnostics.cpp:42: to_host(shape=(100000,), dtype=float64) (x3)
  //   ...
  // followed, when there were any, by the synchronisations grouped the same way.
  std::string report() const;

  // Stops counting early (the destructor does it otherwise).
  void stop() noexcept;

 private:
  friend void detail::record_transfer_event(TransferKind, std::string, const std::source_location&);
  friend void detail::record_sync_event(SyncKind, std::string, const std::source_location&);

  std::vector<TransferEvent> events_;
  std::vector<SyncEvent> syncs_;
  std::array<long long, transfer_kind_count> counts_{};
  std::array<long long, sync_kind_count> sync_counts_{};
  bool active_ = false;
  CountScope scope_;
  std::thread::id owner_;
};

// Starts a counter: `auto counter = count_transfers();` (this thread's transfers), or
// count_transfers(CountScope::process).
[[nodiscard]] inline TransferCounter count_transfers(CountScope scope = CountScope::thread) {
  return TransferCounter(scope);
}

// Scope form of assert_no_transfers: when the scope ends normally, throws
// TransferAssertionError with the report if a transfer was made inside it.  When the scope
// is left by an exception, that exception propagates as it is and nothing else is thrown.
class AssertNoTransfers {
 public:
  explicit AssertNoTransfers(CountScope scope = CountScope::thread)
      : counter_(scope), uncaught_(std::uncaught_exceptions()) {}
  ~AssertNoTransfers() noexcept(false) {
    counter_.stop();
    if (std::uncaught_exceptions() == uncaught_) check();
  }
  AssertNoTransfers(const AssertNoTransfers&) = delete;
  AssertNoTransfers& operator=(const AssertNoTransfers&) = delete;
  const TransferCounter& counter() const noexcept { return counter_; }
  // Throws now if a transfer has been seen.
  void check() const;

 private:
  TransferCounter counter_;
  int uncaught_;
};

// Runs `body`; throws TransferAssertionError with the report if it made a transfer (in the
// calling thread; CountScope::process: in any thread).  An exception thrown by `body`
// propagates unchanged.
template <typename Body>
void assert_no_transfers(Body&& body, CountScope scope = CountScope::thread) {
  AssertNoTransfers guard(scope);
  std::forward<Body>(body)();
}

// ---- NVTX --------------------------------------------------------------------------------

// An NVTX range in cunumpy's domain ("cunumpy") for its scope, so the region shows on the
// Nsight Systems timeline beside the kernels it launches.  Names are registered once and
// cached.  `color` is an optional index into a small colour table.  Built with
// CUNUMPY_ENABLE_NVTX=OFF it compiles to nothing.
class NvtxRange {
 public:
#if CUNUMPY_HAS_NVTX()
  explicit NvtxRange(const char* name, std::optional<int> color = std::nullopt) {
    push(name, color);
  }
  explicit NvtxRange(const std::string& name, std::optional<int> color = std::nullopt)
      : NvtxRange(name.c_str(), color) {}
  ~NvtxRange() {
    pop();
  }
#else
  explicit NvtxRange(const char*, std::optional<int> = std::nullopt) {}
  explicit NvtxRange(const std::string&, std::optional<int> = std::nullopt) {}
#endif
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
#if CUNUMPY_HAS_NVTX()
  static void push(const char* name, std::optional<int> color);
  static void pop() noexcept;
#endif
};

// The Python reference's spelling: `auto range = nvtx_range("push");`.
[[nodiscard]] inline NvtxRange nvtx_range(const std::string& name,
                                          std::optional<int> color = std::nullopt) {
  return NvtxRange(name, color);
}

namespace detail {
// Number of distinct range names registered with NVTX so far (0 without NVTX).
std::size_t nvtx_registered_names() noexcept;
}  // namespace detail

// ---- timed regions -------------------------------------------------------------------------

// What a timed region measured: its name, the elapsed seconds (set when it ends), and
// whether the device was synchronised at its end so that queued kernels were included.
struct Timing {
  std::string name;
  std::optional<double> elapsed;
  bool synced = false;
};

// Times its scope, including the device work it queues: on a device backend it
// synchronises on entry (earlier work is not charged) and, if `sync`, again before reading
// the clock on exit.  Pushes an NvtxRange of the same name.  On host it is a plain timer
// and synced is false.  stop() ends it early; the result is also written to `*out` if given.
class TimedRegion {
 public:
  explicit TimedRegion(std::string name, bool sync = true, Timing* out = nullptr,
                       std::source_location where = std::source_location::current());
  ~TimedRegion();
  TimedRegion(const TimedRegion&) = delete;
  TimedRegion& operator=(const TimedRegion&) = delete;

  const Timing& stop();
  const Timing& timing() const noexcept { return timing_; }

 private:
  Timing timing_;
  Timing* out_;
  bool sync_;
  bool running_ = true;
  std::source_location where_;
  bool entry_synced_;  // synchronised before the range and the clock start
  NvtxRange range_;
  std::chrono::steady_clock::time_point start_;
};

// The Python reference's spelling: `auto region = timed_region("push"); ... region.stop()`.
[[nodiscard]] inline TimedRegion timed_region(
    std::string name, bool sync = true, Timing* out = nullptr,
    std::source_location where = std::source_location::current()) {
  return TimedRegion(std::move(name), sync, out, where);
}

// Runs `body` in a TimedRegion and returns its Timing.  If `body` throws, the exception
// propagates and the region still closes its NVTX range.
template <typename Body>
Timing timed(std::string name, Body&& body, bool sync = true,
             std::source_location where = std::source_location::current()) {
  TimedRegion region(std::move(name), sync, nullptr, where);
  std::forward<Body>(body)();
  return region.stop();
}

}  // namespace cunumpy
