// cunumpy/ledger.hpp: the record of host/device transfers and synchronisations.
//
// Every transfer cunumpy makes (to_host, to_device, copy, creation from host data on a
// device) and every synchronisation (device, stream, before MPI) is reported here with the
// caller's file:line.  Active TransferCounters (<cunumpy/profiling.hpp>) receive the events;
// when no counter is active, recording costs a single relaxed load and nothing is formatted.
#pragma once

#include <source_location>
#include <string>
#include <utility>

namespace cunumpy {

// The kinds of the Python reference: a device->host copy, a host->device copy, a kernel call
// that copied device arrays to the host and back, and a host kernel run in place of a
// missing CUDA kernel; and one of ours: a copy of device data through host memory for an MPI
// that is not CUDA-aware (halo exchange, migration, mpi_buffer), which a CUDA-aware MPI
// would not make.
enum class TransferKind { to_host, to_device, kernel_conversion, fallback, mpi_staging };
inline constexpr int transfer_kind_count = 5;
std::string_view to_string(TransferKind kind) noexcept;

// One host/device transfer as the ledger records it.
struct TransferEvent {
  TransferKind kind;
  std::string description;  // e.g. "to_host(shape=(100000,), dtype=float64)"
  std::string where;        // the caller's "file:line"
};

// Waits for the whole device, for one stream, before an MPI call, for a reduction result, or
// at the edges of a timed region (timed, TimedRegion: counted apart, listed last in a report,
// so that the synchronisations a code makes itself stand out).
enum class SyncKind { device, stream, mpi, reduction, timer };
inline constexpr int sync_kind_count = 5;
std::string_view to_string(SyncKind kind) noexcept;

// One synchronisation as the ledger records it.
struct SyncEvent {
  SyncKind kind;
  std::string description;
  std::string where;
};

// "file:line" of a source location.
std::string format_location(const std::source_location& where);

namespace detail {

// Whether any TransferCounter is active: the only thing read when nothing is counted (the
// ledger is the Runtime's, see ARCHITECTURE.md).
bool counting_active() noexcept;

void record_transfer_event(TransferKind kind, std::string description,
                           const std::source_location& where);
void record_sync_event(SyncKind kind, std::string description, const std::source_location& where);

// Records a transfer; `describe` (a callable returning std::string) runs only when a counter
// is active.
template <typename Describe>
inline void record_transfer(TransferKind kind, Describe&& describe,
                            const std::source_location& where) {
  if (!counting_active()) return;
  record_transfer_event(kind, std::forward<Describe>(describe)(), where);
}

template <typename Describe>
inline void record_sync(SyncKind kind, Describe&& describe, const std::source_location& where) {
  if (!counting_active()) return;
  record_sync_event(kind, std::forward<Describe>(describe)(), where);
}

}  // namespace detail
}  // namespace cunumpy
