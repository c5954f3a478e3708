// Comm and Request: the argument checks shared by both implementations, then dispatch
// (comm.hpp, internal/comm_impl.hpp).
#include <cunumpy/comm.hpp>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <cunumpy/errors.hpp>
#include <cunumpy/internal/comm_impl.hpp>

namespace cunumpy {
namespace detail {

std::size_t bytes_of(const RawBuffer& b) noexcept {
  return static_cast<std::size_t>(b.count) * dtype_size(b.dtype);
}

namespace {
std::atomic<long long> g_live_requests{0};
std::atomic<long long> g_count_limit{INT_MAX};

[[noreturn]] void count_error(const char* call, const std::string& what, long long expected,
                              long long got) {
  throw ValueError(std::string("Comm::") + call + ": " + what + " must hold " +
                   std::to_string(expected) + " elements, got " + std::to_string(got) +
                   "; size the buffer accordingly");
}

void check_root(const char* call, int root, int size) {
  if (root < 0 || root >= size)
    throw ValueError(std::string("Comm::") + call + ": root " + std::to_string(root) +
                     " is not a rank of this communicator of size " + std::to_string(size));
}

void check_peer(const char* call, const char* role, int peer, int size, bool allow_any) {
  if (peer == proc_null || (allow_any && peer == any_source)) return;
  if (peer < 0 || peer >= size)
    throw ValueError(std::string("Comm::") + call + ": " + role + " " + std::to_string(peer) +
                     " is not a rank of this communicator of size " + std::to_string(size) +
                     " (use proc_null for no partner)");
}

// Counts and displacements: one per rank, non-negative, each block inside the buffer.
void check_layout(const char* call, const char* which, Counts counts, Counts displs, int size,
                  long long buffer_count) {
  if (counts.size() != static_cast<std::size_t>(size) ||
      displs.size() != static_cast<std::size_t>(size))
    throw ValueError(std::string("Comm::") + call + ": " + which +
                     " counts and displacements need one entry per rank (" + std::to_string(size) +
                     "), got " + std::to_string(counts.size()) + " and " +
                     std::to_string(displs.size()));
  for (int r = 0; r < size; ++r) {
    const auto u = static_cast<std::size_t>(r);
    if (counts[u] < 0 || displs[u] < 0 || displs[u] > buffer_count - counts[u])
      throw ValueError(std::string("Comm::") + call + ": the " + which + " block of rank " +
                       std::to_string(r) + " (displacement " + std::to_string(displs[u]) +
                       ", count " + std::to_string(counts[u]) + ") does not fit the buffer of " +
                       std::to_string(buffer_count) + " elements");
  }
}
}  // namespace

LiveRequest::LiveRequest() noexcept {
  ++g_live_requests;
}
LiveRequest::~LiveRequest() {
  --g_live_requests;
}
long long live_requests() noexcept {
  return g_live_requests.load();
}
long long mpi_count_limit() noexcept {
  return g_count_limit.load(std::memory_order_relaxed);
}
void set_mpi_count_limit(long long limit) noexcept {
  g_count_limit.store(limit > 0 && limit < INT_MAX ? limit : INT_MAX);
}

namespace {
std::atomic<bool>& checks_flag() {
  static std::atomic<bool> flag = [] {
    const char* v = std::getenv("CUNUMPY_MPI_CHECK");
    return v != nullptr && (std::string_view(v) == "1" || std::string_view(v) == "yes" ||
                            std::string_view(v) == "true" || std::string_view(v) == "on");
  }();
  return flag;
}

// What a rank passes to a collective, as the checked mode compares it.
struct CallShape {
  long long count;  // -1: not compared (the v-collectives' own counts)
  long long dtype;
  long long op;    // -1: none
  long long root;  // -1: none
};

std::string shape_text(const CallShape& c) {
  std::string s = c.count >= 0 ? std::to_string(c.count) + " x " : std::string();
  s += std::string(to_string(static_cast<DType>(c.dtype)));
  if (c.op >= 0) s += ", op " + std::to_string(c.op);
  if (c.root >= 0) s += ", root " + std::to_string(c.root);
  return s;
}

// The local argument checks of a collective: thrown at once normally; in the checked mode
// caught and returned (empty: fine), so that every rank still takes part in the comparison.
template <typename F>
std::exception_ptr local_checks(F&& checks) {
  if (!checks_flag().load(std::memory_order_relaxed)) {
    checks();
    return nullptr;
  }
  try {
    checks();
  } catch (const Error&) {
    return std::current_exception();
  }
  return nullptr;
}

// The checked mode: every rank's CallShape, gathered; MpiError on every rank when they differ.
void check_collective(CommImpl& impl, const char* call, CallShape mine,
                      const std::exception_ptr& local_error) {
  if (!checks_flag().load(std::memory_order_relaxed) || impl.size() <= 1) {
    if (local_error) std::rethrow_exception(local_error);
    return;
  }
  const int size = impl.size();
  constexpr int kFields = 5;
  std::vector<long long> all(static_cast<std::size_t>(kFields * size));
  long long own[kFields] = {mine.count, mine.dtype, mine.op, mine.root, local_error ? 1 : 0};
  impl.allgather(RawBuffer{own, kFields, DType::int64},
                 RawBuffer{all.data(), kFields * size, DType::int64});
  // A rank whose own arguments failed their checks: every rank raises (none enters the call).
  std::string failed;
  for (int r = 0; r < size; ++r)
    if (all[kFields * r + 4] != 0) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
  if (!failed.empty()) {
    if (local_error) std::rethrow_exception(local_error);  // this rank's own error, as unchecked
    throw MpiError(
        std::string("Comm::") + call + " (checked mode, CUNUMPY_MPI_CHECK): rank(s) " + failed +
        " failed the argument checks (see their messages); no rank entered the collective");
  }
  bool same = true;
  for (int r = 1; r < size && same; ++r)
    for (int k = 0; k < 4; ++k) same = same && all[kFields * r + k] == all[k];
  if (same) return;
  std::string m =
      std::string("Comm::") + call + " (checked mode, CUNUMPY_MPI_CHECK): the ranks disagree:";
  for (int r = 0; r < size; ++r) {
    const CallShape c{all[kFields * r], all[kFields * r + 1], all[kFields * r + 2],
                      all[kFields * r + 3]};
    m += (r == 0 ? " " : "; ") + std::string("rank ") + std::to_string(r) + ": " + shape_text(c);
  }
  throw MpiError(m + "; every rank must pass the same count, type" +
                 (mine.op >= 0 ? ", operation" : "") + (mine.root >= 0 ? " and root" : "") +
                 " to a collective");
}
}  // namespace

}  // namespace detail

void set_mpi_checks(bool enabled) noexcept {
  detail::checks_flag().store(enabled);
}
bool mpi_checks() noexcept {
  return detail::checks_flag().load();
}

using detail::CallShape;
using detail::check_collective;
using detail::Counts;
using detail::RawBuffer;

// ---- Request ---------------------------------------------------------------------------

Request::Request() noexcept = default;
Request::Request(std::unique_ptr<detail::RequestImpl> impl) noexcept : impl_(std::move(impl)) {}
Request::Request(Request&& other) noexcept = default;
Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    cancel();
    impl_ = std::move(other.impl_);
  }
  return *this;
}
Request::~Request() {
  cancel();
}

