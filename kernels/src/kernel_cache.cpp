// The on-disk cache of compiled kernels, shared by NVRTC and the kernel emulator
// (kernel_cache.hpp).
#include "kernel_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cuda_signature.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/files.hpp>

#include "compile_request.hpp"
#include "cuda_source.hpp"

namespace cunumpy {
namespace detail {
namespace {

std::atomic<long long> g_hits{0}, g_misses{0}, g_rejected{0}, g_nvrtc{0}, g_host{0};

// The trailer: magic (16), the payload's size in 20 decimal digits, a space, the SHA-256 in 64
// hex digits, padding to 128 bytes, a newline.
constexpr std::string_view kMagic = "CUNUMPY-ENTRY-2 ";
constexpr std::size_t kTrailer = 128;

std::string trailer(std::string_view payload) {
  char size[32];
  std::snprintf(size, sizeof size, "%020zu ", payload.size());
  std::string t(kMagic);
  t += size;
  t += sha256_hex(payload);
  t.resize(kTrailer - 1, ' ');
  t += '\n';
  return t;
}

void warn_once(std::once_flag& flag, const std::string& text) {
  std::call_once(flag, [&] { std::fprintf(stderr, "cunumpy: warning: %s\n", text.c_str()); });
}

// Whether a file can be created in `dir` (created first when missing).  Permission bits are not
// enough: root passes them, and read-only file systems ignore them.
bool writable(const std::filesystem::path& dir, std::string& why) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    why = ec.message();
    return false;
  }
  std::string probe = (dir / ".cunumpy-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    why = std::strerror(errno);
    return false;
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

}  // namespace

std::filesystem::path kernel_cache_dir() {
  if (const char* env = std::getenv("CUNUMPY_KERNEL_CACHE"); env != nullptr && *env != '\0') {
    if (std::string_view(env) == "off") return {};
    return env;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return std::filesystem::path(xdg) / "cunumpy" / "kernels";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::filesystem::path(home) / ".cache" / "cunumpy" / "kernels";
  return std::filesystem::temp_directory_path() / "cunumpy-kernels";
}

std::filesystem::path private_temp_dir() {
  static std::mutex m;
  static std::filesystem::path dir;
  std::lock_guard lock(m);
  if (dir.empty()) {
    std::string pattern = (std::filesystem::temp_directory_path() / "cunumpy-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw Error("cunumpy: cannot create a temporary folder in " +
                  std::filesystem::temp_directory_path().string() + ": " + std::strerror(errno) +
                  "; set TMPDIR to a writable folder");
    dir = pattern;
  }
  return dir;
}

std::filesystem::path usable_cache_dir() {
  const std::filesystem::path dir = kernel_cache_dir();
  if (dir.empty()) return {};
  // Decided once per folder (the environment may name another one later).
  static std::mutex m;
  static std::filesystem::path checked, use;
  std::lock_guard lock(m);
  if (dir != checked) {
    std::string why;
    use = dir;
    if (!writable(dir, why)) {
      use = private_temp_dir() / "kernels";
      std::error_code ec;
      std::filesystem::create_directories(use, ec);
      static std::once_flag said;
      warn_once(said, "the kernel cache folder " + dir.string() + " cannot be written (" + why +
                          "); compiled kernels are kept in " + use.string() +
                          " for this process only (set CUNUMPY_KERNEL_CACHE to a writable "
                          "folder)");
    }
    checked = dir;
  }
  return use;
}

std::string cache_entry_bytes(std::string_view payload) {
  std::string all(payload);
  all += trailer(payload);
  return all;
}

std::optional<std::string> read_cache_entry(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ++g_misses;
    return std::nullopt;
  }
  std::ostringstream s;
  s << in.rdbuf();
  std::string all = s.str();
  if (all.size() >= kTrailer) {
    std::string payload = all.substr(0, all.size() - kTrailer);
    if (std::string_view(all).substr(payload.size()) == trailer(payload)) {
      ++g_hits;
      return payload;
    }
  }
  ++g_rejected;  // truncated, corrupted or of another format: compiled again and rewritten
  ++g_misses;
  return std::nullopt;
}

bool write_cache_entry(const std::filesystem::path& path, std::string_view payload) {
  try {
    write_file_atomically(path, cache_entry_bytes(payload));
    return true;
  } catch (const std::exception& e) {
    static std::once_flag said;
    warn_once(said, std::string("cannot write the kernel cache (") + e.what() +
                        "); kernels are compiled every run (set CUNUMPY_KERNEL_CACHE to a "
                        "writable folder)");
    return false;
  }
}

void count_compilation(Compiler which) noexcept {
  ++(which == Compiler::nvrtc ? g_nvrtc : g_host);
}

std::vector<std::string> append_key_inputs(std::string& text, const CompileRequest& r,
                                           std::span<const std::string> options) {
  for (const std::string& e : r.expressions) {
    text += "expression ";
    text += e;
    text += '\n';
  }
  for (const std::string& o : options) {
    text += "option ";
    text += o;
    text += '\n';
  }
  text += "source " + std::to_string(r.source.size()) + "\n";
  text += r.source;
  std::vector<std::string> headers;
  headers.reserve(r.headers.size());
  for (const auto& h : r.headers) {
    const std::string& contents = headers.emplace_back(read_file(h));
    text += "\nheader " + std::to_string(contents.size()) + "\n";
    text += contents;
  }
  return headers;
}

}  // namespace detail

KernelCacheStats kernel_cache_stats() noexcept {
  return {detail::g_hits.load(), detail::g_misses.load(), detail::g_rejected.load(),
          detail::g_nvrtc.load(), detail::g_host.load()};
}

}  // namespace cunumpy
