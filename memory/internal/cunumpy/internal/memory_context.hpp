// cunumpy/internal/memory_context.hpp: the memory layer's process state, owned by the Runtime.
//
// Library-internal.  The pools (the host cache of large blocks, the pinned staging pool) and
// the resource table the core allocates arrays from: the Runtime creates this context first
// and builds the core's context on its `resources`, so that arrays come from these pools.
#pragma once

#include <memory>

#include <cunumpy/internal/context.hpp>
#include <cunumpy/internal/core_context.hpp>

namespace cunumpy::detail {

class CachingResource;

struct MemoryContext {
  // Pools over the given system resources.
  explicit MemoryContext(const MemoryResources& system);
  MemoryContext();
  // Frees the cached (unused) blocks of both pools; blocks in use stay until released.
  void release_cached();

  std::shared_ptr<CachingResource> host_cache;
  std::shared_ptr<CachingResource> pinned_pool;
  MemoryResources resources;  // the system ones with the two pools in place
};

inline MemoryContext& memory_context() {
  return context_slot<MemoryContext>().get();
}

}  // namespace cunumpy::detail
