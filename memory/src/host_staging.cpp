// The ring behind HostStaging (host_staging.hpp).
#include <cunumpy/host_staging.hpp>

#include <cstring>
#include <string>

#include <cunumpy/errors.hpp>
#include <cunumpy/internal/core_context.hpp>
#include <cunumpy/internal/cuda_api.hpp>

namespace cunumpy::detail {

void throw_staging_shape(const Shape& expected, const Shape& given) {
  throw ValueError("HostStaging::copy: the array has shape " + given.str() +
                   ", the staging was made for " + expected.str() +
                   "; make one HostStaging per output shape");
}

StagingRing::StagingRing(std::size_t bytes, int buffers) : bytes_(bytes) {
  if (buffers < 1)
    throw ValueError("HostStaging: at least one buffer is needed, got " + std::to_string(buffers) +
                     "; 2 lets one copy run while the previous result is read");
  slots_.resize(static_cast<std::size_t>(buffers));
  for (Slot& s : slots_) s.host = allocate_block(MemoryKind::pinned, bytes_);
}

StagingRing::~StagingRing() {
  try {
    for (Slot& s : slots_)
      if (s.pending) s.copy_done->synchronize();
  } catch (...) {
  }
}

void StagingRing::ensure_device(Backend backend) {
  if (copy_stream_) {
    if (backend != device_)
      throw BackendError("HostStaging::copy: this staging copies from the " +
                         std::string(to_string(device_)) + " device; an array of the " +
                         std::string(to_string(backend)) + " device needs its own HostStaging");
    return;
  }
  device_ = backend;
  copy_stream_ = runtime_copy_stream(backend);
  for (Slot& s : slots_) {
    s.snapshot_done.emplace(backend, false);
    s.copy_done.emplace(backend, false);
  }
}

void StagingRing::wait_slot(Slot& slot, const std::source_location& where, const char* what) {
  if (!slot.pending) return;
  if (!slot.copy_done->query()) {
    event_wait(*slot.copy_done);
    record_sync(
        SyncKind::stream, [what] { return std::string(what); }, where);
  }
  slot.pending = false;
}

StagingRing::Ticket StagingRing::copy(const void* src, Backend src_backend,
                                      const std::source_location& where,
                                      const std::string& description) {
  const int index = static_cast<int>(next_ % slots_.size());
  Slot& slot = slots_[static_cast<std::size_t>(index)];
  wait_slot(slot, where, "HostStaging::copy (buffer still in use)");
  slot.generation = ++next_;
  if (src_backend == Backend::host) {
    if (bytes_ > 0) std::memcpy(slot.host->data(), src, bytes_);
    return {index, slot.generation};
  }
  ensure_device(src_backend);
  if (!slot.snapshot) slot.snapshot = allocate_block(memory_kind_of(src_backend), bytes_);
  const StreamRef compute = current_stream(src_backend);
  // The snapshot is taken in order after the kernels of the current stream; the copy stream
  // waits for it, so the next kernels may overwrite the array while the copy runs.
  copy_memory_async(slot.snapshot->data(), src_backend, src, src_backend, bytes_,
                    compute.native_handle());
  slot.snapshot_done->record(compute);
  copy_stream_->wait(*slot.snapshot_done);
  copy_memory_async(slot.host->data(), Backend::host, slot.snapshot->data(), src_backend, bytes_,
                    copy_stream_->native_handle());
  slot.copy_done->record(*copy_stream_);
  slot.pending = true;
  record_transfer(
      TransferKind::to_host, [&] { return description; }, where);
  return {index, slot.generation};
}

bool StagingRing::stale(const Ticket& t) const noexcept {
  return slots_[static_cast<std::size_t>(t.slot)].generation != t.generation;
}

bool StagingRing::ready(const Ticket& t) const {
  const Slot& slot = slots_[static_cast<std::size_t>(t.slot)];
  if (stale(t) || !slot.pending) return true;
  return slot.copy_done->query();
}

std::shared_ptr<MemoryBlock> StagingRing::wait(const Ticket& t, const std::source_location& where) {
  if (stale(t)) {
    const Slot& slot = slots_[static_cast<std::size_t>(t.slot)];
    throw Error("StagedCopy::result: the result is stale: its buffer was reused by copy " +
                std::to_string(slot.generation) + " (this was copy " +
                std::to_string(t.generation) + ", with " + std::to_string(slots_.size()) +
                " buffers); read results before " + std::to_string(slots_.size()) +
                " more copies, or give HostStaging more buffers");
  }
  wait_slot(slots_[static_cast<std::size_t>(t.slot)], where, "StagedCopy::result");
  return slots_[static_cast<std::size_t>(t.slot)].host;
}

void StagingRing::synchronize(const std::source_location& where) {
  for (Slot& s : slots_) wait_slot(s, where, "HostStaging::synchronize");
}

}  // namespace cunumpy::detail
