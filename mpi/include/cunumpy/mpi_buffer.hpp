// cunumpy/mpi_buffer.hpp: device buffers in MPI calls, and whether MPI can take them.
//
//   cunumpy::allreduce(world, rho, cunumpy::Op::sum);       // rho: Array<double>, any side
//
// Host arrays go straight to MPI.  Device arrays (cuda or emulated) are first synchronised
// (synchronize_for_mpi); then, when MPI is CUDA-aware, their device pointer is passed; else
// they go through mpi_buffer: a pinned host staging buffer from a persistent pool, filled from the
// device before the call (send) and copied back after it (receive), both counted by
// count_transfers() at the caller's line.  CUDA-awareness is yes / no / unknown, and unknown
// stages.  The emulated device follows the same rules (its memory is host-addressable, so
// set_mpi_cuda_aware(true) exercises the direct path and a plain MPI the staging path).
#pragma once

#include <exception>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <utility>

#include <cunumpy/array.hpp>
#include <cunumpy/comm.hpp>
#include <cunumpy/memory.hpp>
#include <cunumpy/transfer.hpp>

namespace cunumpy {

// Whether MPI takes device buffers: yes, no, or not known.
enum class Awareness { yes, no, unknown };
std::string_view to_string(Awareness a) noexcept;

// The answer on MPI's CUDA-awareness and what it rests on.
struct CudaAwareness {
  Awareness state = Awareness::unknown;
  std::string reason;  // each signal and what it said
};

// What the build and the library say, without communication: the compile-time
// MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support() (Open MPI), and CUNUMPY_MPI_CUDA_AWARE.
CudaAwareness query_cuda_awareness();

// Records (or forgets, with nullopt) whether MPI can take device buffers; mpi_cuda_aware()
// reads the recorded answer, or the query above when none was recorded.
void set_mpi_cuda_aware(std::optional<bool> aware);
CudaAwareness mpi_cuda_aware();

// Waits for the work on the current stream that may still write `array` before MPI reads it
// (a synchronisation counted as `mpi`); nothing for host arrays, so it costs nothing there.
template <Element T>
void synchronize_for_mpi(const Array<T>& array,
                         std::source_location where = std::source_location::current()) {
  detail::synchronize_backend(array.backend(), SyncKind::mpi, "synchronize_for_mpi()", where);
}

// The collective check of the Python reference, for the cuda backend: every rank of `comm`
// sends a tiny device array to rank + 1 and receives from rank - 1 (after synchronisation),
// checks the values, and the ranks combine their outcomes with a logical AND; any failure on
// any rank gives no.  A definite "no" from the library query is trusted without the exchange
// (a plain MPI may crash on a device pointer).  The answer is recorded for mpi_buffer.  On
// host and emulated it returns the query's answer and exchanges nothing.  Collective.
CudaAwareness mpi_is_cuda_aware(const Comm& comm);

// Throws BackendError, saying how to get a CUDA-aware MPI, unless mpi_is_cuda_aware(comm) is
// yes on the cuda backend.  No-op on host and emulated (their buffers are staged or host).
void require_cuda_aware_mpi(const Comm& comm);

namespace detail {
// True when a device array of `backend` can go to MPI as it is: `aware` when given, else the
// recorded or queried answer (unknown stages).
bool device_pointer_ok(Backend backend, std::optional<bool> aware = std::nullopt);
// The ring exchange of mpi_is_cuda_aware on `memory_backend` memory; true when every rank
// received what its neighbour sent.  Collective.  Exposed for tests.
bool ring_exchange_probe(const Comm& comm, Backend memory_backend);
}  // namespace detail

// The buffer to hand MPI for `array` while it lives: the array's own memory (host, or device
// with CUDA-aware MPI), or a host staging copy that is filled on construction when `send`
// and copied back to the device when `receive`: by finish(), or when the buffer leaves its
// scope without one (the Python reference's context manager).  Leaving the scope through an
// exception copies nothing back (what MPI wrote may be incomplete) and never terminates.
template <Element T>
class MpiBuffer {
 public:
  MpiBuffer(const Array<T>& array, bool send, bool receive,
            std::optional<bool> cuda_aware = std::nullopt,
            std::source_location where = std::source_location::current())
      : array_(array), receive_(receive), where_(where), exceptions_(std::uncaught_exceptions()) {
    if (array.is_device()) synchronize_for_mpi(array, where);
    if (array.is_host() || detail::device_pointer_ok(array.backend(), cuda_aware)) {
      span_ = {array.data(), static_cast<std::size_t>(array.size())};
      return;
    }
    staging_ = pinned_empty<T>(array.shape());
    if (send) detail::mpi_staging_copy(staging_, array, where);
    span_ = staging_.host_span();
  }
  std::span<T> span() const noexcept { return span_; }
  bool staged() const noexcept { return span_.data() != array_.data(); }
  // Copies a received staging buffer back unless finish() did or an exception is unwinding.
  ~MpiBuffer() noexcept(false) {
    if (std::uncaught_exceptions() > exceptions_) return;
    finish();
  }
  MpiBuffer(const MpiBuffer&) = delete;
  MpiBuffer& operator=(const MpiBuffer&) = delete;
  MpiBuffer& operator=(MpiBuffer&&) = delete;
  // The moved-from buffer copies nothing back.
  MpiBuffer(MpiBuffer&& other) noexcept
      : array_(std::move(other.array_)),
        staging_(std::move(other.staging_)),
        span_(other.span_),
        receive_(std::exchange(other.receive_, false)),
        where_(other.where_),
        exceptions_(other.exceptions_) {}

