// kernels/src/emulator/barriers.hpp: which kernels of a source need their threads as fibers
// (private to the kernel emulator).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace cunumpy::detail {

// For each kernel (a name expression: "push", "times<double, 3>"), whether it may reach a
// barrier or a warp operation: its body, or a function or macro it names (directly or through
// others, in the source, the included headers' texts or the -D options), holds one.  True
// wherever the search cannot tell and the source synchronises anywhere.
// `synchronising`, when given, receives the names of the functions and macros that may
// synchronise (see synchronises).
std::vector<bool> kernels_with_barriers(std::string_view source,
                                        const std::vector<std::string>& headers,
                                        const std::vector<std::string>& options,
                                        const std::vector<std::string>& kernels,
                                        std::set<std::string>* synchronising = nullptr);

// A kernel's own name in a name expression: "times<double, 3>" -> times, "ns::push" -> push.
std::string kernel_name(std::string_view expression);

// Whether a name a kernel's body uses may synchronise: a barrier or warp operation itself, or a
// function or macro of `synchronising` (kernels_with_barriers).
bool synchronises(std::string_view name, const std::set<std::string>& synchronising);

}  // namespace cunumpy::detail
