// cunumpy/host_staging.hpp: background copies of device arrays to pinned host buffers, so that
// output (diagnostics, HDF5) overlaps the next time steps.
//
//   cunumpy::HostStaging<double> staging(rho.shape(), /*buffers=*/2);
//   for (int step = 0; ; ++step) {
//     advance(rho);                                   // kernels on the current stream
//     auto copy = staging.copy(rho);                  // returns at once
//     ...
//     if (copy.ready()) write(copy.result());         // a host Array over the pinned buffer
//   }
//
// copy(array) snapshots the device array on the current stream (after the kernels that wrote
// it) and copies the snapshot to the next of `buffers` pinned host buffers on the staging's
// own stream.  It waits only when that buffer's previous copy has not finished, so the program
// runs at most `buffers` copies ahead.  StagedCopy::ready() never waits; result() waits and
// returns the host data, valid until the buffer is reused `buffers` copies later; the result
// of a reused buffer is stale and result() throws.  synchronize() waits for all copies.  Host
// arrays copy at once.  Device copies are counted as to_host at the caller's line.  The
// emulated device behaves the same (its copies complete as they are issued).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include <cunumpy/array.hpp>
#include <cunumpy/stream.hpp>

namespace cunumpy {

namespace detail {
// The non-template ring of HostStaging: byte buffers, events and the copy stream.
class StagingRing {
 public:
  StagingRing(std::size_t bytes, int buffers);
  ~StagingRing();
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  struct Ticket {
    int slot;
    unsigned long long generation;
  };
  Ticket copy(const void* src, Backend src_backend, const std::source_location& where,
              const std::string& description);
  bool stale(const Ticket& t) const noexcept;
  bool ready(const Ticket& t) const;
  // Waits for the copy; throws Error when it is stale.
  std::shared_ptr<MemoryBlock> wait(const Ticket& t, const std::source_location& where);
  void synchronize(const std::source_location& where);
  int buffers() const noexcept { return static_cast<int>(slots_.size()); }

 private:
  struct Slot {
    std::shared_ptr<MemoryBlock> host;      // pinned
    std::shared_ptr<MemoryBlock> snapshot;  // device, allocated on the first device copy
    std::optional<Event> snapshot_done;     // on the current stream
    std::optional<Event> copy_done;         // on the copy stream
    unsigned long long generation = 0;
    bool pending = false;  // a device copy was issued and not waited for
  };
  void ensure_device(Backend backend);
  void wait_slot(Slot& slot, const std::source_location& where, const char* what);

  std::size_t bytes_;
  std::vector<Slot> slots_;
  Backend device_ = Backend::host;       // the device backend of the events and stream
  std::shared_ptr<Stream> copy_stream_;  // the Runtime's copy stream of device_
  unsigned long long next_ = 0;
};
[[noreturn]] void throw_staging_shape(const Shape& expected, const Shape& given);
}  // namespace detail

// One copy in flight to a pinned buffer: wait() returns the host data once it has arrived.
template <Element T>
class StagedCopy {
 public:
  // True when the copy has landed (or the buffer was reused since); never waits.
  bool ready() const { return ring_->ready(ticket_); }
  // True when the buffer was reused by a later copy.
  bool stale() const noexcept { return ring_->stale(ticket_); }
  // Waits for the copy and returns the host data (pinned memory shared with the staging
  // buffer, valid until the buffer is reused).  Error when stale.
  Array<T> result(std::source_location where = std::source_location::current()) const {
    return Array<T>::adopt(ring_->wait(ticket_, where), shape_);
  }

 private:
  template <Element>
  friend class HostStaging;
  StagedCopy(std::shared_ptr<detail::StagingRing> ring, detail::StagingRing::Ticket t, Shape shape)
      : ring_(std::move(ring)), ticket_(t), shape_(shape) {}
  std::shared_ptr<detail::StagingRing> ring_;
  detail::StagingRing::Ticket ticket_;
  Shape shape_;
};

// Pinned host buffers that device arrays are copied into asynchronously (for output while
// the next step runs).
template <Element T>
class HostStaging {
 public:
  explicit HostStaging(Shape shape, int buffers = 2)
      : shape_(shape),
        ring_(std::make_shared<detail::StagingRing>(
            static_cast<std::size_t>(shape.size()) * sizeof(T), buffers)) {}

  // Starts a copy of `array` (of the staging's shape; the element type is the staging's).
  StagedCopy<T> copy(const Array<T>& array,
                     std::source_location where = std::source_location::current()) {
    if (!(array.shape() == shape_)) detail::throw_staging_shape(shape_, array.shape());
    auto ticket = ring_->copy(array.data(), array.backend(), where,
                              detail::describe_array("HostStaging::copy", shape_, dtype_name<T>()));
    return StagedCopy<T>(ring_, ticket, shape_);
  }
  // Waits for every copy issued so far.
  void synchronize(std::source_location where = std::source_location::current()) {
    ring_->synchronize(where);
  }

  const Shape& shape() const noexcept { return shape_; }
  int buffers() const noexcept { return ring_->buffers(); }

 private:
  Shape shape_;
  std::shared_ptr<detail::StagingRing> ring_;
};

}  // namespace cunumpy