  // Copies a received staging buffer back to the device now (once; the destructor then does
  // nothing).
  void finish() {
    if (receive_ && staging_.size() > 0) {
      receive_ = false;
      detail::mpi_staging_copy(array_, staging_, where_);
    }
    receive_ = false;
  }

 private:
  Array<T> array_;
  Array<T> staging_;
  std::span<T> span_;
  bool receive_;
  std::source_location where_;
  int exceptions_;
};

// The Python reference's mpi_buffer: the buffer to give MPI for `array`; for a receive, the
// data goes back to the device when the buffer leaves its scope (or at finish(), earlier).
//   {
//     auto b = cunumpy::mpi_buffer(rho, /*send=*/true, /*receive=*/true);
//     MPI_Allreduce(MPI_IN_PLACE, b.span().data(), n, MPI_DOUBLE, MPI_SUM, comm.native());
//   }                                   // rho holds the sum, on its device
template <Element T>
[[nodiscard]] MpiBuffer<T> mpi_buffer(
    const Array<T>& array, bool send, bool receive, std::optional<bool> cuda_aware = std::nullopt,
    std::source_location where = std::source_location::current()) {
  return MpiBuffer<T>(array, send, receive, cuda_aware, where);
}

// Collectives on arrays, wherever they live.
template <Element T>
void allreduce(const Comm& comm, const Array<T>& inout, Op op,
               std::source_location where = std::source_location::current()) {
  if (comm.size() == 1) return;  // one rank: the array already holds the result, nothing moves
  MpiBuffer<T> b(inout, true, true, std::nullopt, where);
  comm.allreduce(b.span(), op);
  b.finish();
}

// Broadcasts `buffer` from `root` to every rank.
template <Element T>
void bcast(const Comm& comm, const Array<T>& buffer, int root,
           std::source_location where = std::source_location::current()) {
  if (comm.size() == 1) {
    comm.bcast(std::span<T>(), root);  // checks the root
    return;
  }
  MpiBuffer<T> b(buffer, comm.rank() == root, comm.rank() != root, std::nullopt, where);
  comm.bcast(b.span(), root);
  b.finish();
}

// Sends `send` to `dest` and receives `recv` from `source` at once.
template <Element T>
void sendrecv(const Comm& comm, const Array<T>& send, int dest, const Array<T>& recv, int source,
              int tag = 0, std::source_location where = std::source_location::current()) {
  MpiBuffer<T> s(send, true, false, std::nullopt, where);
  MpiBuffer<T> r(recv, false, true, std::nullopt, where);
  comm.sendrecv<T>(s.span(), dest, r.span(), source, tag);
  r.finish();
}

// Reduces `send` over the ranks into `recv` on `root`.
template <Element T>
void reduce(const Comm& comm, const Array<T>& send, const Array<T>& recv, Op op, int root,
            std::source_location where = std::source_location::current()) {
  MpiBuffer<T> s(send, true, false, std::nullopt, where);
  MpiBuffer<T> r(recv, false, comm.rank() == root, std::nullopt, where);
  comm.reduce<T>(s.span(), r.span(), op, root);
  r.finish();
}

// The inclusive prefix reduction over the ranks.
template <Element T>
void scan(const Comm& comm, const Array<T>& send, const Array<T>& recv, Op op,
          std::source_location where = std::source_location::current()) {
  MpiBuffer<T> s(send, true, false, std::nullopt, where);
  MpiBuffer<T> r(recv, false, true, std::nullopt, where);
  comm.scan<T>(s.span(), r.span(), op);
  r.finish();
}

// Gathers every rank's `send` into `recv` on `root`, in rank order.
template <Element T>
void gather(const Comm& comm, const Array<T>& send, const Array<T>& recv, int root,
            std::source_location where = std::source_location::current()) {
  MpiBuffer<T> s(send, true, false, std::nullopt, where);
  MpiBuffer<T> r(recv, false, comm.rank() == root, std::nullopt, where);
  comm.gather<T>(s.span(), r.span(), root);
  r.finish();
}

// Scatters `send` on `root` in equal parts, one to each rank's `recv`.
template <Element T>
void scatter(const Comm& comm, const Array<T>& send, const Array<T>& recv, int root,
             std::source_location where = std::source_location::current()) {
  MpiBuffer<T> s(send, comm.rank() == root, false, std::nullopt, where);
  MpiBuffer<T> r(recv, false, true, std::nullopt, where);
  comm.scatter<T>(s.span(), r.span(), root);
  r.finish();
}

// Each rank sends an equal part of `send` to every rank and receives theirs into `recv`.
template <Element T>
void alltoall(const Comm& comm, const Array<T>& send, const Array<T>& recv,
              std::source_location where = std::source_location::current()) {
  MpiBuffer<T> s(send, true, false, std::nullopt, where);
  MpiBuffer<T> r(recv, false, true, std::nullopt, where);
  comm.alltoall<T>(s.span(), r.span());
  r.finish();
}

// Gathers parts of different sizes (`counts` per rank) from every rank into every rank.
template <Element T>
void allgatherv(const Comm& comm, const Array<T>& send, const Array<T>& recv, detail::Counts counts,
                detail::Counts displs,
                std::source_location where = std::source_location::current()) {
  MpiBuffer<T> s(send, true, false, std::nullopt, where);
  MpiBuffer<T> r(recv, false, true, std::nullopt, where);
  comm.allgatherv<T>(s.span(), r.span(), counts, displs);
  r.finish();
}

// A blocking send of an array.
template <Element T>
void send(const Comm& comm, const Array<T>& buffer, int dest, int tag = 0,
          std::source_location where = std::source_location::current()) {
  MpiBuffer<T> s(buffer, true, false, std::nullopt, where);
  comm.send(s.span(), dest, tag);
}

// A blocking receive into an array.
template <Element T>
void recv(const Comm& comm, const Array<T>& buffer, int source, int tag = 0,
          std::source_location where = std::source_location::current()) {
  MpiBuffer<T> r(buffer, false, true, std::nullopt, where);
  comm.recv(r.span(), source, tag);
  r.finish();
}

// A non-blocking send or receive of an array: it keeps the staging buffer alive until the
// operation completes, and wait() (or a successful test()) copies a received staging buffer
// to the device.
template <Element T>
class ArrayRequest {
 public:
  ArrayRequest(MpiBuffer<T> buffer, Request request)
      : buffer_(std::move(buffer)), request_(std::move(request)) {}
  void wait() {
    request_.wait();
    buffer_.finish();
  }
  bool test() {
    if (!request_.test()) return false;
    buffer_.finish();
    return true;
  }

