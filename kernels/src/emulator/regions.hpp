// kernels/src/emulator/regions.hpp: kernels split at their barriers and warp operations, so
// that the emulator runs each region between two as a loop over the block's threads (private to
// the kernel emulator).
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>

namespace cunumpy::detail {

// `source` (the kernel's own file, as the emulator compiles it) with the bodies of the kernels
// named in `kernels` rewritten into regions where the rewriting applies (`split` receives
// their names); the others left as they are, to run as fibers.  `synchronises` tells whether a
// name may synchronise (barriers.cpp's search); `source_name` is the file's name for the #line
// that follows each rewritten body.
std::string split_into_regions(std::string_view source, const std::set<std::string>& kernels,
                               const std::function<bool(std::string_view)>& synchronises,
                               const std::string& source_name, std::set<std::string>& split);

}  // namespace cunumpy::detail
