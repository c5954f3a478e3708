// The transfer/sync ledger, TransferCounter and its report, NVTX ranges, timed regions.
#include <cunumpy/profiling.hpp>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <cunumpy/backend.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/internal/core_context.hpp>

#if CUNUMPY_HAS_NVTX()
#include <nvtx3/nvToolsExt.h>
#endif

namespace cunumpy {

namespace detail {
bool counting_active() noexcept {
  return core_context().ledger.active.load(std::memory_order_relaxed) != 0;
}
}  // namespace detail

namespace {

using Registry = detail::Ledger;
Registry& registry() {
  return detail::core_context().ledger;
}

// "    where: description (xN)" lines, grouped by call site and description in order of first
// appearance.
template <typename Event>
void append_groups(std::string& out, const std::vector<const Event*>& events) {
  std::vector<std::pair<const Event*, long long>> groups;
  for (const Event* e : events) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return g.first->where == e->where && g.first->description == e->description;
    });
    if (it == groups.end())
      groups.emplace_back(e, 1);
    else
      ++it->second;
  }
  for (const auto& [e, n] : groups) {
    out += "    " + e->where + ": " + e->description;
    if (n > 1) out += " (x" + std::to_string(n) + ")";
    out += "\n";
  }
}

template <typename Event, typename Kind, std::size_t N>
void append_section(std::string& out, const std::vector<Event>& events,
                    const std::array<long long, N>& counts, const char* noun) {
  out += std::to_string(events.size()) + " " + noun + "(s) through cunumpy (";
  for (std::size_t k = 0; k < N; ++k) {
    if (k > 0) out += ", ";
    out += std::to_string(counts[k]) + " " + std::string(to_string(static_cast<Kind>(k)));
  }
  out += ")\n";
  for (std::size_t k = 0; k < N; ++k) {
    if (counts[k] == 0) continue;
    std::vector<const Event*> of_kind;
    for (const Event& e : events)
      if (static_cast<std::size_t>(e.kind) == k) of_kind.push_back(&e);
    out += "  " + std::string(to_string(static_cast<Kind>(k))) + " (" + std::to_string(counts[k]) +
           "):\n";  // indented as the Python library's report: kinds by 2, call sites by 4
    append_groups(out, of_kind);
  }
}

}  // namespace

std::string_view to_string(TransferKind kind) noexcept {
  switch (kind) {
    case TransferKind::to_host:
      return "to_host";
    case TransferKind::to_device:
      return "to_device";
    case TransferKind::kernel_conversion:
      return "kernel_conversion";
    case TransferKind::fallback:
      return "fallback";
    case TransferKind::mpi_staging:
      return "mpi_staging";
  }
  return "unknown";
}

std::string_view to_string(SyncKind kind) noexcept {
  switch (kind) {
    case SyncKind::device:
      return "device";
    case SyncKind::stream:
      return "stream";
    case SyncKind::mpi:
      return "mpi";
    case SyncKind::reduction:
      return "reduction";
    case SyncKind::timer:
      return "timer";
  }
  return "unknown";
}

std::string format_location(const std::source_location& where) {
  return std::string(where.file_name()) + ":" + std::to_string(where.line());
}

namespace detail {

namespace {
// Appends an event to every active counter: to its `events` list, counted in `counts`.
template <typename Event, typename Kind, typename Events, typename Counts>
void record_everywhere(Kind kind, std::string description, const std::source_location& where,
                       Events events, Counts counts) {
  const std::string location = format_location(where);
  const std::thread::id me = std::this_thread::get_id();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (TransferCounter* c : r.counters) {
    if (c->scope() == CountScope::thread && c->owner() != me) continue;
    (c->*events).push_back(Event{kind, description, location});
    ++(c->*counts)[static_cast<int>(kind)];
  }
}
}  // namespace

void record_transfer_event(TransferKind kind, std::string description,
                           const std::source_location& where) {
  record_everywhere<TransferEvent>(kind, std::move(description), where, &TransferCounter::events_,
                                   &TransferCounter::counts_);
}

void record_sync_event(SyncKind kind, std::string description, const std::source_location& where) {
  record_everywhere<SyncEvent>(kind, std::move(description), where, &TransferCounter::syncs_,
                               &TransferCounter::sync_counts_);
}

}  // namespace detail

TransferCounter::TransferCounter(CountScope scope)
    : scope_(scope), owner_(std::this_thread::get_id()) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.counters.push_back(this);
  active_ = true;
  r.active.fetch_add(1, std::memory_order_relaxed);
}

TransferCounter::~TransferCounter() {
  stop();
}

void TransferCounter::stop() noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (!active_) return;
  active_ = false;
  r.counters.erase(std::remove(r.counters.begin(), r.counters.end(), this), r.counters.end());
  r.active.fetch_sub(1, std::memory_order_relaxed);
}

