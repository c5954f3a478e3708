// Real MPI behind Comm (internal/comm_impl.hpp); built only with MPI.
//
// Counts are 64-bit.  A count above the limit (INT_MAX) is sent as one element of a derived
// datatype that covers it (blocks of the limit plus the remainder), for point-to-point calls
// and the collectives that move data; reductions, whose built-in operations take only
// built-in types, run in pieces of at most the limit.  Vector collectives whose counts or
// displacements do not fit in int are carried out with point-to-point messages.
#include <cunumpy/internal/comm_impl.hpp>

#include <algorithm>
#include <climits>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <cunumpy/errors.hpp>

namespace cunumpy {
namespace detail {
namespace {

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::boolean:
      return MPI_C_BOOL;
    case DType::int8:
      return MPI_INT8_T;
    case DType::uint8:
      return MPI_UINT8_T;
    case DType::int16:
      return MPI_INT16_T;
    case DType::uint16:
      return MPI_UINT16_T;
    case DType::int32:
      return MPI_INT32_T;
    case DType::uint32:
      return MPI_UINT32_T;
    case DType::int64:
      return MPI_INT64_T;
    case DType::uint64:
      return MPI_UINT64_T;
    case DType::float32:
      return MPI_FLOAT;
    case DType::float64:
      return MPI_DOUBLE;
    case DType::complex64:
      return MPI_C_FLOAT_COMPLEX;
    case DType::complex128:
      return MPI_C_DOUBLE_COMPLEX;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(Op op) {
  switch (op) {
    case Op::sum:
      return MPI_SUM;
    case Op::prod:
      return MPI_PROD;
    case Op::min:
      return MPI_MIN;
    case Op::max:
      return MPI_MAX;
    case Op::logical_and:
      return MPI_LAND;
    case Op::logical_or:
      return MPI_LOR;
    case Op::logical_xor:
      return MPI_LXOR;
    case Op::bit_and:
      return MPI_BAND;
    case Op::bit_or:
      return MPI_BOR;
    case Op::bit_xor:
      return MPI_BXOR;
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

// A probe's answer: the size in bytes (MPI_Get_elements_x of MPI_BYTE: 64-bit, and right for
// the derived datatypes of messages past INT_MAX elements).
Status status_of(const MPI_Status& st) {
  MPI_Count bytes = 0;
  check_mpi(MPI_Get_elements_x(&st, MPI_BYTE, &bytes), "MPI_Get_elements_x");
  return Status{st.MPI_SOURCE, st.MPI_TAG, static_cast<long long>(bytes)};
}

int tag_of(int tag) {
  return tag == any_tag ? MPI_ANY_TAG : tag;
}
int peer_of(int peer) {
  if (peer == proc_null) return MPI_PROC_NULL;
  if (peer == any_source) return MPI_ANY_SOURCE;
  return peer;
}

bool fits(long long count) {
  return count <= mpi_count_limit();
}

// `count` elements of `base` as (count, type) for one MPI call: the base type itself when the
// count fits, else one element of a committed derived type that covers all of them (freed
// with this object; MPI lets a type be freed while operations that use it are pending).
class Elements {
 public:
  Elements(long long count, DType dtype) : base_(mpi_type(dtype)) {
    if (fits(count)) {
      count_ = static_cast<int>(count);
      type_ = base_;
      return;
    }
    const long long limit = mpi_count_limit();
    const long long blocks = count / limit, rest = count % limit;
    if (blocks > INT_MAX)
      throw ValueError("Comm: " + std::to_string(count) +
                       " elements in one call are more than MPI datatypes can "
                       "describe (" +
                       std::to_string(limit) + " x INT_MAX); split the buffer");
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_get_extent(base_, &lb, &extent);
    MPI_Datatype block = MPI_DATATYPE_NULL;
    check_mpi(MPI_Type_contiguous(static_cast<int>(limit), base_, &block), "derived datatype");
    MPI_Datatype blocks_type = MPI_DATATYPE_NULL;
    check_mpi(MPI_Type_contiguous(static_cast<int>(blocks), block, &blocks_type),
              "derived datatype");
    MPI_Type_free(&block);
    if (rest == 0) {
      type_ = blocks_type;
    } else {
      int lengths[2] = {1, static_cast<int>(rest)};
      MPI_Aint displacements[2] = {0, static_cast<MPI_Aint>(blocks * limit) * extent};
      MPI_Datatype types[2] = {blocks_type, base_};
      check_mpi(MPI_Type_create_struct(2, lengths, displacements, types, &type_),
                "derived datatype");
      MPI_Type_free(&blocks_type);
    }
    // The extent of `count` elements, so that consecutive ranks' blocks sit side by side.
    MPI_Datatype resized = MPI_DATATYPE_NULL;
    check_mpi(MPI_Type_create_resized(type_, 0, static_cast<MPI_Aint>(count) * extent, &resized),
              "derived datatype");
    MPI_Type_free(&type_);
    type_ = resized;
    check_mpi(MPI_Type_commit(&type_), "derived datatype");
    count_ = 1;
    derived_ = true;
  }
  ~Elements() {
    if (derived_ && !finalized()) MPI_Type_free(&type_);
  }
  Elements(const Elements&) = delete;
  Elements& operator=(const Elements&) = delete;
  int count() const noexcept { return count_; }
  MPI_Datatype type() const noexcept { return type_; }

 private:
  MPI_Datatype base_;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  int count_ = 0;
  bool derived_ = false;
};

// Runs a reduction over [0, count) in pieces of at most the limit: f(offset, n) for each.
template <typename F>
void in_pieces(long long count, F&& f) {
  const long long limit = mpi_count_limit();
  if (count <= limit) return f(0LL, static_cast<int>(count));
  for (long long offset = 0; offset < count; offset += limit)
    f(offset, static_cast<int>(std::min(limit, count - offset)));
}

void* at(const RawBuffer& b, long long offset) {
  return static_cast<char*>(b.data) + offset * static_cast<long long>(dtype_size(b.dtype));
}

bool all_fit(Counts a, Counts b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!fits(a[i]) || !fits(b[i])) return false;
  return true;
}

// The int counts and displacements MPI's vector calls take: on the ranks that use them (all,
// or root for gatherv and scatterv), else null pointers.
class IntLayout {
 public:
  IntLayout(Counts counts, Counts displs, bool used = true) : used_(used) {
    if (!used) return;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      counts_.push_back(static_cast<int>(counts[i]));
      displs_.push_back(static_cast<int>(displs[i]));
    }
  }
  const int* counts() const noexcept { return used_ ? counts_.data() : nullptr; }
  const int* displs() const noexcept { return used_ ? displs_.data() : nullptr; }

 private:
  bool used_;
  std::vector<int> counts_, displs_;
};

// Rank r's block of a vector collective's buffer.
RawBuffer block_of(const RawBuffer& b, Counts counts, Counts displs, int r) {
  const auto u = static_cast<std::size_t>(r);
  return {at(b, displs[u]), counts[u], b.dtype};
}

class MpiRequest final : public RequestImpl {
 public:
  MpiRequest(bool receive, const char* call) : receive_(receive), call_(call) {}
  ~MpiRequest() override { cancel(); }
  MPI_Request* handle() noexcept { return &request_; }
  void wait() override {
    check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "wait");
    request_ = MPI_REQUEST_NULL;
  }
  bool test() override {
    int done = 0;
    check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "test");
    return done != 0;
  }
  void cancel() noexcept override {
    if (request_ == MPI_REQUEST_NULL || finalized()) return;
    if (receive_) MPI_Cancel(&request_);
    MPI_Wait(&request_, MPI_STATUS_IGNORE);
    request_ = MPI_REQUEST_NULL;
  }

