// Comm: real MPI or the serial stand-in (comm.hpp).
#include <cunumpy/comm.hpp>

#include <algorithm>
#include <cstring>
#include <deque>
#include <string>

#include <cunumpy/errors.hpp>

namespace cunumpy {
namespace detail {

struct CommState {
  bool serial = true;
  int rank = 0;
  int size = 1;
#if CUNUMPY_HAS_MPI()
  MPI_Comm comm = MPI_COMM_NULL;  // owned (a duplicate), freed in the destructor
#endif
  // Messages a serial rank sent to itself, in order, for its later receives.
  struct Message {
    int tag;
    std::vector<unsigned char> bytes;
  };
  std::deque<Message> mailbox;

  ~CommState();
};

struct RequestState {
#if CUNUMPY_HAS_MPI()
  MPI_Request request = MPI_REQUEST_NULL;
#endif
};

namespace {

std::size_t bytes_of(const RawBuffer& b) { return static_cast<std::size_t>(b.count) * dtype_size(b.dtype); }

[[noreturn]] void count_error(const char* call, const std::string& what, long long expected, long long got) {
  throw ValueError(std::string("Comm::") + call + ": " + what + " must hold " + std::to_string(expected) +
                   " elements, got " + std::to_string(got) + "; size the buffer accordingly");
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

void copy_into(const RawBuffer& dst, const RawBuffer& src) {
  if (bytes_of(src) > 0) std::memcpy(dst.data, src.data, bytes_of(src));
}

#if CUNUMPY_HAS_MPI()
MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::boolean: return MPI_C_BOOL;
    case DType::int8: return MPI_INT8_T;
    case DType::uint8: return MPI_UINT8_T;
    case DType::int16: return MPI_INT16_T;
    case DType::uint16: return MPI_UINT16_T;
    case DType::int32: return MPI_INT32_T;
    case DType::uint32: return MPI_UINT32_T;
    case DType::int64: return MPI_INT64_T;
    case DType::uint64: return MPI_UINT64_T;
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::complex64: return MPI_C_FLOAT_COMPLEX;
    case DType::complex128: return MPI_C_DOUBLE_COMPLEX;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(Op op) {
  switch (op) {
    case Op::sum: return MPI_SUM;
    case Op::prod: return MPI_PROD;
    case Op::min: return MPI_MIN;
    case Op::max: return MPI_MAX;
    case Op::logical_and: return MPI_LAND;
    case Op::logical_or: return MPI_LOR;
    case Op::logical_xor: return MPI_LXOR;
    case Op::bit_and: return MPI_BAND;
    case Op::bit_or: return MPI_BOR;
    case Op::bit_xor: return MPI_BXOR;
  }
  return MPI_OP_NULL;
}

bool finalized() {
  int f = 0;
  MPI_Finalized(&f);
  return f != 0;
}

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  int error_class = 0;
  MPI_Error_class(code, &error_class);
  std::string hint;
  if (error_class == MPI_ERR_TRUNCATE) hint = "; the receive buffer is smaller than the message";
  throw MpiError(std::string("Comm::") + call + ": MPI error " + std::to_string(code) + ": " +
                 std::string(text, static_cast<std::size_t>(length)) + hint);
}

int tag_of(int tag) { return tag == any_tag ? MPI_ANY_TAG : tag; }
int peer_of(int peer) {
  if (peer == proc_null) return MPI_PROC_NULL;
  if (peer == any_source) return MPI_ANY_SOURCE;
  return peer;
}
#endif

}  // namespace

CommState::~CommState() {
#if CUNUMPY_HAS_MPI()
  if (comm != MPI_COMM_NULL && !finalized()) MPI_Comm_free(&comm);
#endif
}

}  // namespace detail

using detail::RawBuffer;

namespace {

// Checks a call can run: the communicator is usable (MPI not finalized).
const detail::CommState& usable(const std::shared_ptr<detail::CommState>& s, const char* call) {
#if CUNUMPY_HAS_MPI()
  if (!s->serial && detail::finalized())
    throw MpiError(std::string("Comm::") + call +
                   " after MPI_Finalize: MPI has ended; communicate before the Runtime (or "
                   "finalize_mpi) ends it");
#else
  (void)call;
#endif
  return *s;
}

std::shared_ptr<detail::CommState> make_serial() { return std::make_shared<detail::CommState>(); }

#if CUNUMPY_HAS_MPI()
bool g_started_here = false;

std::shared_ptr<detail::CommState> make_dup(MPI_Comm comm) {
  auto s = std::make_shared<detail::CommState>();
  s->serial = false;
  detail::check_mpi(MPI_Comm_dup(comm, &s->comm), "dup");
  MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(s->comm, &s->rank);
  MPI_Comm_size(s->comm, &s->size);
  return s;
}
#endif

}  // namespace

bool mpi_initialized() {
#if CUNUMPY_HAS_MPI()
  int i = 0;
  MPI_Initialized(&i);
  return i != 0 && !detail::finalized();
#else
  return false;
#endif
}

bool init_mpi(int* argc, char*** argv) {
#if CUNUMPY_HAS_MPI()
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return false;
  int provided = 0;
  detail::check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "init");
  g_started_here = true;
  return true;
#else
  (void)argc;
  (void)argv;
  return false;
#endif
}

