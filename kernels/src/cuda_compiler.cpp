// NVRTC loaded at first use, and the on-disk cache of compiled kernels (cuda_compiler.hpp).
//
// NVRTC is opened with dlopen when the first kernel is compiled, so a program that never
// compiles one starts on a machine without NVRTC, and one that does gets an error naming the
// libraries it tried.  Only NVRTC's C API is used, declared here with its ABI (opaque program
// handles, int results), so the kernels layer builds without the CUDA toolkit too.
#include "cuda_compiler.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include <cunumpy/backend.hpp>
#include <cunumpy/build_config.hpp>
#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cuda_signature.hpp>
#include <cunumpy/errors.hpp>

#include "cuda_source.hpp"
#include "kernel_cache.hpp"

namespace cunumpy {
namespace detail {
namespace {

using Program = void*;

struct Nvrtc {
  int (*version)(int*, int*) = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*create)(Program*, const char*, const char*, int, const char* const*,
                const char* const*) = nullptr;
  int (*destroy)(Program*) = nullptr;
  int (*compile)(Program, int, const char* const*) = nullptr;
  int (*log_size)(Program, std::size_t*) = nullptr;
  int (*log)(Program, char*) = nullptr;
  int (*cubin_size)(Program, std::size_t*) = nullptr;
  int (*cubin)(Program, char*) = nullptr;
  int (*add_name)(Program, const char*) = nullptr;
  int (*lowered_name)(Program, const char*, const char**) = nullptr;
  std::string library;
  int numeric_version = 0;
};

const Nvrtc& nvrtc() {
  static const Nvrtc loaded = [] {
    Nvrtc n;
    // CUNUMPY_NVRTC names the library to use (and only it); else the usual names, on the
    // loader's path and in the toolkit cunumpy was configured with.
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("CUNUMPY_NVRTC"); env != nullptr && *env != '\0') {
      candidates.emplace_back(env);
    } else {
      for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) {
        candidates.emplace_back(name);
        candidates.emplace_back(std::string(CUNUMPY_CUDA_LIBRARY_DIR) + "/" + name);
      }
    }
    void* handle = nullptr;
    std::string tried;
    for (const std::string& c : candidates) {
      handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) {
        n.library = c;
        break;
      }
      tried += "\n  " + c + ": " + dlerror();
    }
    if (handle == nullptr)
      throw BackendError(
          "CudaKernel: NVRTC (the CUDA run-time compiler) cannot be loaded; tried:" + tried +
          "\ninstall the CUDA toolkit's NVRTC (libnvrtc), add its folder to LD_LIBRARY_PATH, or "
          "set "
          "CUNUMPY_NVRTC to the library's path");
    auto sym = [&](auto& f, const char* name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(handle, name));
      if (f == nullptr)
        throw BackendError("CudaKernel: " + n.library + " has no " + name +
                           "; install NVRTC 12 or newer");
    };
    sym(n.version, "nvrtcVersion");
    sym(n.error_string, "nvrtcGetErrorString");
    sym(n.create, "nvrtcCreateProgram");
    sym(n.destroy, "nvrtcDestroyProgram");
    sym(n.compile, "nvrtcCompileProgram");
    sym(n.log_size, "nvrtcGetProgramLogSize");
    sym(n.log, "nvrtcGetProgramLog");
    sym(n.cubin_size, "nvrtcGetCUBINSize");
    sym(n.cubin, "nvrtcGetCUBIN");
    sym(n.add_name, "nvrtcAddNameExpression");
    sym(n.lowered_name, "nvrtcGetLoweredName");
    int major = 0, minor = 0;
    n.version(&major, &minor);
    n.numeric_version = 1000 * major + 10 * minor;
    return n;
  }();
  return loaded;
}

void check(const Nvrtc& n, int result, const char* call) {
  if (result != 0)
    throw CompileError(std::string("CudaKernel: ") + call + " failed: " + n.error_string(result));
}

