// kernels/src/emulator/library.hpp: a library of emulated kernels and its kernels (private to
// the kernel emulator: compile.cpp makes them, engine.cpp runs them, symbols.cpp reads their
// module data).
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

// Last of a file's includes: it defines the CUDA dialect's macros (__noinline__, threadIdx, ...).
#include <cunumpy/emulator.hpp>

namespace cunumpy::detail {

// One library compiled by the host compiler: the kernels of one source (a module), its
// module-scope data.  Unloaded when its last kernel is gone.
struct EmulatedLibrary {
  ~EmulatedLibrary() {
    if (handle != nullptr) dlclose(handle);
  }
  void* handle = nullptr;
  bool from_cache = false;     // loaded from the kernel cache
  std::filesystem::path file;  // the library loaded
  // Its data symbols by name: (offset from the load address, size); read on first use.
  std::optional<std::map<std::string, std::pair<std::uint64_t, std::uint64_t>>> objects;
  std::mutex objects_mutex;
};

class EmulatedKernel {
 public:
  std::shared_ptr<EmulatedLibrary> library;
  void (*entry)(void**, const uint3*) = nullptr;  // one thread (its index)
  void (*block)(void**) = nullptr;                // every thread of a block without barriers
  void (*regions)(void**) = nullptr;  // a block of a kernel split at its barriers (or none)
  void (*set_index)(const cunumpy_emulator::Index*) = nullptr;  // the library's, before each block
  uint3 (*thread)() = nullptr;  // the calling host thread's current threadIdx
  bool barriers = false;
  std::string name;
};

// The hooks a kernel library calls (barriers, warp operations, dynamic shared memory, traps),
// handed to each library when it is loaded.
const cunumpy_emulator::Hooks& emulator_hooks() noexcept;

}  // namespace cunumpy::detail
