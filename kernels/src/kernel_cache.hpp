// kernels/src/kernel_cache.hpp: the on-disk cache of compiled kernels, one for both compilers
// (NVRTC's CUBIN and the kernel emulator's shared libraries; private to the kernels layer).
//
// An entry is its payload followed by a fixed 128-byte trailer: a magic word, the payload's
// size and its SHA-256.  An entry whose trailer does not match its bytes (truncated by a kill,
// corrupted, another format) is never used: it is counted as rejected, compiled again and
// rewritten.  The payload comes first so an emulator entry is still a shared library dlopen
// can load (the loader reads the program headers and ignores bytes after the sections).
// Entries are written through write_file_atomically: readers, and other processes writing the
// same entry, see either no entry or a whole one.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace cunumpy::detail {

// The configured cache folder: CUNUMPY_KERNEL_CACHE, else $XDG_CACHE_HOME/cunumpy/kernels, else
// ~/.cache/cunumpy/kernels; empty when CUNUMPY_KERNEL_CACHE=off.
std::filesystem::path kernel_cache_dir();

// Where entries go now: kernel_cache_dir() when it can be created and written; else, said once
// on stderr, a private temporary folder of this process (created on first use, 0700).  Empty
// when the cache is off.
std::filesystem::path usable_cache_dir();

// A private temporary folder of this process (created on first use, 0700), for compilations'
// own files and for the cache's stand-in.
std::filesystem::path private_temp_dir();

// The entry's payload when `path` holds a whole entry; nullopt when it does not exist (a miss)
// or is damaged (rejected).  Counts the hit, miss or rejection.
std::optional<std::string> read_cache_entry(const std::filesystem::path& path);

// Writes payload + trailer at `path` atomically; on failure says once on stderr that kernels
// are compiled every run and returns false.
bool write_cache_entry(const std::filesystem::path& path, std::string_view payload);

// An entry's whole bytes for a payload (what write_cache_entry writes).
std::string cache_entry_bytes(std::string_view payload);

enum class Compiler { nvrtc, host };
void count_compilation(Compiler which) noexcept;

}  // namespace cunumpy::detail