void finalize_mpi() {
#if CUNUMPY_HAS_MPI()
  if (g_started_here && !detail::finalized()) MPI_Finalize();
  g_started_here = false;
#endif
}

Comm Comm::serial() { return Comm(make_serial()); }

Comm Comm::world() {
#if CUNUMPY_HAS_MPI()
  if (mpi_initialized()) return Comm(make_dup(MPI_COMM_WORLD));
#endif
  return serial();
}

#if CUNUMPY_HAS_MPI()
Comm Comm::from_native(MPI_Comm comm) { return Comm(make_dup(comm)); }
MPI_Comm Comm::native() const { return state_->serial ? MPI_COMM_SELF : state_->comm; }
#endif

int Comm::rank() const noexcept { return state_->rank; }
int Comm::size() const noexcept { return state_->size; }
bool Comm::is_serial() const noexcept { return state_->serial; }

void Comm::barrier() const {
  const auto& s = usable(state_, "barrier");
  if (s.serial) return;
#if CUNUMPY_HAS_MPI()
  detail::check_mpi(MPI_Barrier(s.comm), "barrier");
#endif
}

void Comm::bcast_raw(RawBuffer b, int root) const {
  const auto& s = usable(state_, "bcast");
  detail::check_root("bcast", root, s.size);
  if (s.serial) return;  // one rank: the buffer already holds root's data
#if CUNUMPY_HAS_MPI()
  detail::check_mpi(MPI_Bcast(b.data, static_cast<int>(b.count), detail::mpi_type(b.dtype), root, s.comm), "bcast");
#else
  (void)b;
#endif
}

void Comm::allreduce_raw(RawBuffer send, RawBuffer recv, Op op, bool in_place) const {
  const auto& s = usable(state_, "allreduce");
  if (!in_place && send.count != recv.count) detail::count_error("allreduce", "the receive buffer", send.count, recv.count);
  if (s.serial) {
    if (!in_place) detail::copy_into(recv, send);
    return;
  }
#if CUNUMPY_HAS_MPI()
  detail::check_mpi(MPI_Allreduce(in_place ? MPI_IN_PLACE : send.data, recv.data, static_cast<int>(recv.count),
                                  detail::mpi_type(recv.dtype), detail::mpi_op(op), s.comm),
                    "allreduce");
#else
  (void)op;
#endif
}

