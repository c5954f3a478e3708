// The serial stand-in behind Comm: one rank, messages to itself (internal/comm_impl.hpp).
#include <cunumpy/internal/comm_impl.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include <cunumpy/errors.hpp>

namespace cunumpy::detail {
namespace {

void copy_into(const RawBuffer& dst, const RawBuffer& src) {
  if (bytes_of(src) > 0) std::memcpy(dst.data, src.data, bytes_of(src));
}

// count elements from src (from element src_offset) into dst (from element dst_offset).
void copy_block(RawBuffer dst, long long dst_offset, RawBuffer src, long long src_offset,
                long long count) {
  const std::size_t e = dtype_size(src.dtype);
  if (count > 0)
    std::memcpy(static_cast<char*>(dst.data) + dst_offset * e,
                static_cast<const char*>(src.data) + src_offset * e,
                static_cast<std::size_t>(count) * e);
}

bool tag_matches(int wanted, int tag) {
  return wanted == any_tag || wanted == tag;
}

// Messages a rank sent to itself and receives it posted, each matched in posting order (MPI's
// non-overtaking rule).  Shared by every copy of one serial communicator and its requests.
struct Mailbox {
  struct Message {
    int tag;
    std::vector<unsigned char> bytes;
  };
  struct Receive {
    RawBuffer buffer;
    int tag;
    bool done = false;
  };
  std::list<Message> messages;                  // sent, not yet received
  std::list<std::shared_ptr<Receive>> waiting;  // posted receives not yet matched

  static void deliver(const std::vector<unsigned char>& bytes, Receive& r, const char* call) {
    if (bytes.size() > bytes_of(r.buffer))
      throw MpiError(std::string("Comm::") + call + ": the receive buffer (" +
                     std::to_string(bytes_of(r.buffer)) + " bytes) is smaller than the message (" +
                     std::to_string(bytes.size()) + " bytes)");
    if (!bytes.empty()) std::memcpy(r.buffer.data, bytes.data(), bytes.size());
    r.done = true;
  }

  // A send: completes the first waiting receive it matches, else is kept.
  void post(RawBuffer b, int tag, const char* call) {
    const auto* p = static_cast<const unsigned char*>(b.data);
    std::vector<unsigned char> bytes(p, p + bytes_of(b));
    auto it = std::find_if(waiting.begin(), waiting.end(),
                           [&](const auto& r) { return tag_matches(r->tag, tag); });
    if (it != waiting.end()) {
      std::shared_ptr<Receive> r = *it;
      waiting.erase(it);
      deliver(bytes, *r, call);
      return;
    }
    messages.push_back({tag, std::move(bytes)});
  }

  // A receive: takes the first kept message it matches; false when there is none.
  bool take(Receive& r, const char* call) {
    auto it = std::find_if(messages.begin(), messages.end(),
                           [&](const auto& m) { return tag_matches(r.tag, m.tag); });
    if (it == messages.end()) return false;
    Message m = std::move(*it);
    messages.erase(it);
    deliver(m.bytes, r, call);
    return true;
  }

  void forget(const std::shared_ptr<Receive>& r) { waiting.remove(r); }

  // The first kept message with a matching tag, as a probe sees it.
  std::optional<Status> peek(int tag) const {
    auto it = std::find_if(messages.begin(), messages.end(),
                           [&](const auto& m) { return tag_matches(tag, m.tag); });
    if (it == messages.end()) return std::nullopt;
    return Status{0, it->tag, static_cast<long long>(it->bytes.size())};
  }
};

[[noreturn]] void unmatched(const char* call, int tag) {
  throw ValueError(
      std::string("Comm::") + call + " from rank 0 on the serial stand-in: no message with tag " +
      std::to_string(tag) + " was sent, and a single process has no one else to wait for");
}

class SerialRequest final : public RequestImpl {
 public:
  SerialRequest(std::shared_ptr<Mailbox> box, std::shared_ptr<Mailbox::Receive> r)
      : box_(std::move(box)), receive_(std::move(r)) {}
  void wait() override {
    if (receive_->done) return;
    throw ValueError(
        "Request::wait on the serial stand-in: the receive with tag " +
        std::to_string(receive_->tag) +
        " is still unmatched and no other rank exists to send it; post the matching send to "
        "rank 0 before waiting");
  }
  bool test() override { return receive_->done; }
  void cancel() noexcept override { box_->forget(receive_); }