void Request::wait() {
  if (!impl_) return;
  impl_->wait();
  impl_.reset();
}

bool Request::test() {
  if (!impl_) return true;
  if (!impl_->test()) return false;
  impl_.reset();
  return true;
}

void Request::cancel() {
  if (!impl_) return;
  impl_->cancel();
  impl_.reset();
}

void Request::wait_all(std::span<Request> requests) {
  for (Request& r : requests) r.wait();
}

// ---- Comm ------------------------------------------------------------------------------

Comm Comm::world() {
  if (auto w = detail::make_world_comm()) return Comm(std::move(w));
  return serial();
}
Comm Comm::serial() {
  return Comm(detail::make_serial_comm());
}

int Comm::rank() const noexcept {
  return impl_->rank();
}
int Comm::size() const noexcept {
  return impl_->size();
}
bool Comm::is_serial() const noexcept {
  return impl_->serial();
}

void Comm::barrier() const {
  impl_->check_usable("barrier");
  impl_->barrier();
}

void Comm::bcast_raw(RawBuffer b, int root) const {
  impl_->check_usable("bcast");
  const std::exception_ptr local =
      detail::local_checks([&] { detail::check_root("bcast", root, size()); });
  check_collective(*impl_, "bcast", {b.count, static_cast<long long>(b.dtype), -1, root}, local);
  impl_->bcast(b, root);
}

void Comm::allreduce_raw(RawBuffer send, RawBuffer recv, Op op, bool in_place) const {
  impl_->check_usable("allreduce");
  const std::exception_ptr local = detail::local_checks([&] {
    if (!in_place && send.count != recv.count)
      detail::count_error("allreduce", "the receive buffer", send.count, recv.count);
  });
  check_collective(*impl_, "allreduce",
                   {send.count, static_cast<long long>(send.dtype), static_cast<long long>(op), -1},
                   local);
  impl_->allreduce(send, recv, op, in_place);
}

