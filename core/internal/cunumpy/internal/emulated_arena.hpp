// runtime/src/emulated_arena.hpp: the emulated device's memory.
#pragma once

#include <cstddef>

namespace cunumpy::detail::emulated_arena {

// Page-aligned memory in mappings of its own, apart from the host heap, tracked so that
// pointers can be told apart from host memory.
void* allocate(std::size_t bytes);
void deallocate(void* p) noexcept;

}  // namespace cunumpy::detail::emulated_arena