void Comm::reduce_raw(RawBuffer send, RawBuffer recv, Op op, int root) const {
  const auto& s = usable(state_, "reduce");
  detail::check_root("reduce", root, s.size);
  const bool in_place = send.data == recv.data;
  if (s.rank == root && !in_place && recv.count != send.count)
    detail::count_error("reduce", "the receive buffer on root", send.count, recv.count);
  if (s.serial) {
    if (!in_place) detail::copy_into(recv, send);
    return;
  }
#if CUNUMPY_HAS_MPI()
  const void* sendbuf = (in_place && s.rank == root) ? MPI_IN_PLACE : send.data;
  detail::check_mpi(MPI_Reduce(sendbuf, recv.data, static_cast<int>(send.count), detail::mpi_type(send.dtype),
                               detail::mpi_op(op), root, s.comm),
                    "reduce");
#else
  (void)op;
#endif
}

void Comm::scan_raw(RawBuffer send, RawBuffer recv, Op op) const {
  const auto& s = usable(state_, "scan");
  if (send.count != recv.count) detail::count_error("scan", "the receive buffer", send.count, recv.count);
  if (s.serial) {
    if (send.data != recv.data) detail::copy_into(recv, send);
    return;
  }
#if CUNUMPY_HAS_MPI()
  detail::check_mpi(MPI_Scan(send.data == recv.data ? MPI_IN_PLACE : send.data, recv.data,
                             static_cast<int>(recv.count), detail::mpi_type(recv.dtype), detail::mpi_op(op), s.comm),
                    "scan");
#else
  (void)op;
#endif
}

void Comm::allgather_raw(RawBuffer send, RawBuffer recv) const {
  const auto& s = usable(state_, "allgather");
  if (recv.count != send.count * s.size)
    detail::count_error("allgather", "the receive buffer (size() * send count)", send.count * s.size, recv.count);
  if (s.serial) return detail::copy_into(recv, send);
#if CUNUMPY_HAS_MPI()
  const auto t = detail::mpi_type(send.dtype);
  detail::check_mpi(MPI_Allgather(send.data, static_cast<int>(send.count), t, recv.data, static_cast<int>(send.count), t, s.comm),
                    "allgather");
#endif
}

void Comm::gather_raw(RawBuffer send, RawBuffer recv, int root) const {
  const auto& s = usable(state_, "gather");
  detail::check_root("gather", root, s.size);
  if (s.rank == root && recv.count != send.count * s.size)
    detail::count_error("gather", "the receive buffer on root (size() * send count)", send.count * s.size, recv.count);
  if (s.serial) return detail::copy_into(recv, send);
#if CUNUMPY_HAS_MPI()
  const auto t = detail::mpi_type(send.dtype);
  detail::check_mpi(MPI_Gather(send.data, static_cast<int>(send.count), t, recv.data, static_cast<int>(send.count), t, root, s.comm),
                    "gather");
#endif
}

void Comm::scatter_raw(RawBuffer send, RawBuffer recv, int root) const {
  const auto& s = usable(state_, "scatter");
  detail::check_root("scatter", root, s.size);
  if (s.rank == root && send.count != recv.count * s.size)
    detail::count_error("scatter", "the send buffer on root (size() * receive count)", recv.count * s.size, send.count);
  if (s.serial) return detail::copy_into(recv, {send.data, recv.count, send.dtype});
#if CUNUMPY_HAS_MPI()
  const auto t = detail::mpi_type(recv.dtype);
  detail::check_mpi(MPI_Scatter(send.data, static_cast<int>(recv.count), t, recv.data, static_cast<int>(recv.count), t, root, s.comm),
                    "scatter");
#endif
}

void Comm::alltoall_raw(RawBuffer send, RawBuffer recv) const {
  const auto& s = usable(state_, "alltoall");
  if (send.count != recv.count) detail::count_error("alltoall", "the receive buffer", send.count, recv.count);
  if (send.count % s.size != 0)
    throw ValueError("Comm::alltoall: the buffers hold " + std::to_string(send.count) +
                     " elements, not a multiple of the communicator size " + std::to_string(s.size) +
                     "; give every rank a block of the same length");
  if (s.serial) return detail::copy_into(recv, send);
#if CUNUMPY_HAS_MPI()
  const auto t = detail::mpi_type(send.dtype);
  const int block = static_cast<int>(send.count / s.size);
  detail::check_mpi(MPI_Alltoall(send.data, block, t, recv.data, block, t, s.comm), "alltoall");
#endif
}

