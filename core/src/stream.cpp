// Stream, StreamScope, Event and the current stream (stream.hpp).
#include <cunumpy/stream.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

#include <cunumpy/errors.hpp>
#include <cunumpy/internal/core_context.hpp>
#include <cunumpy/internal/cuda_api.hpp>
#include <cunumpy/internal/emulated_stream.hpp>
#include <cunumpy/ledger.hpp>

namespace cunumpy {
namespace {

// This thread's streams: the innermost StreamScope's, and the innermost of each backend's
// (a scope of a cuda stream hides no emulated stream of an outer scope).
struct CurrentStreams {
  StreamRef innermost;
  StreamRef of[3];
  int depth = 0;         // StreamScopes open on this thread
  int depth_of[3] = {};  // of each backend
};
thread_local CurrentStreams t_streams;

std::atomic<long long> g_live_streams{0};
std::atomic<long long> g_live_events{0};

namespace emulated = detail::emulated;

emulated::EventState* event_state(void* handle) noexcept {
  return static_cast<emulated::EventState*>(handle);
}

double host_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void StreamRef::synchronize(std::source_location where) const {
  if (backend_ == Backend::host) return;
  if (backend_ == Backend::cuda) detail::cuda_api::stream_synchronize(handle_);
  if (backend_ == Backend::emulated) detail::emulated_drain(*this);
  detail::record_sync(
      SyncKind::stream, [] { return std::string("Stream::synchronize()"); }, where);
}

Stream::Stream(Backend backend) : backend_(backend) {
  if (backend == Backend::host) return;
  handle_ = backend == Backend::cuda
                ? detail::cuda_api::stream_create()
                : static_cast<void*>(new emulated::StreamHandle(emulated::make_worker()));
  ++g_live_streams;
}

void Stream::reset() noexcept {
  if (handle_ == nullptr) return;
  if (backend_ == Backend::cuda) {
    try {
      detail::cuda_api::stream_synchronize(handle_);
    } catch (...) {
    }
    detail::cuda_api::stream_destroy(handle_);
  } else {
    auto* worker = static_cast<emulated::StreamHandle*>(handle_);
    try {
      (*worker)->drain();
    } catch (...) {
      emulated::report_unreported(std::current_exception());
    }
    delete worker;  // events recorded on it keep the worker until they go
  }
  handle_ = nullptr;
  --g_live_streams;
}

Stream::~Stream() {
  reset();
}

Stream::Stream(Stream&& other) noexcept
    : backend_(other.backend_), handle_(std::exchange(other.handle_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    reset();
    backend_ = other.backend_;
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

void Stream::wait(const Event& event) const {
  if (backend_ == Backend::cuda && event.backend() == Backend::cuda &&
      event.native_handle() != nullptr)
    detail::cuda_api::stream_wait_event(handle_, event.native_handle());
  if (backend_ == Backend::emulated && event.backend() == Backend::emulated &&
      event.native_handle() != nullptr) {
    const emulated::EventState state = *event_state(event.native_handle());
    if (!state.worker) return;  // recorded on the default stream: complete
    std::function<void()> work = [state] { state.worker->wait(state.ticket); };
    if (!detail::emulated_enqueue(ref(), work)) work();
  }
}

StreamScope::StreamScope(StreamRef stream) noexcept
    : stream_(stream),
      previous_(t_streams.innermost),
      previous_of_(t_streams.of[static_cast<int>(stream.backend())]) {
  const int b = static_cast<int>(stream.backend());
  t_streams.innermost = stream;
  t_streams.of[b] = stream;
  ++t_streams.depth;
  ++t_streams.depth_of[b];
}

StreamScope::~StreamScope() {
  const int b = static_cast<int>(stream_.backend());
  t_streams.innermost = previous_;
  t_streams.of[b] = previous_of_;
  --t_streams.depth;
  --t_streams.depth_of[b];
}

StreamRef current_stream() noexcept {
  if (t_streams.depth > 0) return t_streams.innermost;
  return {get_backend(), nullptr};
}

StreamRef current_stream(Backend backend) noexcept {
  const int b = static_cast<int>(backend);
  if (t_streams.depth_of[b] > 0) return t_streams.of[b];
  return {backend, nullptr};
}

Event::Event(Backend backend, bool timing) : backend_(backend), timing_(timing) {
  if (backend == Backend::cuda) handle_ = detail::cuda_api::event_create(timing);
  if (backend == Backend::emulated) handle_ = new emulated::EventState;
  ++g_live_events;
}

void Event::reset() noexcept {
  if (moved_) return;
  if (backend_ == Backend::cuda) detail::cuda_api::event_destroy(handle_);
  if (backend_ == Backend::emulated) delete event_state(handle_);
  --g_live_events;
  handle_ = nullptr;
  recorded_ = false;
  moved_ = true;
}

Event::~Event() {
  reset();
}

Event::Event(Event&& other) noexcept
    : backend_(other.backend_),
      handle_(std::exchange(other.handle_, nullptr)),
      timing_(other.timing_),
      recorded_(other.recorded_),
      host_time_(other.host_time_) {
  other.moved_ = true;
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    reset();
    backend_ = other.backend_;
    handle_ = std::exchange(other.handle_, nullptr);
    timing_ = other.timing_;
    recorded_ = other.recorded_;
    host_time_ = other.host_time_;
    moved_ = false;
    other.moved_ = true;
  }
  return *this;
}

void Event::record(StreamRef stream) {
  if (moved_) throw Error("Event::record: the event was moved from; record a live event");
  if (backend_ == Backend::cuda) {
    if (stream.backend() != Backend::cuda)
      throw BackendError("Event::record: a cuda event cannot be recorded on a " +
                         std::string(to_string(stream.backend())) +
                         " stream; use an event of the stream's backend");
    detail::cuda_api::event_record(handle_, stream.native_handle());
  }
  if (backend_ == Backend::emulated) {
    if (stream.backend() != Backend::emulated)
      throw BackendError("Event::record: an emulated event cannot be recorded on a " +
                         std::string(to_string(stream.backend())) +
                         " stream; use an event of the stream's backend");
    emulated::EventState& state = *event_state(handle_);
    state.worker = nullptr;
    state.ticket = 0;
    if (emulated::Worker* w = emulated::worker_of(stream.native_handle())) {
      state.worker = *static_cast<emulated::StreamHandle*>(stream.native_handle());
      state.ticket = w->issued();
    }
  }
  host_time_ = host_seconds();
  recorded_ = true;
}

bool Event::query() const {
  if (backend_ == Backend::cuda && recorded_) return detail::cuda_api::event_query(handle_);
  if (backend_ == Backend::emulated && recorded_) {
    const emulated::EventState& state = *event_state(handle_);
    return !state.worker || state.worker->done(state.ticket);
  }
  return true;
}

void Event::synchronize(std::source_location where) const {
  if (!recorded_ || backend_ == Backend::host) return;
  detail::event_wait(*this);
  detail::record_sync(
      SyncKind::stream, [] { return std::string("Event::synchronize()"); }, where);
}

double Event::elapsed(const Event& start, const Event& end) {
  if (!start.timing_ || !end.timing_)
    throw ValueError(
        "Event::elapsed: both events must be timing events; create them with "
        "Event(/*timing=*/true)");
  if (!start.recorded_ || !end.recorded_)
    throw ValueError("Event::elapsed: both events must be recorded first (Event::record)");
  if (start.backend_ != end.backend_)
    throw ValueError("Event::elapsed: the events belong to the " +
                     std::string(to_string(start.backend_)) + " and the " +
                     std::string(to_string(end.backend_)) +
                     " backends; time two events of one backend");
  if (start.backend_ == Backend::cuda)
    return detail::cuda_api::event_elapsed_seconds(start.handle_, end.handle_);
  return end.host_time_ - start.host_time_;
}

StreamRef copy_stream() {
  return copy_stream(get_backend());
}

StreamRef copy_stream(Backend backend) {
  if (backend == Backend::host) return {};
  return detail::runtime_copy_stream(backend)->ref();
}

namespace detail {
void event_wait(const Event& event) {
  if (event.native_handle() == nullptr) return;
  if (event.backend() == Backend::cuda) cuda_api::event_synchronize(event.native_handle());
  if (event.backend() == Backend::emulated) {
    const emulated::EventState& state = *event_state(event.native_handle());
    if (state.worker) state.worker->wait(state.ticket);
  }
}

std::shared_ptr<Stream> runtime_copy_stream(Backend backend) {
  if (backend == Backend::host)
    throw BackendError(
        "the runtime's copy stream: the host backend has no streams; copy host memory directly");
  CoreContext& core = core_context();
  std::lock_guard lock(core.stream_mutex);
  auto& slot = core.copy_streams[static_cast<int>(backend)];
  if (!slot) slot = std::make_shared<Stream>(backend);
  return slot;
}

void release_runtime_streams() {
  CoreContext& core = core_context();
  std::lock_guard lock(core.stream_mutex);
  for (auto& s : core.copy_streams) s.reset();  // the last owner synchronises and destroys it
}

long long live_streams() noexcept {
  return g_live_streams.load();
}
long long live_events() noexcept {
  return g_live_events.load();
}
}  // namespace detail

}  // namespace cunumpy