 private:
  LiveRequest live_;
  std::shared_ptr<Mailbox> box_;
  std::shared_ptr<Mailbox::Receive> receive_;
};

class SerialComm final : public CommImpl {
 public:
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  bool serial() const noexcept override { return true; }
  void check_usable(const char*) const override {}

  void barrier() override {}
  void bcast(RawBuffer, int) override {}
  void allreduce(RawBuffer send, RawBuffer recv, Op, bool in_place) override {
    if (!in_place) copy_into(recv, send);
  }
  void reduce(RawBuffer send, RawBuffer recv, Op, int, bool in_place) override {
    if (!in_place) copy_into(recv, send);
  }
  void scan(RawBuffer send, RawBuffer recv, Op, bool in_place) override {
    if (!in_place) copy_into(recv, send);
  }
  void allgather(RawBuffer send, RawBuffer recv) override { copy_into(recv, send); }
  void gather(RawBuffer send, RawBuffer recv, int) override { copy_into(recv, send); }
  void scatter(RawBuffer send, RawBuffer recv, int) override {
    copy_into(recv, {send.data, recv.count, send.dtype});
  }
  void alltoall(RawBuffer send, RawBuffer recv) override { copy_into(recv, send); }
  // The vector forms use rank 0's counts and displacements.
  void allgatherv(RawBuffer send, RawBuffer recv, Counts, Counts displs) override {
    copy_block(recv, displs[0], send, 0, send.count);
  }
  void gatherv(RawBuffer send, RawBuffer recv, Counts, Counts displs, int) override {
    copy_block(recv, displs[0], send, 0, send.count);
  }
  void scatterv(RawBuffer send, Counts counts, Counts displs, RawBuffer recv, int) override {
    copy_block(recv, 0, send, displs[0], counts[0]);
  }
  void alltoallv(RawBuffer send, Counts send_counts, Counts send_displs, RawBuffer recv,
                 Counts recv_counts, Counts recv_displs) override {
    if (send_counts[0] != recv_counts[0])
      throw ValueError("Comm::alltoallv: the receive count must hold " +
                       std::to_string(send_counts[0]) + " elements, got " +
                       std::to_string(recv_counts[0]) + "; size the buffer accordingly");
    copy_block(recv, recv_displs[0], send, send_displs[0], send_counts[0]);
  }

  void send(RawBuffer b, int, int tag) override { box_->post(b, tag, "send"); }
  void recv(RawBuffer b, int, int tag) override {
    Mailbox::Receive r{b, tag};
    if (!box_->take(r, "recv")) unmatched("recv", tag);
  }
  void sendrecv(RawBuffer send, int dest, RawBuffer recv, int source, int tag) override {
    if (dest != proc_null) box_->post(send, tag, "sendrecv");
    if (source == proc_null) return;
    Mailbox::Receive r{recv, tag};
    if (!box_->take(r, "sendrecv")) unmatched("sendrecv", tag);
  }
  std::unique_ptr<RequestImpl> isend(RawBuffer b, int, int tag) override {
    box_->post(b, tag, "isend");  // buffered: complete at once
    return nullptr;
  }
  std::unique_ptr<RequestImpl> irecv(RawBuffer b, int, int tag) override {
    auto r = std::make_shared<Mailbox::Receive>(Mailbox::Receive{b, tag});
    if (box_->take(*r, "irecv")) return nullptr;
    box_->waiting.push_back(r);
    return std::make_unique<SerialRequest>(box_, std::move(r));
  }

  Status probe(int, int tag) override {
    if (auto s = box_->peek(tag)) return *s;
    unmatched("probe", tag);
  }
  std::optional<Status> iprobe(int, int tag) override { return box_->peek(tag); }
  double wtime() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  std::shared_ptr<CommImpl> split(int, int) override { return make_serial_comm(); }
  std::shared_ptr<CommImpl> dup() override { return make_serial_comm(); }

 private:
  std::shared_ptr<Mailbox> box_ = std::make_shared<Mailbox>();
};

}  // namespace

std::shared_ptr<CommImpl> make_serial_comm() {
  return std::make_shared<SerialComm>();
}

}  // namespace cunumpy::detail
