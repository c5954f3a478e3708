// cunumpy/internal/core_context.hpp: the core's process state, owned by the Runtime.
//
// Library-internal.  The memory resources that arrays are allocated from (the system ones
// here; the Runtime installs the memory layer's pools in their place) and the ledger of
// active TransferCounters.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <cunumpy/internal/context.hpp>
#include <cunumpy/memory_block.hpp>
#include <cunumpy/stream.hpp>

namespace cunumpy {
class TransferCounter;
}

namespace cunumpy::detail {

// One resource per MemoryKind.
using MemoryResources = std::array<std::shared_ptr<MemoryResource>, memory_kind_count>;

// The resources of the system, without pools: 64-byte aligned host memory (large blocks in
// mappings of their own, with transparent huge pages), page-locked host memory
// (cudaHostAlloc, or aligned host memory without CUDA), the device's stream-ordered pool
// (cudaMallocAsync) and the emulated device's arena.
MemoryResources system_resources();

// The transfer/sync ledger: the active counters receive every recorded event.
struct Ledger {
  std::atomic<int> active{0};
  std::mutex mutex;
  std::vector<TransferCounter*> counters;
};

struct CoreContext {
  explicit CoreContext(MemoryResources r = system_resources()) : resources(std::move(r)) {}
  MemoryResources resources;
  Ledger ledger;
  // The Runtime's copy streams, one per device backend, created on first use.
  std::mutex stream_mutex;
  std::array<std::shared_ptr<Stream>, 3> copy_streams;
};

// The Runtime's copy stream of a device backend (created now if needed); shared by its users.
std::shared_ptr<Stream> runtime_copy_stream(Backend backend);
// Synchronises and lets go of the Runtime's streams (a user still holding one keeps it).
void release_runtime_streams();

inline CoreContext& core_context() {
  return context_slot<CoreContext>().get();
}

}  // namespace cunumpy::detail