namespace {
// Counts and displacements: one per rank, non-negative, each block inside the buffer.
void check_layout(const char* call, const char* which, std::span<const int> counts, std::span<const int> displs,
                  int size, long long buffer_count) {
  if (static_cast<int>(counts.size()) != size || static_cast<int>(displs.size()) != size)
    throw ValueError(std::string("Comm::") + call + ": " + which + " counts and displacements need one entry per rank (" +
                     std::to_string(size) + "), got " + std::to_string(counts.size()) + " and " +
                     std::to_string(displs.size()));
  for (int r = 0; r < size; ++r) {
    if (counts[r] < 0 || displs[r] < 0 || static_cast<long long>(displs[r]) + counts[r] > buffer_count)
      throw ValueError(std::string("Comm::") + call + ": the " + which + " block of rank " + std::to_string(r) +
                       " (displacement " + std::to_string(displs[r]) + ", count " + std::to_string(counts[r]) +
                       ") does not fit the buffer of " + std::to_string(buffer_count) + " elements");
  }
}

// The serial stand-in's vector forms use rank 0's count and displacement.
void serial_block(RawBuffer dst, long long dst_offset, RawBuffer src, long long src_offset, long long count) {
  const std::size_t e = dtype_size(src.dtype);
  if (count > 0)
    std::memcpy(static_cast<char*>(dst.data) + dst_offset * e, static_cast<const char*>(src.data) + src_offset * e,
                static_cast<std::size_t>(count) * e);
}
}  // namespace

void Comm::allgatherv_raw(RawBuffer send, RawBuffer recv, std::span<const int> counts, std::span<const int> displs) const {
  const auto& s = usable(state_, "allgatherv");
  check_layout("allgatherv", "receive", counts, displs, s.size, recv.count);
  if (counts[s.rank] != send.count) detail::count_error("allgatherv", "this rank's count", send.count, counts[s.rank]);
  if (s.serial) return serial_block(recv, displs[0], send, 0, send.count);
#if CUNUMPY_HAS_MPI()
  const auto t = detail::mpi_type(send.dtype);
  detail::check_mpi(MPI_Allgatherv(send.data, static_cast<int>(send.count), t, recv.data, counts.data(), displs.data(), t, s.comm),
                    "allgatherv");
#endif
}

void Comm::gatherv_raw(RawBuffer send, RawBuffer recv, std::span<const int> counts, std::span<const int> displs,
                       int root) const {
  const auto& s = usable(state_, "gatherv");
  detail::check_root("gatherv", root, s.size);
  if (s.rank == root) {
    check_layout("gatherv", "receive", counts, displs, s.size, recv.count);
    if (counts[s.rank] != send.count) detail::count_error("gatherv", "root's count", send.count, counts[s.rank]);
  }
  if (s.serial) return serial_block(recv, displs[0], send, 0, send.count);
#if CUNUMPY_HAS_MPI()
  const auto t = detail::mpi_type(send.dtype);
  detail::check_mpi(MPI_Gatherv(send.data, static_cast<int>(send.count), t, recv.data,
                                s.rank == root ? counts.data() : nullptr, s.rank == root ? displs.data() : nullptr, t,
                                root, s.comm),
                    "gatherv");
#endif
}

void Comm::scatterv_raw(RawBuffer send, std::span<const int> counts, std::span<const int> displs, RawBuffer recv,
                        int root) const {
  const auto& s = usable(state_, "scatterv");
  detail::check_root("scatterv", root, s.size);
  if (s.rank == root) {
    check_layout("scatterv", "send", counts, displs, s.size, send.count);
    if (counts[s.rank] > recv.count) detail::count_error("scatterv", "the receive buffer", counts[s.rank], recv.count);
  }
  if (s.serial) return serial_block(recv, 0, send, displs[0], counts[0]);
#if CUNUMPY_HAS_MPI()
  const auto t = detail::mpi_type(recv.dtype);
  detail::check_mpi(MPI_Scatterv(send.data, s.rank == root ? counts.data() : nullptr,
                                 s.rank == root ? displs.data() : nullptr, t, recv.data, static_cast<int>(recv.count), t,
                                 root, s.comm),
                    "scatterv");
#endif
}

