// MemoryBlock, the system memory resources and the copies between backends (memory_block.hpp).
#include <cunumpy/memory_block.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

#include <sys/mman.h>

#include <cunumpy/arithmetic.cuh>
#include <cunumpy/errors.hpp>
#include <cunumpy/internal/core_context.hpp>
#include <cunumpy/internal/cuda_api.hpp>
#include <cunumpy/internal/emulated_arena.hpp>
#include <cunumpy/internal/page_map.hpp>
#include <cunumpy/stream.hpp>

namespace cunumpy {
namespace detail {
// Large blocks are mapped rather than taken from malloc so that the huge-page advice never
// reaches the malloc heap, whose top is trimmed and regrown as small blocks come and go; a
// sort or a gather over arrays of many megabytes then takes one TLB entry per 2 MiB.
std::size_t huge_length(std::size_t bytes) noexcept {
  return round_up(bytes, kHugePage);
}

void* map_huge(std::size_t bytes) {
  const std::size_t length = huge_length(bytes);
  // One extra huge page of address space, so that a 2 MiB-aligned start can be cut out of it.
  void* raw =
      mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = round_up(start, std::uintptr_t{kHugePage});
  if (aligned > start) munmap(raw, aligned - start);
  const std::uintptr_t tail = start + length + kHugePage - (aligned + length);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + length), tail);
  void* p = reinterpret_cast<void*>(aligned);
  (void)madvise(p, length, MADV_HUGEPAGE);  // advice only: without THP the block is plain pages
  return p;
}

namespace {

constexpr std::size_t kHostAlignment = 64;

class SystemHost final : public MemoryResource {
 public:
  void* allocate(std::size_t bytes) override {
    void* p = bytes >= kHugePage
                  ? map_huge(bytes)
                  : std::aligned_alloc(kHostAlignment,
                                       round_up(std::max<std::size_t>(bytes, 1), kHostAlignment));
    if (p == nullptr)
      throw ValueError("host allocation of " + std::to_string(bytes) +
                       " bytes failed; reduce the problem size or free arrays");
    return p;
  }
  void deallocate(void* p, std::size_t bytes) noexcept override {
    if (bytes >= kHugePage)
      munmap(p, huge_length(bytes));
    else
      std::free(p);
  }
};

// Page-locked with cudaHostAlloc when a device is usable; aligned host memory otherwise (the
// emulated device's staging behaves the same).
class SystemPinned final : public MemoryResource {
 public:
  void* allocate(std::size_t bytes) override {
    return with_cuda_ ? cuda_api::host_allocate(std::max<std::size_t>(bytes, 1))
                      : host_.allocate(bytes);
  }
  void deallocate(void* p, std::size_t bytes) noexcept override {
    if (with_cuda_)
      cuda_api::host_free(p);
    else
      host_.deallocate(p, bytes);
  }

 private:
  bool with_cuda_ = cuda_api::built_with_cuda() && cuda_available();
  SystemHost host_;
};

// The device's stream-ordered pool, in the order of the current stream.
class SystemCuda final : public MemoryResource {
 public:
  void* allocate(std::size_t bytes) override {
    if (!cuda_available())
      throw BackendError("allocation on the cuda backend: CUDA is unavailable (" +
                         cuda_unavailable_reason() +
                         "); use Backend::host or CUNUMPY_BACKEND=emulated");
    return cuda_api::allocate(bytes);
  }
  void deallocate(void* p, std::size_t) noexcept override { cuda_api::deallocate(p); }
};

class EmulatedArena final : public MemoryResource {
 public:
  void* allocate(std::size_t bytes) override { return emulated_arena::allocate(bytes); }
  void deallocate(void* p, std::size_t) noexcept override { emulated_arena::deallocate(p); }
};

// The CUDA copy kind of a transfer in which at least one side is on cuda.
cuda_api::Direction direction(Backend dst_backend, Backend src_backend) {
  using cuda_api::Direction;
  return src_backend != Backend::cuda   ? Direction::host_to_device
         : dst_backend != Backend::cuda ? Direction::device_to_host
                                        : Direction::device_to_device;
}

}  // namespace

MemoryResources system_resources() {
  MemoryResources r;
  r[static_cast<int>(MemoryKind::host)] = std::make_shared<SystemHost>();
  r[static_cast<int>(MemoryKind::pinned)] = std::make_shared<SystemPinned>();
  r[static_cast<int>(MemoryKind::cuda)] = std::make_shared<SystemCuda>();
  r[static_cast<int>(MemoryKind::emulated)] = std::make_shared<EmulatedArena>();
  return r;
}

void copy_memory(void* dst, Backend dst_backend, const void* src, Backend src_backend,
                 std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_backend != Backend::cuda && src_backend != Backend::cuda) {
    // Host and emulated memory are both host-addressable; in order after the current stream.
    if (dst_backend == Backend::emulated || src_backend == Backend::emulated)
      emulated_drain(current_stream(Backend::emulated));
    std::memcpy(dst, src, bytes);
    return;
  }
  cuda_api::copy(dst, src, bytes, direction(dst_backend, src_backend),
                 current_stream(Backend::cuda).native_handle());
}

void copy_memory_async(void* dst, Backend dst_backend, const void* src, Backend src_backend,
                       std::size_t bytes, void* stream) {
  if (bytes == 0) return;
  if (dst_backend != Backend::cuda && src_backend != Backend::cuda) {
    // On the emulated device the copy is queued on the stream's worker.
    std::function<void()> work = [dst, src, bytes] { std::memcpy(dst, src, bytes); };
    const StreamRef on(Backend::emulated, stream);
    if (!emulated_enqueue(on, work)) work();
    return;
  }
  cuda_api::copy_async(dst, src, bytes, direction(dst_backend, src_backend), stream);
}

}  // namespace detail

MemoryBlock::MemoryBlock(std::shared_ptr<MemoryResource> resource, std::size_t bytes,
                         MemoryKind kind)
    : bytes_(bytes), kind_(kind) {
  ptr_ = resource->allocate(bytes);
  resource_ = std::move(resource);
}

MemoryBlock::~MemoryBlock() {
  if (resource_) resource_->deallocate(ptr_, bytes_);
}

std::shared_ptr<MemoryBlock> allocate_block(MemoryKind kind, std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(std::numeric_limits<long long>::max()))
    throw ValueError("allocation of " + std::to_string(bytes) + " bytes is too large");
  return std::make_shared<MemoryBlock>(detail::core_context().resources[static_cast<int>(kind)],
                                       bytes, kind);
}

std::shared_ptr<MemoryBlock> borrow_block(void* ptr, std::size_t bytes, MemoryKind kind) {
  return std::make_shared<MemoryBlock>(ptr, bytes, kind);
}

}  // namespace cunumpy