 private:
  LiveRequest live_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool receive_;
  const char* call_;
};

class MpiComm;
// The communicators cunumpy owns that are alive: finalize_mpi frees them before MPI_Finalize,
// so a Comm that outlives MPI (its use then throws) leaks nothing.
struct LiveComms {
  std::mutex mutex;
  std::set<MpiComm*> comms;
};
LiveComms& live_comms() {
  static LiveComms* l = new LiveComms;  // never destroyed: Comms may outlive static objects
  return *l;
}

class MpiComm final : public CommImpl {
 public:
  // Takes ownership of `comm` (freed in the destructor, or by finalize_mpi) and reports errors
  // as return codes.
  explicit MpiComm(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    const std::lock_guard lock(live_comms().mutex);
    live_comms().comms.insert(this);
  }
  ~MpiComm() override {
    {
      const std::lock_guard lock(live_comms().mutex);
      live_comms().comms.erase(this);
    }
    release();
  }
  // Frees the communicator now (before MPI_Finalize); later calls throw as after finalize.
  void release() noexcept {
    if (comm_ != MPI_COMM_NULL && !finalized()) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
  }
  static std::shared_ptr<CommImpl> duplicate(MPI_Comm comm) {
    MPI_Comm out = MPI_COMM_NULL;
    check_mpi(MPI_Comm_dup(comm, &out), "dup");
    return std::make_shared<MpiComm>(out);
  }
  MPI_Comm native() const noexcept { return comm_; }

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  bool serial() const noexcept override { return false; }
  void check_usable(const char* call) const override {
    if (finalized())
      throw MpiError(std::string("Comm::") + call +
                     " after MPI_Finalize: MPI has ended; communicate before the Runtime (or "
                     "finalize_mpi) ends it");
  }