// An entry's payload: the lowered names, each followed by a newline but the last (a lowered
// name is an identifier), a NUL, the CUBIN.
std::string encode_entry(const CompiledCode& code) {
  std::string out;
  for (const std::string& n : code.lowered_names) {
    if (!out.empty()) out += '\n';
    out += n;
  }
  out += '\0';
  out += code.cubin;
  return out;
}
std::optional<CompiledCode> decode_entry(const std::string& payload, std::size_t kernels) {
  const std::size_t nul = payload.find('\0');
  if (nul == std::string::npos || nul + 1 >= payload.size()) return std::nullopt;
  CompiledCode code;
  for (std::size_t at = 0; at <= nul;) {
    std::size_t end = payload.find('\n', at);
    if (end == std::string::npos || end > nul) end = nul;
    code.lowered_names.push_back(payload.substr(at, end - at));
    at = end + 1;
  }
  if (code.lowered_names.size() != kernels) return std::nullopt;
  code.cubin = payload.substr(nul + 1);
  code.from_cache = true;
  return code;
}

}  // namespace

std::filesystem::path toolkit_include_dir() {
  return CUNUMPY_CUDA_INCLUDE_DIR;
}

const std::string& toolkit_identity() {
  static const std::string id = [] {
    std::ifstream in(std::filesystem::path(CUNUMPY_CUDA_INCLUDE_DIR) / "cuda.h");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("#define CUDA_VERSION ", 0) == 0) return line;
    return std::string("no cuda.h");
  }();
  return id;
}

int nvrtc_version() {
  return nvrtc().numeric_version;
}

std::string cache_key(const CompileRequest& r) {
  std::string text = "cunumpy " CUNUMPY_VERSION_STRING "\nnvrtc " +
                     std::to_string(nvrtc_version()) + "\ntoolkit " + toolkit_identity() +
                     "\narch " + r.arch + "\n";
  append_key_inputs(text, r, r.options);
  return sha256_hex(text);
}

CompiledCode compile_cuda(const CompileRequest& r) {
  const Nvrtc& n = nvrtc();
  const std::string key = cache_key(r);
  const std::filesystem::path dir = usable_cache_dir();
  const std::filesystem::path entry =
      dir.empty() ? std::filesystem::path() : dir / (key + ".cubin");
  if (!entry.empty())
    if (auto payload = read_cache_entry(entry))
      if (auto cached = decode_entry(*payload, r.expressions.size())) {
        cached->key = key;
        return *cached;
      }
  Program program = nullptr;
  check(n, n.create(&program, r.source.c_str(), r.source_name.c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  struct Destroy {
    const Nvrtc& n;
    Program& p;
    ~Destroy() { n.destroy(&p); }
  } destroy{n, program};
  for (const std::string& e : r.expressions)
    check(n, n.add_name(program, e.c_str()), "nvrtcAddNameExpression");
  std::vector<const char*> options;
  for (const std::string& o : r.options) options.push_back(o.c_str());
  const int result = n.compile(program, static_cast<int>(options.size()), options.data());
  count_compilation(Compiler::nvrtc);
  std::size_t log_size = 0;
  n.log_size(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) n.log(program, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (result != 0) {
    std::string opts;
    for (const std::string& o : r.options) opts += " " + o;
    throw CompileError(r.owner + ": NVRTC could not compile " + r.source_name + " (" +
                       n.error_string(result) + "):\n" + log + "\n  options:" + opts);
  }
  CompiledCode code;
  code.key = key;
  std::size_t size = 0;
  check(n, n.cubin_size(program, &size), "nvrtcGetCUBINSize");
  code.cubin.resize(size);
  check(n, n.cubin(program, code.cubin.data()), "nvrtcGetCUBIN");
  for (const std::string& e : r.expressions) {
    const char* lowered = nullptr;
    check(n, n.lowered_name(program, e.c_str(), &lowered), "nvrtcGetLoweredName");
    code.lowered_names.emplace_back(lowered);
  }
  if (!entry.empty()) write_cache_entry(entry, encode_entry(code));
  return code;
}

}  // namespace detail

}  // namespace cunumpy
