// kernels/src/cuda_emulator.hpp: the kernel emulator's engine (private to the kernels layer).
//
// A CudaKernel's (or CudaModule's) source is compiled as C++ by the host compiler into one
// shared library (cached like NVRTC's output, the compiler's identity in the key), with
// <cunumpy/emulator.hpp> for the CUDA built-ins and, per kernel, entries that unpack the
// launch's argument buffer.  A launch runs every
// block of the grid, blocks spread over host threads; a block's threads run as fibers
// (Boost.Context) that meet at each __syncthreads, or as a plain loop when the kernel has no
// barrier.  A barrier that not every thread reaches is an error naming the block and the
// threads; exceptions (a trap, a bounds check) end the launch and reach the caller.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <cunumpy/atomic_counter.hpp>
#include <cunumpy/cuda_kernel.hpp>

#include "compile_request.hpp"

namespace cunumpy::detail {

class EmulatedKernel;

// Compiles (through the cache) and loads the library of the source's kernels, one per
// expression in that order (sharing the library and its module data); CompileError with the
// compiler's output.
std::vector<std::shared_ptr<EmulatedKernel>> emulate_compile(const CompileRequest& request);

// Whether the kernel was loaded from the kernel cache.
bool from_cache(const EmulatedKernel& kernel) noexcept;
// "loop", "regions" or "fibers": how the engine runs a block of the kernel.
std::string emulated_as(const EmulatedKernel& kernel);
// Whether NVRTC fuses a * b + c into one fma with these options (the emulator follows it).
bool fuses_multiply_add(const std::vector<std::string>& options);

// The address and size of a module-scope variable (a __constant__ or __device__ variable at
// global namespace scope) of the kernel's library (shared by the kernels of its module), found in
// its symbol table; nullptr when it has none of that name.
void* emulated_global(EmulatedKernel& kernel, std::string_view name, std::size_t* bytes);

// The atomic counters alive in the calling thread (cunumpy::count_atomics), for a launch to
// count in: captured when it is launched, added to when it ran.
using AtomicCounters = std::vector<std::shared_ptr<AtomicCounter::State>>;
AtomicCounters atomic_counters_now();

// Runs the kernel over the grid with the packed arguments; synchronous.  Its atomics are added
// to `counters`.
void emulate_launch(EmulatedKernel& kernel, const Dim3& grid, const Dim3& block, void** args,
                    std::size_t shared_mem, const AtomicCounters& counters = {});

}  // namespace cunumpy::detail