  void barrier() override { check_mpi(MPI_Barrier(comm_), "barrier"); }
  void bcast(RawBuffer b, int root) override {
    const Elements e(b.count, b.dtype);
    check_mpi(MPI_Bcast(b.data, e.count(), e.type(), root, comm_), "bcast");
  }
  void allreduce(RawBuffer send, RawBuffer recv, Op op, bool in_place) override {
    in_pieces(recv.count, [&](long long offset, int n) {
      check_mpi(MPI_Allreduce(in_place ? MPI_IN_PLACE : at(send, offset), at(recv, offset), n,
                              mpi_type(recv.dtype), mpi_op(op), comm_),
                "allreduce");
    });
  }
  void reduce(RawBuffer send, RawBuffer recv, Op op, int root, bool in_place) override {
    in_pieces(send.count, [&](long long offset, int n) {
      const void* in = (in_place && rank_ == root) ? MPI_IN_PLACE : at(send, offset);
      void* out = rank_ == root ? at(recv, offset) : recv.data;
      check_mpi(MPI_Reduce(in, out, n, mpi_type(send.dtype), mpi_op(op), root, comm_), "reduce");
    });
  }
  void scan(RawBuffer send, RawBuffer recv, Op op, bool in_place) override {
    in_pieces(recv.count, [&](long long offset, int n) {
      check_mpi(MPI_Scan(in_place ? MPI_IN_PLACE : at(send, offset), at(recv, offset), n,
                         mpi_type(recv.dtype), mpi_op(op), comm_),
                "scan");
    });
  }
  void allgather(RawBuffer send, RawBuffer recv) override {
    const Elements e(send.count, send.dtype);
    check_mpi(MPI_Allgather(send.data, e.count(), e.type(), recv.data, e.count(), e.type(), comm_),
              "allgather");
  }
  void gather(RawBuffer send, RawBuffer recv, int root) override {
    const Elements e(send.count, send.dtype);
    check_mpi(
        MPI_Gather(send.data, e.count(), e.type(), recv.data, e.count(), e.type(), root, comm_),
        "gather");
  }
  void scatter(RawBuffer send, RawBuffer recv, int root) override {
    const Elements e(recv.count, recv.dtype);
    check_mpi(
        MPI_Scatter(send.data, e.count(), e.type(), recv.data, e.count(), e.type(), root, comm_),
        "scatter");
  }
  void alltoall(RawBuffer send, RawBuffer recv) override {
    const Elements e(send.count / size_, send.dtype);
    check_mpi(MPI_Alltoall(send.data, e.count(), e.type(), recv.data, e.count(), e.type(), comm_),
              "alltoall");
  }

