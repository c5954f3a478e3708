// cunumpy/stream.hpp: streams and events of the device backends, as owning RAII types.
//
//   cunumpy::Stream s;                         // a non-blocking stream of the active backend
//   {
//     auto scope = cunumpy::use_stream(s);     // current for this thread within the scope
//     cunumpy::parallel_for(...);              // issued on s
//   }                                          // the previous stream is current again
//   cunumpy::Event done(/*timing=*/true);
//   done.record(s);
//   if (!done.query()) ...                     // never waits
//   s.synchronize();                           // counted as a stream synchronisation
//
// On cuda a Stream owns a cudaStream_t (created non-blocking, synchronised and destroyed with
// the object) and an Event a cudaEvent_t; on emulated a Stream owns a worker thread that runs
// the work queued on it in order (kernels, loops, asynchronous copies) while the host goes on,
// so a missing synchronisation gives a wrong result there as on a GPU (see EmulatedStreams);
// on host they do nothing.  Both are movable and
// not copyable; a moved-from object is empty.  current_stream(backend) is the stream device
// work of that backend is issued on now: the one of this thread's innermost StreamScope of a
// stream of that backend, else the backend's default stream (native handle nullptr).  The
// current streams are per thread, as CUDA's.
#pragma once

#include <functional>
#include <source_location>
#include <string_view>

#include <cunumpy/backend.hpp>

namespace cunumpy {

// A stream someone else owns: what current_stream() returns and what kernels are given.
class StreamRef {
 public:
  StreamRef() = default;
  StreamRef(Backend backend, void* handle) noexcept : backend_(backend), handle_(handle) {}
  Backend backend() const noexcept { return backend_; }
  // The cudaStream_t on cuda (nullptr: the default stream); nullptr on host.
  void* native_handle() const noexcept { return handle_; }
  // Waits for the work issued on the stream (counted; nothing on host).
  void synchronize(std::source_location where = std::source_location::current()) const;

 private:
  Backend backend_ = Backend::host;
  void* handle_ = nullptr;
};

class Event;

// A queue of work on one backend's device (a cudaStream_t on cuda, a worker thread on the
// emulated device; the host runs work as it is issued).
class Stream {
 public:
  // A new stream of `backend` (the active one by default).
  Stream() : Stream(get_backend()) {}
  explicit Stream(Backend backend);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Backend backend() const noexcept { return backend_; }
  void* native_handle() const noexcept { return handle_; }
  StreamRef ref() const noexcept { return {backend_, handle_}; }
  operator StreamRef() const noexcept {
    return ref();
  }  // NOLINT: a Stream is usable wherever a StreamRef is

  void synchronize(std::source_location where = std::source_location::current()) const {
    ref().synchronize(where);
  }
  // Work issued on this stream from now on waits until `event` has completed.
  void wait(const Event& event) const;

 private:
  void reset() noexcept;
  Backend backend_ = Backend::host;
  void* handle_ = nullptr;
};

// Makes a stream current for the calling thread until the scope ends (scopes nest, and end
// in reverse order in the thread that began them).  The stream must outlive the scope.
class [[nodiscard]] StreamScope {
 public:
  explicit StreamScope(StreamRef stream) noexcept;
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  StreamRef stream_;
  StreamRef previous_;
  StreamRef previous_of_;
};
// Makes `stream` the calling thread's current stream of its backend until the scope ends.
[[nodiscard]] inline StreamScope use_stream(StreamRef stream) noexcept {
  return StreamScope(stream);
}

// The stream this thread issues `backend`'s device work on now: its innermost StreamScope of
// a stream of `backend`, else that backend's default stream.
StreamRef current_stream(Backend backend) noexcept;
// The innermost StreamScope's stream of this thread, whatever its backend, else the default
// stream of the thread's active backend (application code's default).
StreamRef current_stream() noexcept;

// The Runtime's copy stream of a device backend (created on first use, synchronised and
// destroyed when the Runtime ends): HostStaging's device-to-host copies run on it, so they
// overlap the kernels of the current stream.  An empty StreamRef on host.  Without an
// argument: the active backend's.
StreamRef copy_stream(Backend backend);
StreamRef copy_stream();

// A point in a stream's work: recorded, waited for, or timed against another event.
class Event {
 public:
  // An event of `backend` (the active one by default); `timing` events can measure
  // elapsed() (they cost a little more to record).
  explicit Event(bool timing = false) : Event(get_backend(), timing) {}
  Event(Backend backend, bool timing);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Marks the point in `stream` (the current stream by default) that query() and
  // synchronize() wait for.
  void record() { record(current_stream()); }
  void record(StreamRef stream);
  // True when the work before the recorded point has completed (or nothing was recorded);
  // never waits.
  bool query() const;
  // Waits for the recorded point (counted as a stream synchronisation).
  void synchronize(std::source_location where = std::source_location::current()) const;
  // Seconds from `start` to `end`, both recorded and complete, both timing events of one
  // backend (the host clock on host and emulated).  Error otherwise.
  static double elapsed(const Event& start, const Event& end);

  Backend backend() const noexcept { return backend_; }
  void* native_handle() const noexcept { return handle_; }

 private:
  void reset() noexcept;
  Backend backend_ = Backend::host;
  void* handle_ = nullptr;  // cudaEvent_t on cuda; nullptr on host and emulated
  bool timing_ = false;
  bool recorded_ = false;
  bool moved_ = false;    // moved from: owns nothing, counted no longer
  double host_time_ = 0;  // when it was recorded (host and emulated, which complete work at once)
};

// How the emulated device runs the work queued on a Stream (the default stream always runs
// work as it is issued).  From CUNUMPY_EMULATED_STREAMS=async|deferred|sync, else async.
enum class EmulatedStreams {
  async,     // the stream's worker starts queued work at once, beside the host
  deferred,  // queued work starts only when something waits for it (a synchronize, an event,
             // another stream waiting for an event): every read without a synchronisation
             // sees the data from before the work, so a missing one always shows
  sync,      // work completes as it is issued (to tell whether a wrong result is a race)
};
void set_emulated_streams(EmulatedStreams mode);
EmulatedStreams emulated_streams() noexcept;
std::string_view to_string(EmulatedStreams mode) noexcept;

namespace detail {
// Queues `work` on `stream` when it is an emulated stream with a worker (true: `work` was
// moved from); false: the caller runs it now (the stream's earlier work has completed).
bool emulated_enqueue(StreamRef stream, std::function<void()>& work);
// Waits, uncounted, for the work queued on an emulated stream (nothing for other streams):
// what an operation that the emulated device runs inline does first, to stay in stream order.
void emulated_drain(StreamRef stream);
// emulated_drain(current_stream(Backend::emulated)) when `backend` is emulated.
void emulated_order(Backend backend);
// Waits, uncounted, for a recorded event (cuda or emulated); the caller counts the wait.
void event_wait(const Event& event);

// Streams and events alive now (for leak tests).
long long live_streams() noexcept;
long long live_events() noexcept;
}  // namespace detail

}  // namespace cunumpy
