// The ring behind HostStaging (host_staging.hpp).
#include <cunumpy/host_staging.hpp>

#include <cstring>
#include <string>

#include <cunumpy/errors.hpp>

namespace cunumpy::detail {

void throw_staging_shape(const Shape& expected, const Shape& given) {
  throw ValueError("HostStaging::copy: the array has shape " + given.str() + ", the staging was made for " +
                   expected.str() + "; make one HostStaging per output shape");
}

StagingRing::StagingRing(std::size_t bytes, int buffers) : bytes_(bytes) {
  if (buffers < 1)
    throw ValueError("HostStaging: at least one buffer is needed, got " + std::to_string(buffers) +
                     "; 2 lets one copy run while the previous result is read");
  slots_.resize(static_cast<std::size_t>(buffers));
  for (Slot& s : slots_) s.host = pinned_allocate(bytes_);
}

StagingRing::~StagingRing() {
  try {
    for (Slot& s : slots_)
      if (s.pending) event_synchronize(device_, s.copy_done);
  } catch (...) {
  }
  for (Slot& s : slots_) {
    event_destroy(device_, s.snapshot_done);
    event_destroy(device_, s.copy_done);
  }
  stream_destroy(device_, copy_stream_);
}

void StagingRing::ensure_device(Backend backend) {
  if (copy_stream_ != nullptr) {
    if (backend != device_)
      throw BackendError("HostStaging::copy: this staging copies from the " + std::string(to_string(device_)) +
                         " device; an array of the " + std::string(to_string(backend)) +
                         " device needs its own HostStaging");
    return;
  }
  device_ = backend;
  copy_stream_ = stream_create(backend);
  for (Slot& s : slots_) {
    s.snapshot_done = event_create(backend);
    s.copy_done = event_create(backend);
  }
}

void StagingRing::wait_slot(Slot& slot, const std::source_location& where, const char* what) {
  if (!slot.pending) return;
  if (!event_query(device_, slot.copy_done)) {
    event_synchronize(device_, slot.copy_done);
    record_sync(SyncKind::stream, [what] { return std::string(what); }, where);
  }
  slot.pending = false;
}

StagingRing::Ticket StagingRing::copy(const void* src, Backend src_backend, const std::source_location& where,
                                      const std::string& description) {
  const int index = static_cast<int>(next_ % slots_.size());
  Slot& slot = slots_[static_cast<std::size_t>(index)];
  wait_slot(slot, where, "HostStaging::copy (buffer still in use)");
  slot.generation = ++next_;
  if (src_backend == Backend::host) {
    if (bytes_ > 0) std::memcpy(slot.host->ptr, src, bytes_);
    return {index, slot.generation};
  }
  ensure_device(src_backend);
  if (src_backend == Backend::emulated) {
    // The emulated device completes work as it is issued: the copy lands now, so the array
    // may be overwritten right after and no snapshot is needed.
    copy_memory(slot.host->ptr, Backend::host, src, src_backend, bytes_);
    record_transfer(TransferKind::to_host, [&] { return description; }, where);
    return {index, slot.generation};
  }
  if (!slot.snapshot) slot.snapshot = allocate(src_backend, bytes_);
  void* compute = current_stream();
  // The snapshot is taken in order after the kernels of the current stream; the copy stream
  // waits for it, so the next kernels may overwrite the array while the copy runs.
  copy_memory_async(slot.snapshot->ptr, src_backend, src, src_backend, bytes_, compute);
  event_record(src_backend, slot.snapshot_done, compute);
  stream_wait_event(src_backend, copy_stream_, slot.snapshot_done);
  copy_memory_async(slot.host->ptr, Backend::host, slot.snapshot->ptr, src_backend, bytes_, copy_stream_);
  event_record(src_backend, slot.copy_done, copy_stream_);
  slot.pending = true;
  record_transfer(TransferKind::to_host, [&] { return description; }, where);
  return {index, slot.generation};
}

bool StagingRing::stale(const Ticket& t) const noexcept {
  return slots_[static_cast<std::size_t>(t.slot)].generation != t.generation;
}

bool StagingRing::ready(const Ticket& t) const {
  const Slot& slot = slots_[static_cast<std::size_t>(t.slot)];
  if (stale(t) || !slot.pending) return true;
  return event_query(device_, slot.copy_done);
}

std::shared_ptr<Allocation> StagingRing::wait(const Ticket& t, const std::source_location& where) {
  if (stale(t)) {
    const Slot& slot = slots_[static_cast<std::size_t>(t.slot)];
    throw Error("StagedCopy::result: the result is stale: its buffer was reused by copy " +
                std::to_string(slot.generation) + " (this was copy " + std::to_string(t.generation) + ", with " +
                std::to_string(slots_.size()) + " buffers); read results before " + std::to_string(slots_.size()) +
                " more copies, or give HostStaging more buffers");
  }
  wait_slot(slots_[static_cast<std::size_t>(t.slot)], where, "StagedCopy::result");
  return slots_[static_cast<std::size_t>(t.slot)].host;
}

void StagingRing::synchronize(const std::source_location& where) {
  for (Slot& s : slots_) wait_slot(s, where, "HostStaging::synchronize");
}

}  // namespace cunumpy::detail