void Comm::alltoallv_raw(RawBuffer send, std::span<const int> send_counts, std::span<const int> send_displs,
                         RawBuffer recv, std::span<const int> recv_counts, std::span<const int> recv_displs) const {
  const auto& s = usable(state_, "alltoallv");
  check_layout("alltoallv", "send", send_counts, send_displs, s.size, send.count);
  check_layout("alltoallv", "receive", recv_counts, recv_displs, s.size, recv.count);
  if (s.serial) {
    if (send_counts[0] != recv_counts[0]) detail::count_error("alltoallv", "the receive count", send_counts[0], recv_counts[0]);
    return serial_block(recv, recv_displs[0], send, send_displs[0], send_counts[0]);
  }
#if CUNUMPY_HAS_MPI()
  const auto t = detail::mpi_type(send.dtype);
  detail::check_mpi(MPI_Alltoallv(send.data, send_counts.data(), send_displs.data(), t, recv.data, recv_counts.data(),
                                  recv_displs.data(), t, s.comm),
                    "alltoallv");
#endif
}

namespace {
// The serial stand-in's self-messages: a send to rank 0 is kept until a receive takes it.
void serial_post(detail::CommState& s, RawBuffer b, int tag) {
  const auto* p = static_cast<const unsigned char*>(b.data);
  s.mailbox.push_back({tag, std::vector<unsigned char>(p, p + detail::bytes_of(b))});
}

void serial_take(detail::CommState& s, RawBuffer b, int tag, const char* call) {
  auto it = std::find_if(s.mailbox.begin(), s.mailbox.end(),
                         [&](const auto& m) { return tag == any_tag || m.tag == tag; });
  if (it == s.mailbox.end())
    throw ValueError(std::string("Comm::") + call + " from rank 0 on the serial stand-in: no message with tag " +
                     std::to_string(tag) + " was sent, and a single process has no one else to wait for");
  if (it->bytes.size() > detail::bytes_of(b))
    throw MpiError(std::string("Comm::") + call + ": the receive buffer (" + std::to_string(detail::bytes_of(b)) +
                   " bytes) is smaller than the message (" + std::to_string(it->bytes.size()) + " bytes)");
  if (!it->bytes.empty()) std::memcpy(b.data, it->bytes.data(), it->bytes.size());
  s.mailbox.erase(it);
}
}  // namespace

void Comm::send_raw(RawBuffer b, int dest, int tag) const {
  auto& s = const_cast<detail::CommState&>(usable(state_, "send"));
  detail::check_peer("send", "dest", dest, s.size, false);
  if (dest == proc_null) return;
  if (s.serial) return serial_post(s, b, tag);
#if CUNUMPY_HAS_MPI()
  detail::check_mpi(MPI_Send(b.data, static_cast<int>(b.count), detail::mpi_type(b.dtype), dest, tag, s.comm), "send");
#endif
}

void Comm::recv_raw(RawBuffer b, int source, int tag) const {
  auto& s = const_cast<detail::CommState&>(usable(state_, "recv"));
  detail::check_peer("recv", "source", source, s.size, true);
  if (source == proc_null) return;
  if (s.serial) return serial_take(s, b, tag, "recv");
#if CUNUMPY_HAS_MPI()
  detail::check_mpi(MPI_Recv(b.data, static_cast<int>(b.count), detail::mpi_type(b.dtype), detail::peer_of(source),
                             detail::tag_of(tag), s.comm, MPI_STATUS_IGNORE),
                    "recv");
#endif
}

