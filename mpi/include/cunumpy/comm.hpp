// cunumpy/comm.hpp: Comm, a communicator that is real MPI under a launcher and the serial
// stand-in otherwise, so the same code runs with and without MPI.
//
//   cunumpy::Comm world = cunumpy::Comm::world();
//   world.allreduce(std::span(rho), cunumpy::Op::sum);          // in place
//   double total = world.allreduce(local_energy, cunumpy::Op::sum);
//   auto r = world.irecv(std::span(ghost), left, 7);              // post receives first
//   world.send(std::span(edge), right, 7);
//   r.wait();
//
// A Comm is a value: copies share one communicator (a duplicated MPI communicator, freed with
// the last copy).  Two implementations sit behind it, in separate files: real MPI and the
// serial stand-in.  Element counts are 64-bit everywhere: a message or collective of more than
// INT_MAX elements is sent with derived datatypes (or in pieces, for reductions), so nothing is
// truncated.  The serial stand-in behaves as one rank of size 1, as the Python reference's
// SerialComm: collectives copy the send buffer into the receive buffer (nothing to do in
// place); messages to itself are matched by tag in the order they were posted, whichever of
// the send and the receive comes first (a receive posted first completes when the send
// arrives, as under MPI); a call one rank cannot serve (recv from a rank that is not 0, a root
// other than 0, waiting on a receive no send can match) throws ValueError naming the call.
// Buffers here are host memory (std::span); <cunumpy/mpi_buffer.hpp> takes arrays anywhere.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <cunumpy/build_config.hpp>
#include <cunumpy/dtype.hpp>

#if CUNUMPY_HAS_MPI()
#include <mpi.h>
#endif

namespace cunumpy {

// Reduction operations.
enum class Op {
  sum,
  prod,
  min,
  max,
  logical_and,
  logical_or,
  logical_xor,
  bit_and,
  bit_or,
  bit_xor
};

// The checked mode of the collectives: before each one, the ranks compare what they pass (the
// count, the element type, the operation, the root) with one small allgather, and when they
// disagree every rank raises MpiError naming each rank's arguments, instead of a wrong result
// on some ranks and a hang on others.  Costs one extra collective per call: for debugging and
// CI.  From CUNUMPY_MPI_CHECK=1 (read once), or set here (every rank alike).
void set_mpi_checks(bool enabled) noexcept;
bool mpi_checks() noexcept;

// Ranks that are no rank: a send or receive with proc_null does nothing; any_source receives
// from whoever sends.
inline constexpr int proc_null = -2;  // as MPI_PROC_NULL: a send or receive that does nothing
inline constexpr int any_source = -1;
inline constexpr int any_tag = -1;

// What a probe found: the sender, the tag, and the message's size (count<T>() elements).
struct Status {
  // The sender's rank, the message's tag, and its size in bytes.
  int source = proc_null;
  int tag = any_tag;
  long long bytes = 0;
  // The elements of type T the message holds (MPI_Get_count): ValueError when its bytes are not
  // a whole number of T.
  template <Element T>
  long long count() const {
    if (bytes % static_cast<long long>(sizeof(T)) != 0) throw_partial(sizeof(T));
    return bytes / static_cast<long long>(sizeof(T));
  }

 private:
  [[noreturn]] void throw_partial(std::size_t element) const;
};

namespace detail {
class CommImpl;
class RequestImpl;
// A type-erased host buffer.
struct RawBuffer {
  void* data;
  long long count;
  DType dtype;
};
template <typename T>
requires Element<std::remove_const_t<T>> RawBuffer raw(std::span<T> s) {
  return {const_cast<std::remove_const_t<T>*>(s.data()), static_cast<long long>(s.size()),
          dtype_of<std::remove_const_t<T>>()};
}
// A send buffer of the receive buffer's element type (converts from spans and vectors).
template <typename T>
using In = std::span<const std::type_identity_t<T>>;

// Per-rank counts or displacements of the vector collectives, in elements: int or 64-bit.
class Counts {
 public:
  Counts(std::span<const int> v) noexcept : int_(v), size_(v.size()) {}            // NOLINT
  Counts(std::span<const long long> v) noexcept : long_(v), size_(v.size()) {}     // NOLINT
  Counts(const std::vector<int>& v) noexcept : Counts(std::span<const int>(v)) {}  // NOLINT
  Counts(const std::vector<long long>& v) noexcept
      : Counts(std::span<const long long>(v)) {}  // NOLINT
  std::size_t size() const noexcept { return size_; }
  long long operator[](std::size_t i) const noexcept { return int_.empty() ? long_[i] : int_[i]; }

 private:
  std::span<const int> int_;
  std::span<const long long> long_;
  std::size_t size_;
};
}  // namespace detail

// A pending non-blocking operation; move-only.  A default, completed or moved-from Request is
// inactive.  A Request destroyed while active is never leaked: a receive is cancelled (so it
// can no longer match a later message), a send is waited for.
class Request {
 public:
  Request() noexcept;
  ~Request();
  Request(Request&& other) noexcept;
  Request& operator=(Request&& other) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  void wait();
  bool test();    // true when complete (then the request is inactive); never waits
  void cancel();  // a receive is cancelled, a send completed; then inactive
  bool active() const noexcept { return impl_ != nullptr; }
  static void wait_all(std::span<Request> requests);

