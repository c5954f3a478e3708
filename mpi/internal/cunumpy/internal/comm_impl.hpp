// cunumpy/internal/comm_impl.hpp: the two implementations behind Comm and Request.
//
// Library-internal.  Comm (comm.cpp) checks every argument that does not depend on the
// implementation (roots, peers, buffer sizes, counts and displacements) and then calls one
// of these: MpiComm (comm_mpi.cpp, built with MPI) or SerialComm (comm_serial.cpp).  Counts
// are 64-bit here; the MPI implementation makes them fit MPI's int counts.
#pragma once

#include <atomic>

#include <memory>
#include <optional>

#include <cunumpy/comm.hpp>
#include <cunumpy/internal/context.hpp>

namespace cunumpy::detail {

class RequestImpl {
 public:
  virtual ~RequestImpl() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;
  // Receives are cancelled, sends completed; afterwards the request is done.
  virtual void cancel() noexcept = 0;
};

class CommImpl {
 public:
  virtual ~CommImpl() = default;
  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;
  virtual bool serial() const noexcept = 0;
  // Throws when the communicator can no longer be used (MPI finalised), naming `call`.
  virtual void check_usable(const char* call) const = 0;

  virtual void barrier() = 0;
  virtual void bcast(RawBuffer b, int root) = 0;
  virtual void allreduce(RawBuffer send, RawBuffer recv, Op op, bool in_place) = 0;
  virtual void reduce(RawBuffer send, RawBuffer recv, Op op, int root, bool in_place) = 0;
  virtual void scan(RawBuffer send, RawBuffer recv, Op op, bool in_place) = 0;
  virtual void allgather(RawBuffer send, RawBuffer recv) = 0;
  virtual void gather(RawBuffer send, RawBuffer recv, int root) = 0;
  virtual void scatter(RawBuffer send, RawBuffer recv, int root) = 0;
  virtual void alltoall(RawBuffer send, RawBuffer recv) = 0;
  virtual void allgatherv(RawBuffer send, RawBuffer recv, Counts counts, Counts displs) = 0;
  virtual void gatherv(RawBuffer send, RawBuffer recv, Counts counts, Counts displs, int root) = 0;
  virtual void scatterv(RawBuffer send, Counts counts, Counts displs, RawBuffer recv, int root) = 0;
  virtual void alltoallv(RawBuffer send, Counts send_counts, Counts send_displs, RawBuffer recv,
                         Counts recv_counts, Counts recv_displs) = 0;
  // Peers are ranks, proc_null or (receives) any_source; tags may be any_tag on receives.
  virtual void send(RawBuffer b, int dest, int tag) = 0;
  virtual void recv(RawBuffer b, int source, int tag) = 0;
  virtual void sendrecv(RawBuffer send, int dest, RawBuffer recv, int source, int tag) = 0;
  // nullptr when the operation completed at once.
  virtual std::unique_ptr<RequestImpl> isend(RawBuffer b, int dest, int tag) = 0;
  virtual std::unique_ptr<RequestImpl> irecv(RawBuffer b, int source, int tag) = 0;
  // A message waiting to be received (source any_source, tag any_tag allowed): blocking or not.
  virtual Status probe(int source, int tag) = 0;
  virtual std::optional<Status> iprobe(int source, int tag) = 0;
  virtual double wtime() const = 0;

  virtual std::shared_ptr<CommImpl> split(int color, int key) = 0;
  virtual std::shared_ptr<CommImpl> dup() = 0;
};

std::shared_ptr<CommImpl> make_serial_comm();
// A duplicate of MPI_COMM_WORLD when MPI is built in and initialised (and not finalised),
// else nothing.
std::shared_ptr<CommImpl> make_world_comm();

// The bytes of a buffer.
std::size_t bytes_of(const RawBuffer& b) noexcept;

// The MPI layer's process state, owned by the Runtime.
struct MpiContext {
  // set_mpi_cuda_aware / the probe's answer: -1 none recorded, 0 no, 1 yes (an atomic: threads
  // may read it while the Runtime records the probe's answer).
  std::atomic<int> recorded_cuda_awareness{-1};
  bool started_mpi = false;  // init_mpi started MPI (finalize_mpi ends it)
};
inline MpiContext& mpi_context() {
  return context_slot<MpiContext>().get();
}

// Non-blocking operations alive now (for leak tests).
long long live_requests() noexcept;
// Counted by every RequestImpl of both implementations.
struct LiveRequest {
  LiveRequest() noexcept;
  ~LiveRequest();
  LiveRequest(const LiveRequest&) = delete;
  LiveRequest& operator=(const LiveRequest&) = delete;
};

// The largest count the MPI implementation passes to one MPI call (INT_MAX); larger counts go
// through derived datatypes or pieces.  Tests lower it to run those paths on small buffers.
long long mpi_count_limit() noexcept;
void set_mpi_count_limit(long long limit) noexcept;

}  // namespace cunumpy::detail