 private:
  MpiBuffer<T> buffer_;
  Request request_;
};

// A non-blocking send of an array.
template <Element T>
[[nodiscard]] ArrayRequest<T> isend(const Comm& comm, const Array<T>& buffer, int dest, int tag = 0,
                                    std::source_location where = std::source_location::current()) {
  MpiBuffer<T> s(buffer, true, false, std::nullopt, where);
  Request r = comm.isend(s.span(), dest, tag);
  return ArrayRequest<T>(std::move(s), std::move(r));
}

// A non-blocking receive into an array.
template <Element T>
[[nodiscard]] ArrayRequest<T> irecv(const Comm& comm, const Array<T>& buffer, int source,
                                    int tag = 0,
                                    std::source_location where = std::source_location::current()) {
  MpiBuffer<T> b(buffer, false, true, std::nullopt, where);
  Request r = comm.irecv(b.span(), source, tag);
  return ArrayRequest<T>(std::move(b), std::move(r));
}

// Gathers every rank's `send` into every rank's `recv`, in rank order.
template <Element T>
void allgather(const Comm& comm, const Array<T>& send, const Array<T>& recv,
               std::source_location where = std::source_location::current()) {
  MpiBuffer<T> s(send, true, false, std::nullopt, where);
  MpiBuffer<T> r(recv, false, true, std::nullopt, where);
  comm.allgather<T>(s.span(), r.span());
  r.finish();
}

}  // namespace cunumpy