void Comm::reduce_raw(RawBuffer send, RawBuffer recv, Op op, int root) const {
  impl_->check_usable("reduce");
  const bool in_place = send.data == recv.data;
  const std::exception_ptr local = detail::local_checks([&] {
    detail::check_root("reduce", root, size());
    if (rank() == root && !in_place && recv.count != send.count)
      detail::count_error("reduce", "the receive buffer on root", send.count, recv.count);
  });
  check_collective(
      *impl_, "reduce",
      {send.count, static_cast<long long>(send.dtype), static_cast<long long>(op), root}, local);
  impl_->reduce(send, recv, op, root, in_place);
}

void Comm::scan_raw(RawBuffer send, RawBuffer recv, Op op) const {
  impl_->check_usable("scan");
  const std::exception_ptr local = detail::local_checks([&] {
    if (send.count != recv.count)
      detail::count_error("scan", "the receive buffer", send.count, recv.count);
  });
  check_collective(*impl_, "scan",
                   {send.count, static_cast<long long>(send.dtype), static_cast<long long>(op), -1},
                   local);
  impl_->scan(send, recv, op, send.data == recv.data);
}

void Comm::allgather_raw(RawBuffer send, RawBuffer recv) const {
  impl_->check_usable("allgather");
  const std::exception_ptr local = detail::local_checks([&] {
    if (recv.count != send.count * size())
      detail::count_error("allgather", "the receive buffer (size() * send count)",
                          send.count * size(), recv.count);
  });
  check_collective(*impl_, "allgather", {send.count, static_cast<long long>(send.dtype), -1, -1},
                   local);
  impl_->allgather(send, recv);
}

void Comm::gather_raw(RawBuffer send, RawBuffer recv, int root) const {
  impl_->check_usable("gather");
  const std::exception_ptr local = detail::local_checks([&] {
    detail::check_root("gather", root, size());
    if (rank() == root && recv.count != send.count * size())
      detail::count_error("gather", "the receive buffer on root (size() * send count)",
                          send.count * size(), recv.count);
  });
  check_collective(*impl_, "gather", {send.count, static_cast<long long>(send.dtype), -1, root},
                   local);
  impl_->gather(send, recv, root);
}

void Comm::scatter_raw(RawBuffer send, RawBuffer recv, int root) const {
  impl_->check_usable("scatter");
  const std::exception_ptr local = detail::local_checks([&] {
    detail::check_root("scatter", root, size());
    if (rank() == root && send.count != recv.count * size())
      detail::count_error("scatter", "the send buffer on root (size() * receive count)",
                          recv.count * size(), send.count);
  });
  check_collective(*impl_, "scatter", {recv.count, static_cast<long long>(recv.dtype), -1, root},
                   local);
  impl_->scatter(send, recv, root);
}

void Comm::alltoall_raw(RawBuffer send, RawBuffer recv) const {
  impl_->check_usable("alltoall");
  const std::exception_ptr local = detail::local_checks([&] {
    if (send.count != recv.count)
      detail::count_error("alltoall", "the receive buffer", send.count, recv.count);
    if (send.count % size() != 0)
      throw ValueError("Comm::alltoall: the buffers hold " + std::to_string(send.count) +
                       " elements, not a multiple of the communicator size " +
                       std::to_string(size()) + "; give every rank a block of the same length");
  });
  check_collective(*impl_, "alltoall", {send.count, static_cast<long long>(send.dtype), -1, -1},
                   local);
  impl_->alltoall(send, recv);
}

void Comm::allgatherv_raw(RawBuffer send, RawBuffer recv, Counts counts, Counts displs) const {
  impl_->check_usable("allgatherv");
  const std::exception_ptr local = detail::local_checks([&] {
    detail::check_layout("allgatherv", "receive", counts, displs, size(), recv.count);
    const auto me = static_cast<std::size_t>(rank());
    if (counts[me] != send.count)
      detail::count_error("allgatherv", "this rank's count", send.count, counts[me]);
  });
  check_collective(*impl_, "allgatherv", {-1, static_cast<long long>(send.dtype), -1, -1}, local);
  impl_->allgatherv(send, recv, counts, displs);
}