 private:
  friend class Comm;
  explicit Request(std::unique_ptr<detail::RequestImpl> impl) noexcept;
  std::unique_ptr<detail::RequestImpl> impl_;
};

// A communicator: real MPI under a launcher, the serial stand-in otherwise (a value; copies
// share one communicator).
class Comm {
 public:
  // The world: a duplicate of MPI_COMM_WORLD when MPI is initialised, else the serial
  // stand-in.  Comm::serial() is the stand-in always.
  static Comm world();
  static Comm serial();
#if CUNUMPY_HAS_MPI()
  // Duplicates `comm` (the duplicate is owned and freed with the last copy).
  static Comm from_native(MPI_Comm comm);
  // The MPI communicator, for code that calls MPI itself (MPI_COMM_SELF for the stand-in).
  MPI_Comm native() const;
#endif

  int rank() const noexcept;
  int size() const noexcept;
  bool is_serial() const noexcept;

  void barrier() const;

  // ---- collectives on spans (count checked where the call defines it) ----
  template <Element T>
  void bcast(std::span<T> buffer, int root) const {
    bcast_raw(detail::raw(buffer), root);
  }
  template <Element T>
  T bcast(T value, int root) const {
    bcast(std::span<T>(&value, 1), root);
    return value;
  }

  template <Element T>
  void allreduce(detail::In<T> send, std::span<T> recv, Op op) const {
    allreduce_raw(detail::raw(send), detail::raw(recv), op, false);
  }
  template <Element T>
  void allreduce(std::span<T> inout, Op op) const {  // in place
    allreduce_raw(detail::raw(inout), detail::raw(inout), op, true);
  }
  template <Element T>
  T allreduce(T value, Op op) const {
    allreduce(std::span<T>(&value, 1), op);
    return value;
  }

  // recv is used on root only (it may be empty elsewhere).
  template <Element T>
  void reduce(detail::In<T> send, std::span<T> recv, Op op, int root) const {
    reduce_raw(detail::raw(send), detail::raw(recv), op, root);
  }
  // The reduction of every rank's value on root; nothing on the other ranks (mpi4py's None).
  template <Element T>
  std::optional<T> reduce(T value, Op op, int root) const {
    T out{};
    const bool on_root = rank() == root;
    reduce<T>(std::span<const T>(&value, 1), on_root ? std::span<T>(&out, 1) : std::span<T>(), op,
              root);
    return on_root ? std::optional<T>(out) : std::nullopt;
  }
  template <Element T>
  void scan(detail::In<T> send, std::span<T> recv, Op op) const {
    scan_raw(detail::raw(send), detail::raw(recv), op);
  }
  template <Element T>
  T scan(T value, Op op) const {
    T out{};
    scan<T>(std::span<const T>(&value, 1), std::span<T>(&out, 1), op);
    return out;
  }

  // recv holds size() * send.size() elements (on root for gather).
  template <Element T>
  void allgather(detail::In<T> send, std::span<T> recv) const {
    allgather_raw(detail::raw(send), detail::raw(recv));
  }
  template <Element T>
  std::vector<T> allgather(T value) const {
    std::vector<T> out(static_cast<std::size_t>(size()));
    allgather<T>(std::span<const T>(&value, 1), std::span<T>(out));
    return out;
  }
  template <Element T>
  void gather(detail::In<T> send, std::span<T> recv, int root) const {
    gather_raw(detail::raw(send), detail::raw(recv), root);
  }
  // Every rank's value, in rank order, on root; an empty vector on the other ranks.
  template <Element T>
  std::vector<T> gather(T value, int root) const {
    std::vector<T> out(rank() == root ? static_cast<std::size_t>(size()) : 0);
    gather<T>(std::span<const T>(&value, 1), std::span<T>(out), root);
    return out;
  }
  // send holds size() * recv.size() elements (on root).
  template <Element T>
  void scatter(detail::In<T> send, std::span<T> recv, int root) const {
    scatter_raw(detail::raw(send), detail::raw(recv), root);
  }
  // values[r] to rank r: root's `values` holds size() elements (read on root only).
  template <Element T>
  T scatter(detail::In<T> values, int root) const {
    T out{};
    scatter<T>(values, std::span<T>(&out, 1), root);
    return out;
  }
  // send and recv hold size() blocks of equal length.
  template <Element T>
  void alltoall(detail::In<T> send, std::span<T> recv) const {
    alltoall_raw(detail::raw(send), detail::raw(recv));
  }

