// cunumpy/memory_block.hpp: the memory behind arrays, and where it comes from.
//
//   auto block = cunumpy::allocate_block(cunumpy::MemoryKind::pinned, bytes);
//   auto staging = cunumpy::Array<double>::adopt(block, {n});   // a pinned host array
//
// A MemoryBlock is one allocation of one MemoryKind; it returns itself to the resource that
// made it when the last Array (or other owner) lets it go, and keeps that resource alive
// until then.  The resources are the Runtime's: the memory layer's pools (the host cache of
// large blocks, the pinned pool) on top of the system allocators.
#pragma once

#include <cstddef>
#include <memory>

#include <cunumpy/backend.hpp>
#include <cunumpy/dtype.hpp>

namespace cunumpy {

// host: pageable host memory; pinned: page-locked host memory for staging; cuda: device
// memory of the CUDA device; emulated: the emulated device's arena.
enum class MemoryKind { host, pinned, cuda, emulated };
inline constexpr int memory_kind_count = 4;

// The kind of memory arrays of `backend` are made of.
constexpr MemoryKind memory_kind_of(Backend backend) noexcept {
  return backend == Backend::cuda       ? MemoryKind::cuda
         : backend == Backend::emulated ? MemoryKind::emulated
                                        : MemoryKind::host;
}
// The backend whose memory a kind is (pinned memory is host memory).
constexpr Backend backend_of(MemoryKind kind) noexcept {
  return kind == MemoryKind::cuda       ? Backend::cuda
         : kind == MemoryKind::emulated ? Backend::emulated
                                        : Backend::host;
}

// A source of raw memory of one kind.  allocate() throws on failure; deallocate() takes what
// allocate() gave, with the same byte count.
class MemoryResource {
 public:
  virtual ~MemoryResource() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p, std::size_t bytes) noexcept = 0;
};

// Bytes from a MemoryResource, returned to it when the last owner lets go (arrays share it).
class MemoryBlock {
 public:
  // `bytes` from `resource` (a valid, empty block for 0 bytes).
  MemoryBlock(std::shared_ptr<MemoryResource> resource, std::size_t bytes, MemoryKind kind);
  // Memory that someone else owns, wrapped without copying and never freed here.
  MemoryBlock(void* borrowed, std::size_t bytes, MemoryKind kind) noexcept
      : ptr_(borrowed), bytes_(bytes), kind_(kind) {}
  ~MemoryBlock();
  MemoryBlock(const MemoryBlock&) = delete;
  MemoryBlock& operator=(const MemoryBlock&) = delete;

  void* data() const noexcept { return ptr_; }
  std::size_t bytes() const noexcept { return bytes_; }
  MemoryKind kind() const noexcept { return kind_; }
  Backend backend() const noexcept { return backend_of(kind_); }
  bool pinned() const noexcept { return kind_ == MemoryKind::pinned; }
  bool owned() const noexcept { return resource_ != nullptr; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  MemoryKind kind_;
  std::shared_ptr<MemoryResource> resource_;
};

// `bytes` of `kind` from the Runtime's resources.  BackendError for cuda memory without a
// usable device (and for pinned memory without CUDA only when it is used for a transfer:
// without a device it is aligned host memory); ValueError for an impossible size.
std::shared_ptr<MemoryBlock> allocate_block(MemoryKind kind, std::size_t bytes);
// Someone else's memory (e.g. a buffer of another library) as a block, never freed here.
std::shared_ptr<MemoryBlock> borrow_block(void* ptr, std::size_t bytes, MemoryKind kind);

namespace detail {
// Copies bytes between memory of any two backends, synchronously with respect to the host
// (a device->host copy has landed when it returns); on cuda on the current stream.
void copy_memory(void* dst, Backend dst_backend, const void* src, Backend src_backend,
                 std::size_t bytes);
// The same, asynchronous on `stream` (a cudaStream_t) on cuda; completes at once elsewhere.
void copy_memory_async(void* dst, Backend dst_backend, const void* src, Backend src_backend,
                       std::size_t bytes, void* stream);

// Device-side fills of cuda memory (host and emulated memory are filled in place by the
// templates of array.hpp).  `value`, `start` and `step` point to one element of `dtype`.
void cuda_fill(void* dst, DType dtype, long long count, const void* value);
void cuda_arange(void* dst, DType dtype, long long count, const void* start, const void* step);
void cuda_linspace(void* dst, DType dtype, long long count, double start, double step,
                   bool endpoint, double stop);

// Whether `p` points into the emulated device arena (an allocation or one past its end), and
// what the arena holds now.
bool emulated_arena_contains(const void* p) noexcept;
std::size_t emulated_arena_bytes() noexcept;
std::size_t emulated_arena_allocations() noexcept;
}  // namespace detail

}  // namespace cunumpy