  void allgatherv(RawBuffer send, RawBuffer recv, Counts counts, Counts displs) override {
    // Every rank holds the same counts: every rank takes the same path without asking.
    if (all_fit(counts, displs)) {
      const IntLayout layout(counts, displs);
      const auto t = mpi_type(send.dtype);
      check_mpi(MPI_Allgatherv(send.data, static_cast<int>(send.count), t, recv.data,
                               layout.counts(), layout.displs(), t, comm_),
                "allgatherv");
      return;
    }
    std::deque<MpiRequest> pending;
    for (int r = 0; r < size_; ++r) {
      post_recv(block_of(recv, counts, displs, r), r, kVectorTag, pending);
      post_send(send, r, kVectorTag, pending);
    }
    finish(pending);
  }
  void gatherv(RawBuffer send, RawBuffer recv, Counts counts, Counts displs, int root) override {
    const bool root_fits = rank_ != root || all_fit(counts, displs);
    if (agree(fits(send.count) && root_fits)) {
      const IntLayout layout(counts, displs, rank_ == root);
      const auto t = mpi_type(send.dtype);
      check_mpi(MPI_Gatherv(send.data, static_cast<int>(send.count), t, recv.data, layout.counts(),
                            layout.displs(), t, root, comm_),
                "gatherv");
      return;
    }
    std::deque<MpiRequest> pending;
    if (rank_ == root)
      for (int r = 0; r < size_; ++r)
        post_recv(block_of(recv, counts, displs, r), r, kVectorTag, pending);
    post_send(send, root, kVectorTag, pending);
    finish(pending);
  }
  void scatterv(RawBuffer send, Counts counts, Counts displs, RawBuffer recv, int root) override {
    const bool root_fits = rank_ != root || all_fit(counts, displs);
    if (agree(fits(recv.count) && root_fits)) {
      const IntLayout layout(counts, displs, rank_ == root);
      const auto t = mpi_type(recv.dtype);
      check_mpi(MPI_Scatterv(send.data, layout.counts(), layout.displs(), t, recv.data,
                             static_cast<int>(recv.count), t, root, comm_),
                "scatterv");
      return;
    }
    std::deque<MpiRequest> pending;
    post_recv(recv, root, kVectorTag, pending);
    if (rank_ == root)
      for (int r = 0; r < size_; ++r)
        post_send(block_of(send, counts, displs, r), r, kVectorTag, pending);
    finish(pending);
  }
  void alltoallv(RawBuffer send, Counts send_counts, Counts send_displs, RawBuffer recv,
                 Counts recv_counts, Counts recv_displs) override {
    if (agree(all_fit(send_counts, send_displs) && all_fit(recv_counts, recv_displs))) {
      const IntLayout s(send_counts, send_displs), r(recv_counts, recv_displs);
      const auto t = mpi_type(send.dtype);
      check_mpi(MPI_Alltoallv(send.data, s.counts(), s.displs(), t, recv.data, r.counts(),
                              r.displs(), t, comm_),
                "alltoallv");
      return;
    }
    std::deque<MpiRequest> pending;
    for (int r = 0; r < size_; ++r) {
      post_recv(block_of(recv, recv_counts, recv_displs, r), r, kVectorTag, pending);
      post_send(block_of(send, send_counts, send_displs, r), r, kVectorTag, pending);
    }
    finish(pending);
  }

  void send(RawBuffer b, int dest, int tag) override {
    const Elements e(b.count, b.dtype);
    check_mpi(MPI_Send(b.data, e.count(), e.type(), dest, tag, comm_), "send");
  }
  void recv(RawBuffer b, int source, int tag) override {
    const Elements e(b.count, b.dtype);
    check_mpi(MPI_Recv(b.data, e.count(), e.type(), peer_of(source), tag_of(tag), comm_,
                       MPI_STATUS_IGNORE),
              "recv");
  }
  void sendrecv(RawBuffer send, int dest, RawBuffer recv, int source, int tag) override {
    const Elements s(send.count, send.dtype), r(recv.count, recv.dtype);
    check_mpi(MPI_Sendrecv(send.data, s.count(), s.type(), peer_of(dest), tag, recv.data, r.count(),
                           r.type(), peer_of(source), tag_of(tag), comm_, MPI_STATUS_IGNORE),
              "sendrecv");
  }
  std::unique_ptr<RequestImpl> isend(RawBuffer b, int dest, int tag) override {
    auto r = std::make_unique<MpiRequest>(false, "isend");
    const Elements e(b.count, b.dtype);
    check_mpi(MPI_Isend(b.data, e.count(), e.type(), peer_of(dest), tag, comm_, r->handle()),
              "isend");
    return r;
  }
  std::unique_ptr<RequestImpl> irecv(RawBuffer b, int source, int tag) override {
    auto r = std::make_unique<MpiRequest>(true, "irecv");
    const Elements e(b.count, b.dtype);
    check_mpi(
        MPI_Irecv(b.data, e.count(), e.type(), peer_of(source), tag_of(tag), comm_, r->handle()),
        "irecv");
    return r;
  }

