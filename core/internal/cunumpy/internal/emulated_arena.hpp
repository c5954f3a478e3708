// core/internal/cunumpy/internal/emulated_arena.hpp: the emulated device's memory.
#pragma once

#include <atomic>
#include <cstddef>

namespace cunumpy::detail::emulated_arena {

// Page-aligned memory in mappings of its own, apart from the host heap, tracked so that
// pointers can be told apart from host memory.  In debug mode (below) an allocation ends
// where an inaccessible guard page begins, its start aligned to 16 bytes: a kernel that reads
// or writes past its end faults there (the kernel emulator reports it).
void* allocate(std::size_t bytes);
void deallocate(void* p) noexcept;

// CUDA debug mode (the kernel layer's set_cuda_debug and cuda_debug(), CUNUMPY_CUDA_DEBUG at
// start), kept here so that the emulated device's allocations follow it: the process default
// and the calling thread's innermost scope (nullptr: none).
std::atomic<bool>& debug_default() noexcept;
bool*& debug_scope() noexcept;
bool debug_now() noexcept;

// Allocations made with a guard page, ever (the emulator installs its fault handler once
// there is one).
bool any_guarded() noexcept;
// The allocation whose guard page holds `address`: its start and size; false for any other.
bool guarded_by(const void* address, const void*& start, std::size_t& bytes) noexcept;

}  // namespace cunumpy::detail::emulated_arena
