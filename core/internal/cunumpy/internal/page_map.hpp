// Mappings of their own for large blocks, backed by transparent huge pages where the kernel
// allows them: the host memory resource and the emulated device's arena use them.
#pragma once

#include <cstddef>

namespace cunumpy::detail {

// Blocks from this size on get a mapping of their own.
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;

// A 2 MiB-aligned mapping of huge_length(bytes) bytes with MADV_HUGEPAGE advice; nullptr when
// the system has no memory for it.  Release it with munmap(p, huge_length(bytes)).
void* map_huge(std::size_t bytes);
std::size_t huge_length(std::size_t bytes) noexcept;

}  // namespace cunumpy::detail