  // ---- vector forms: per-rank counts and displacements (in elements) ----
  template <Element T>
  void allgatherv(detail::In<T> send, std::span<T> recv, detail::Counts counts,
                  detail::Counts displs) const {
    allgatherv_raw(detail::raw(send), detail::raw(recv), counts, displs);
  }
  // counts and displs are read on root.
  template <Element T>
  void gatherv(detail::In<T> send, std::span<T> recv, detail::Counts counts, detail::Counts displs,
               int root) const {
    gatherv_raw(detail::raw(send), detail::raw(recv), counts, displs, root);
  }
  template <Element T>
  void scatterv(detail::In<T> send, detail::Counts counts, detail::Counts displs, std::span<T> recv,
                int root) const {
    scatterv_raw(detail::raw(send), counts, displs, detail::raw(recv), root);
  }
  template <Element T>
  void alltoallv(detail::In<T> send, detail::Counts send_counts, detail::Counts send_displs,
                 std::span<T> recv, detail::Counts recv_counts, detail::Counts recv_displs) const {
    alltoallv_raw(detail::raw(send), send_counts, send_displs, detail::raw(recv), recv_counts,
                  recv_displs);
  }

  // ---- point to point ----
  template <typename T>
  requires Element<std::remove_const_t<T>>
  void send(std::span<T> buffer, int dest, int tag = 0) const {
    send_raw(detail::raw(buffer), dest, tag);
  }
  template <Element T>
  void recv(std::span<T> buffer, int source, int tag = 0) const {
    recv_raw(detail::raw(buffer), source, tag);
  }
  template <Element T>
  void sendrecv(detail::In<T> send, int dest, std::span<T> recv, int source, int tag = 0) const {
    sendrecv_raw(detail::raw(send), dest, detail::raw(recv), source, tag);
  }
  template <typename T>
  requires Element<std::remove_const_t<T>>
  [[nodiscard]] Request isend(std::span<T> buffer, int dest, int tag = 0) const {
    return isend_raw(detail::raw(buffer), dest, tag);
  }
  template <Element T>
  [[nodiscard]] Request irecv(std::span<T> buffer, int source, int tag = 0) const {
    return irecv_raw(detail::raw(buffer), source, tag);
  }

  // Waits for a message from `source` (a rank or any_source) with `tag` (or any_tag) and says
  // who sent it, its tag and its size, without receiving it: for messages of a length the
  // receiver does not know (receive it with recv(buffer, status.source, status.tag)).  On the
  // serial stand-in, a message the rank sent itself; ValueError when there is none (no one else
  // could send it).
  Status probe(int source = any_source, int tag = any_tag) const;
  // The same without waiting: nothing when no such message has arrived.
  std::optional<Status> iprobe(int source = any_source, int tag = any_tag) const;
  // Seconds since an arbitrary moment of this process (MPI_Wtime; a steady clock on the serial
  // stand-in), for timing with the clock MPI codes use.
  double wtime() const;

  // New communicators: ranks with the same color form one, ordered by key (then rank).
  Comm split(int color, int key) const;
  Comm dup() const;

 private:
  explicit Comm(std::shared_ptr<detail::CommImpl> impl) : impl_(std::move(impl)) {}

  void bcast_raw(detail::RawBuffer b, int root) const;
  void allreduce_raw(detail::RawBuffer send, detail::RawBuffer recv, Op op, bool in_place) const;
  void reduce_raw(detail::RawBuffer send, detail::RawBuffer recv, Op op, int root) const;
  void scan_raw(detail::RawBuffer send, detail::RawBuffer recv, Op op) const;
  void allgather_raw(detail::RawBuffer send, detail::RawBuffer recv) const;
  void gather_raw(detail::RawBuffer send, detail::RawBuffer recv, int root) const;
  void scatter_raw(detail::RawBuffer send, detail::RawBuffer recv, int root) const;
  void alltoall_raw(detail::RawBuffer send, detail::RawBuffer recv) const;
  void allgatherv_raw(detail::RawBuffer send, detail::RawBuffer recv, detail::Counts counts,
                      detail::Counts displs) const;
  void gatherv_raw(detail::RawBuffer send, detail::RawBuffer recv, detail::Counts counts,
                   detail::Counts displs, int root) const;
  void scatterv_raw(detail::RawBuffer send, detail::Counts counts, detail::Counts displs,
                    detail::RawBuffer recv, int root) const;
  void alltoallv_raw(detail::RawBuffer send, detail::Counts send_counts, detail::Counts send_displs,
                     detail::RawBuffer recv, detail::Counts recv_counts,
                     detail::Counts recv_displs) const;
  void send_raw(detail::RawBuffer b, int dest, int tag) const;
  void recv_raw(detail::RawBuffer b, int source, int tag) const;
  void sendrecv_raw(detail::RawBuffer send, int dest, detail::RawBuffer recv, int source,
                    int tag) const;
  Request isend_raw(detail::RawBuffer b, int dest, int tag) const;
  Request irecv_raw(detail::RawBuffer b, int source, int tag) const;

  std::shared_ptr<detail::CommImpl> impl_;
};

// MPI started by cunumpy's start-up (or the application); false for the serial stand-in.
bool mpi_initialized();
// Starts MPI (MPI_Init_thread, funneled) if it is built in and not yet started; returns whether
// this call started it.  finalize_mpi() ends it if it was started here.
bool init_mpi(int* argc = nullptr, char*** argv = nullptr);
void finalize_mpi();

}  // namespace cunumpy
