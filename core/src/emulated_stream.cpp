// The emulated device's stream workers (emulated_stream.hpp).
#include <cunumpy/internal/emulated_stream.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <cunumpy/errors.hpp>
#include <cunumpy/stream.hpp>

namespace cunumpy {
namespace detail::emulated {
namespace {

std::atomic<int>& mode_word() {
  static std::atomic<int> mode = [] {
    const char* env = std::getenv("CUNUMPY_EMULATED_STREAMS");
    const std::string_view v = env == nullptr ? "" : env;
    if (v.empty() || v == "async") return static_cast<int>(EmulatedStreams::async);
    if (v == "deferred") return static_cast<int>(EmulatedStreams::deferred);
    if (v == "sync") return static_cast<int>(EmulatedStreams::sync);
    std::fprintf(stderr,
                 "cunumpy: warning: CUNUMPY_EMULATED_STREAMS=%s is not understood (expected "
                 "async, deferred or sync); using async\n",
                 env);
    return static_cast<int>(EmulatedStreams::async);
  }();
  return mode;
}

EmulatedStreams mode() noexcept {
  return static_cast<EmulatedStreams>(mode_word().load(std::memory_order_relaxed));
}

// Every live worker, for device synchronisation and the arena's deferred frees.
struct Registry {
  std::mutex mutex;
  std::vector<std::weak_ptr<Worker>> workers;
  std::vector<std::shared_ptr<Worker>> live() {
    std::lock_guard lock(mutex);
    std::vector<std::shared_ptr<Worker>> out;
    for (const auto& w : workers)
      if (auto p = w.lock()) out.push_back(std::move(p));
    return out;
  }
};
Registry& registry() {
  static Registry* r = new Registry;  // outlives workers destroyed during static destruction
  return *r;
}

thread_local const Worker* t_running = nullptr;  // the worker whose thread this is

}  // namespace

Worker::Worker() {
  thread_ = std::thread([this] { run(); });
}

std::shared_ptr<Worker> make_worker() {
  auto w = std::make_shared<Worker>();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::erase_if(r.workers, [](const std::weak_ptr<Worker>& p) { return p.expired(); });
  r.workers.push_back(w);
  return w;
}

Worker::~Worker() {
  {
    std::lock_guard lock(mutex_);
    wanted_ = issued_;  // what is queued still runs, in every mode
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();  // the last owner let go inside the stream's own work
  } else {
    thread_.join();
  }
  if (error_) report_unreported(error_);
}

void report_unreported(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "cunumpy: error: work on an emulated stream failed and the stream was destroyed "
                 "before a synchronisation reported it: %s\n",
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "cunumpy: error: work on an emulated stream failed (unknown exception)\n");
  }
}

void Worker::run() {
  t_running = this;
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] {
      if (queue_.empty()) return stop_;
      return mode() != EmulatedStreams::deferred || wanted_ > completed_;
    });
    if (queue_.empty()) return;
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::exception_ptr failure;
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
    work = nullptr;  // what the work holds is released outside the lock
    lock.lock();
    if (failure && !error_) error_ = failure;
    ++completed_;
    done_cv_.notify_all();
  }
}

std::uint64_t Worker::enqueue(std::function<void()> work) {
  std::uint64_t ticket = 0;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
    ticket = ++issued_;
  }
  work_cv_.notify_one();
  return ticket;
}

std::uint64_t Worker::issued() {
  std::lock_guard lock(mutex_);
  return issued_;
}

bool Worker::done(std::uint64_t ticket) {
  std::lock_guard lock(mutex_);
  if (completed_ >= ticket) return true;
  if (ticket > wanted_) {
    wanted_ = ticket;
    work_cv_.notify_one();
  }
  return false;
}

void Worker::wait(std::uint64_t ticket) {
  std::unique_lock lock(mutex_);
  if (completed_ < ticket) {
    if (t_running == this)
      throw Error(
          "emulated stream: work queued on a stream waits for later work of the same stream, "
          "which can never run; wait for an event of another stream instead");
    if (ticket > wanted_) {
      wanted_ = ticket;
      work_cv_.notify_one();
    }
    done_cv_.wait(lock, [&] { return completed_ >= ticket; });
  }
  if (error_ && t_running != this) std::rethrow_exception(std::exchange(error_, nullptr));
}

bool Worker::busy() {
  std::lock_guard lock(mutex_);
  return completed_ < issued_;
}

void Worker::notify() {
  { std::lock_guard lock(mutex_); }
  work_cv_.notify_all();
}

void drain_all() {
  std::exception_ptr first;
  for (const auto& w : registry().live()) {
    if (w.get() == t_running) continue;
    try {
      w->drain();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

bool after_pending_work(std::function<void()> release) {
  std::vector<std::shared_ptr<Worker>> busy = registry().live();
  std::erase_if(busy, [](const std::shared_ptr<Worker>& w) { return !w->busy(); });
  if (busy.empty()) return false;
  auto left = std::make_shared<std::atomic<int>>(static_cast<int>(busy.size()));
  auto shared = std::make_shared<std::function<void()>>(std::move(release));
  for (const auto& w : busy)
    w->enqueue([left, shared] {
      if (left->fetch_sub(1) == 1) (*shared)();
    });
  return true;
}

}  // namespace detail::emulated

void set_emulated_streams(EmulatedStreams m) {
  detail::emulated::mode_word().store(static_cast<int>(m));
  for (const auto& w : detail::emulated::registry().live()) w->notify();
}

EmulatedStreams emulated_streams() noexcept {
  return detail::emulated::mode();
}

std::string_view to_string(EmulatedStreams m) noexcept {
  switch (m) {
    case EmulatedStreams::async:
      return "async";
    case EmulatedStreams::deferred:
      return "deferred";
    case EmulatedStreams::sync:
      return "sync";
  }
  return "?";
}

namespace detail {

bool emulated_enqueue(StreamRef stream, std::function<void()>& work) {
  if (stream.backend() != Backend::emulated) return false;
  emulated::Worker* w = emulated::worker_of(stream.native_handle());
  if (w == nullptr) return false;  // the default stream runs work as it is issued
  if (emulated::mode() == EmulatedStreams::sync) {
    w->drain();
    return false;
  }
  w->enqueue(std::move(work));
  return true;
}

void emulated_drain(StreamRef stream) {
  if (stream.backend() != Backend::emulated) return;
  if (emulated::Worker* w = emulated::worker_of(stream.native_handle())) w->drain();
}

void emulated_order(Backend backend) {
  if (backend == Backend::emulated) emulated_drain(current_stream(Backend::emulated));
}

}  // namespace detail
}  // namespace cunumpy
