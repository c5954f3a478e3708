// The emulated device's streams: each Stream of the emulated backend owns a worker thread that
// runs the work queued on it in order (kernels, loops, asynchronous copies), so that work on a
// stream overlaps the host and a missing synchronisation gives a wrong result, as on a GPU.
// The default stream (a null handle) runs work inline, as it is issued.
//
// Modes (set_emulated_streams, CUNUMPY_EMULATED_STREAMS): async (the worker starts queued work
// at once), deferred (queued work starts only when something waits for it: the strictest
// setting, where every read without a synchronisation sees the data from before the work) and
// sync (work completes as it is issued).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace cunumpy::detail::emulated {

class Worker {
 public:
  Worker();
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Queues `work`; returns its ticket (the count of work issued so far).
  std::uint64_t enqueue(std::function<void()> work);
  // The ticket of the last work issued (what an event recorded now waits for).
  std::uint64_t issued();
  // Whether the work up to `ticket` has completed; never waits (in deferred mode it lets the
  // worker start on it, so a loop that polls makes progress).
  bool done(std::uint64_t ticket);
  // Waits for the work up to `ticket`; rethrows the first error of the stream's work since
  // the last wait that reported one.
  void wait(std::uint64_t ticket);
  void drain() { wait(issued()); }
  bool busy();
  // Wakes the thread (after a change of mode).
  void notify();

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::function<void()>> queue_;
  std::uint64_t issued_ = 0, completed_ = 0, wanted_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;
};

// A new worker, known to drain_all and after_pending_work.
std::shared_ptr<Worker> make_worker();

// A Stream's native handle on the emulated backend points to one of these.
using StreamHandle = std::shared_ptr<Worker>;
inline Worker* worker_of(void* handle) noexcept {
  return handle == nullptr ? nullptr : static_cast<StreamHandle*>(handle)->get();
}

// An Event's native handle on the emulated backend: the stream and the point recorded.
struct EventState {
  std::shared_ptr<Worker> worker;  // null: nothing recorded, or recorded on the default stream
  std::uint64_t ticket = 0;
};

// Prints an error of queued work that no synchronisation reported (a stream destroyed first).
void report_unreported(const std::exception_ptr& error) noexcept;

// Waits for the work queued on every emulated stream (a device synchronisation).
void drain_all();

// Runs `release` once the work queued now on every emulated stream has completed: at once
// (returning false) when none is pending, else after it (returning true).  The arena frees
// memory through it, so a kernel still queued never reads unmapped memory.
bool after_pending_work(std::function<void()> release);

}  // namespace cunumpy::detail::emulated