  Status probe(int source, int tag) override {
    MPI_Status st;
    check_mpi(MPI_Probe(peer_of(source), tag_of(tag), comm_, &st), "probe");
    return status_of(st);
  }
  std::optional<Status> iprobe(int source, int tag) override {
    MPI_Status st;
    int found = 0;
    check_mpi(MPI_Iprobe(peer_of(source), tag_of(tag), comm_, &found, &st), "iprobe");
    if (!found) return std::nullopt;
    return status_of(st);
  }
  double wtime() const override { return MPI_Wtime(); }

  std::shared_ptr<CommImpl> split(int color, int key) override {
    MPI_Comm out = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm_, color, key, &out), "split");
    return std::make_shared<MpiComm>(out);
  }
  std::shared_ptr<CommImpl> dup() override { return duplicate(comm_); }

 private:
  // The tag of the point-to-point messages that carry large vector collectives: on a
  // duplicated communicator of its own, so no user message can match them.
  static constexpr int kVectorTag = 0;

  // Whether every rank can take the direct path (a collective decision, so no rank waits in
  // an MPI collective that another skipped).
  bool agree(bool mine) {
    int ok = mine ? 1 : 0;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, comm_), "allreduce");
    return ok != 0;
  }
  void post_send(RawBuffer b, int dest, int tag, std::deque<MpiRequest>& pending) {
    pending.emplace_back(false, "isend");
    const Elements e(b.count, b.dtype);
    check_mpi(
        MPI_Isend(b.data, e.count(), e.type(), dest, tag, vector_comm(), pending.back().handle()),
        "isend");
  }
  void post_recv(RawBuffer b, int source, int tag, std::deque<MpiRequest>& pending) {
    pending.emplace_back(true, "irecv");
    const Elements e(b.count, b.dtype);
    check_mpi(
        MPI_Irecv(b.data, e.count(), e.type(), source, tag, vector_comm(), pending.back().handle()),
        "irecv");
  }
  static void finish(std::deque<MpiRequest>& pending) {
    for (MpiRequest& r : pending) r.wait();
  }
  MPI_Comm vector_comm() {
    if (vector_comm_ == nullptr) vector_comm_ = std::static_pointer_cast<MpiComm>(duplicate(comm_));
    return vector_comm_->native();
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::shared_ptr<MpiComm> vector_comm_;
};

}  // namespace

std::shared_ptr<CommImpl> make_world_comm() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized || finalized()) return nullptr;
  return MpiComm::duplicate(MPI_COMM_WORLD);
}

}  // namespace detail

Comm Comm::from_native(MPI_Comm comm) {
  return Comm(detail::MpiComm::duplicate(comm));
}

MPI_Comm Comm::native() const {
  if (is_serial()) return MPI_COMM_SELF;
  return static_cast<const detail::MpiComm&>(*impl_).native();
}

bool mpi_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  return initialized != 0 && !detail::finalized();
}

bool init_mpi(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return false;
  int provided = 0;
  detail::check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "init");
  detail::mpi_context().started_mpi = true;
  return true;
}

void finalize_mpi() {
  auto& context = detail::mpi_context();
  if (!context.started_mpi || detail::finalized()) return;
  {
    auto& live = detail::live_comms();
    const std::lock_guard lock(live.mutex);
    for (detail::MpiComm* c : live.comms) c->release();
  }
  MPI_Finalize();
  context.started_mpi = false;
}

}  // namespace cunumpy