void Comm::sendrecv_raw(RawBuffer send, int dest, RawBuffer recv, int source, int tag) const {
  auto& s = const_cast<detail::CommState&>(usable(state_, "sendrecv"));
  detail::check_peer("sendrecv", "dest", dest, s.size, false);
  detail::check_peer("sendrecv", "source", source, s.size, true);
  if (s.serial) {
    if (dest != proc_null) serial_post(s, send, tag);
    if (source != proc_null) serial_take(s, recv, tag, "sendrecv");
    return;
  }
#if CUNUMPY_HAS_MPI()
  detail::check_mpi(MPI_Sendrecv(send.data, static_cast<int>(send.count), detail::mpi_type(send.dtype), detail::peer_of(dest),
                                 tag, recv.data, static_cast<int>(recv.count), detail::mpi_type(recv.dtype),
                                 detail::peer_of(source), detail::tag_of(tag), s.comm, MPI_STATUS_IGNORE),
                    "sendrecv");
#endif
}

Request Comm::isend_raw(RawBuffer b, int dest, int tag) const {
  auto& s = const_cast<detail::CommState&>(usable(state_, "isend"));
  detail::check_peer("isend", "dest", dest, s.size, false);
  if (s.serial) {
    if (dest != proc_null) serial_post(s, b, tag);
    return Request();  // completed
  }
#if CUNUMPY_HAS_MPI()
  auto r = std::make_shared<detail::RequestState>();
  detail::check_mpi(MPI_Isend(b.data, static_cast<int>(b.count), detail::mpi_type(b.dtype), detail::peer_of(dest), tag,
                              s.comm, &r->request),
                    "isend");
  return Request(r);
#else
  return Request();
#endif
}

Request Comm::irecv_raw(RawBuffer b, int source, int tag) const {
  auto& s = const_cast<detail::CommState&>(usable(state_, "irecv"));
  detail::check_peer("irecv", "source", source, s.size, true);
  if (s.serial) {
    if (source != proc_null) serial_take(s, b, tag, "irecv");
    return Request();  // completed
  }
#if CUNUMPY_HAS_MPI()
  auto r = std::make_shared<detail::RequestState>();
  detail::check_mpi(MPI_Irecv(b.data, static_cast<int>(b.count), detail::mpi_type(b.dtype), detail::peer_of(source),
                              detail::tag_of(tag), s.comm, &r->request),
                    "irecv");
  return Request(r);
#else
  return Request();
#endif
}

Comm Comm::split(int color, int key) const {
  const auto& s = usable(state_, "split");
  if (s.serial) return serial();
#if CUNUMPY_HAS_MPI()
  MPI_Comm out = MPI_COMM_NULL;
  detail::check_mpi(MPI_Comm_split(s.comm, color, key, &out), "split");
  auto state = std::make_shared<detail::CommState>();
  state->serial = false;
  state->comm = out;
  MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
  MPI_Comm_rank(out, &state->rank);
  MPI_Comm_size(out, &state->size);
  return Comm(state);
#else
  (void)color;
  (void)key;
  return serial();
#endif
}

Comm Comm::dup() const {
  const auto& s = usable(state_, "dup");
  if (s.serial) return serial();
#if CUNUMPY_HAS_MPI()
  return Comm(make_dup(s.comm));
#else
  return serial();
#endif
}

void Request::wait() {
  if (!state_) return;
#if CUNUMPY_HAS_MPI()
  detail::check_mpi(MPI_Wait(&state_->request, MPI_STATUS_IGNORE), "wait");
#endif
  state_.reset();
}

bool Request::test() {
  if (!state_) return true;
#if CUNUMPY_HAS_MPI()
  int done = 0;
  detail::check_mpi(MPI_Test(&state_->request, &done, MPI_STATUS_IGNORE), "test");
  if (!done) return false;
#endif
  state_.reset();
  return true;
}

void Request::wait_all(std::span<Request> requests) {
  for (Request& r : requests) r.wait();
}

}  // namespace cunumpy