void Comm::gatherv_raw(RawBuffer send, RawBuffer recv, Counts counts, Counts displs,
                       int root) const {
  impl_->check_usable("gatherv");
  const std::exception_ptr local = detail::local_checks([&] {
    detail::check_root("gatherv", root, size());
    if (rank() == root) {
      detail::check_layout("gatherv", "receive", counts, displs, size(), recv.count);
      const auto me = static_cast<std::size_t>(rank());
      if (counts[me] != send.count)
        detail::count_error("gatherv", "root's count", send.count, counts[me]);
    }
  });
  check_collective(*impl_, "gatherv", {-1, static_cast<long long>(send.dtype), -1, root}, local);
  impl_->gatherv(send, recv, counts, displs, root);
}

void Comm::scatterv_raw(RawBuffer send, Counts counts, Counts displs, RawBuffer recv,
                        int root) const {
  impl_->check_usable("scatterv");
  const std::exception_ptr local = detail::local_checks([&] {
    detail::check_root("scatterv", root, size());
    if (rank() == root) {
      detail::check_layout("scatterv", "send", counts, displs, size(), send.count);
      const auto me = static_cast<std::size_t>(rank());
      if (counts[me] > recv.count)
        detail::count_error("scatterv", "the receive buffer", counts[me], recv.count);
    }
  });
  check_collective(*impl_, "scatterv", {-1, static_cast<long long>(recv.dtype), -1, root}, local);
  impl_->scatterv(send, counts, displs, recv, root);
}

void Comm::alltoallv_raw(RawBuffer send, Counts send_counts, Counts send_displs, RawBuffer recv,
                         Counts recv_counts, Counts recv_displs) const {
  impl_->check_usable("alltoallv");
  detail::check_layout("alltoallv", "send", send_counts, send_displs, size(), send.count);
  detail::check_layout("alltoallv", "receive", recv_counts, recv_displs, size(), recv.count);
  impl_->alltoallv(send, send_counts, send_displs, recv, recv_counts, recv_displs);
}

void Comm::send_raw(RawBuffer b, int dest, int tag) const {
  impl_->check_usable("send");
  detail::check_peer("send", "dest", dest, size(), false);
  if (dest == proc_null) return;
  impl_->send(b, dest, tag);
}

void Comm::recv_raw(RawBuffer b, int source, int tag) const {
  impl_->check_usable("recv");
  detail::check_peer("recv", "source", source, size(), true);
  if (source == proc_null) return;
  impl_->recv(b, source, tag);
}

void Comm::sendrecv_raw(RawBuffer send, int dest, RawBuffer recv, int source, int tag) const {
  impl_->check_usable("sendrecv");
  detail::check_peer("sendrecv", "dest", dest, size(), false);
  detail::check_peer("sendrecv", "source", source, size(), true);
  impl_->sendrecv(send, dest, recv, source, tag);
}

Request Comm::isend_raw(RawBuffer b, int dest, int tag) const {
  impl_->check_usable("isend");
  detail::check_peer("isend", "dest", dest, size(), false);
  if (dest == proc_null) return Request();
  return Request(impl_->isend(b, dest, tag));
}

Request Comm::irecv_raw(RawBuffer b, int source, int tag) const {
  impl_->check_usable("irecv");
  detail::check_peer("irecv", "source", source, size(), true);
  if (source == proc_null) return Request();
  return Request(impl_->irecv(b, source, tag));
}

Status Comm::probe(int source, int tag) const {
  impl_->check_usable("probe");
  detail::check_peer("probe", "source", source, size(), true);
  if (source == proc_null) return Status{proc_null, any_tag, 0};
  return impl_->probe(source, tag);
}

std::optional<Status> Comm::iprobe(int source, int tag) const {
  impl_->check_usable("iprobe");
  detail::check_peer("iprobe", "source", source, size(), true);
  if (source == proc_null) return Status{proc_null, any_tag, 0};
  return impl_->iprobe(source, tag);
}

double Comm::wtime() const {
  return impl_->wtime();
}

void Status::throw_partial(std::size_t element) const {
  throw ValueError("Status::count: the message from rank " + std::to_string(source) + " (tag " +
                   std::to_string(tag) + ") holds " + std::to_string(bytes) +
                   " bytes, not a whole number of " + std::to_string(element) +
                   "-byte elements; ask for the element type it was sent with");
}

Comm Comm::split(int color, int key) const {
  impl_->check_usable("split");
  return Comm(impl_->split(color, key));
}

Comm Comm::dup() const {
  impl_->check_usable("dup");
  return Comm(impl_->dup());
}

}  // namespace cunumpy