long long TransferCounter::count(TransferKind kind) const noexcept {
  const std::lock_guard lock(registry().mutex);
  return counts_[static_cast<int>(kind)];
}
long long TransferCounter::total() const noexcept {
  const std::lock_guard lock(registry().mutex);
  return static_cast<long long>(events_.size());
}
long long TransferCounter::synchronizations() const noexcept {
  const std::lock_guard lock(registry().mutex);
  return static_cast<long long>(syncs_.size());
}
long long TransferCounter::synchronizations(SyncKind kind) const noexcept {
  const std::lock_guard lock(registry().mutex);
  return sync_counts_[static_cast<int>(kind)];
}

std::vector<TransferEvent> TransferCounter::kernel_conversion_calls() const {
  const std::lock_guard lock(registry().mutex);
  std::vector<TransferEvent> out;
  for (const auto& e : events_)
    if (e.kind == TransferKind::kernel_conversion) out.push_back(e);
  return out;
}

std::string TransferCounter::report() const {
  const std::lock_guard lock(registry().mutex);
  std::string out;
  append_section<TransferEvent, TransferKind>(out, events_, counts_, "transfer");
  if (!syncs_.empty())
    append_section<SyncEvent, SyncKind>(out, syncs_, sync_counts_, "synchronisation");
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

void AssertNoTransfers::check() const {
  if (counter_.total() > 0)
    throw TransferAssertionError(
        "assert_no_transfers: the block made transfers through "
        "cunumpy:\n" +
        counter_.report());
}

// ---- NVTX --------------------------------------------------------------------------------

#if CUNUMPY_HAS_NVTX()
namespace {
struct NvtxState {
  nvtxDomainHandle_t domain = nvtxDomainCreateA("cunumpy");
  std::mutex mutex;
  std::unordered_map<std::string, nvtxStringHandle_t> names;
};
NvtxState& nvtx() {
  static NvtxState* s = new NvtxState;
  return *s;
}
// A small qualitative palette (ARGB), indexed by NvtxRange's colour.
constexpr std::uint32_t kColors[] = {0xff1f77b4, 0xffff7f0e, 0xff2ca02c, 0xffd62728,
                                     0xff9467bd, 0xff8c564b, 0xffe377c2, 0xff7f7f7f};
}  // namespace

void NvtxRange::push(const char* name, std::optional<int> color) {
  NvtxState& s = nvtx();
  nvtxStringHandle_t handle;
  {
    std::lock_guard lock(s.mutex);
    auto it = s.names.find(name);
    if (it == s.names.end())
      it = s.names.emplace(name, nvtxDomainRegisterStringA(s.domain, name)).first;
    handle = it->second;
  }
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = handle;
  if (color) {
    attributes.colorType = NVTX_COLOR_ARGB;
    const int n = static_cast<int>(std::size(kColors));
    attributes.color = kColors[((*color % n) + n) % n];
  }
  nvtxDomainRangePushEx(s.domain, &attributes);
}

void NvtxRange::pop() noexcept {
  nvtxDomainRangePop(nvtx().domain);
}

std::size_t detail::nvtx_registered_names() noexcept {
  NvtxState& s = nvtx();
  std::lock_guard lock(s.mutex);
  return s.names.size();
}
#else
std::size_t detail::nvtx_registered_names() noexcept {
  return 0;
}
#endif

// ---- timed regions -------------------------------------------------------------------------

namespace {
bool sync_device_for_timing(const std::source_location& where) {
  if (!device_backend()) return false;
  detail::synchronize_backend(get_backend(), SyncKind::timer, "timed region", where);
  return true;
}
}  // namespace

TimedRegion::TimedRegion(std::string name, bool sync, Timing* out, std::source_location where)
    : timing_{std::move(name), std::nullopt, false},
      out_(out),
      sync_(sync),
      where_(where),
      entry_synced_(sync_device_for_timing(where)),
      range_(timing_.name),
      start_(std::chrono::steady_clock::now()) {}

TimedRegion::~TimedRegion() {
  if (!running_) return;
  try {
    stop();
  } catch (...) {
    // A failed exit synchronisation during unwinding must not terminate the program; the
    // error resurfaces at the next synchronising call.
  }
}

const Timing& TimedRegion::stop() {
  if (!running_) return timing_;
  running_ = false;
  if (sync_) timing_.synced = sync_device_for_timing(where_);
  const auto end = std::chrono::steady_clock::now();
  timing_.elapsed = std::chrono::duration<double>(end - start_).count();
  if (out_ != nullptr) *out_ = timing_;
  return timing_;
}

}  // namespace cunumpy
