// The kernel emulator's compilation (cuda_emulator.hpp): a source's translation unit with an
// entry pair per kernel, the host compiler's command (its identity, the CPU and the sanitizers
// in the cache key), the library cached and loaded, its kernels looked up.
#include "../cuda_emulator.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <cunumpy/build_config.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/files.hpp>

#include "../cuda_compiler.hpp"
#include "../cuda_source.hpp"
#include "../kernel_cache.hpp"
#include "barriers.hpp"
#include "library.hpp"
#include "regions.hpp"

namespace cunumpy {

std::string emulation_compiler() {
  if (const char* cxx = std::getenv("CXX"); cxx != nullptr && *cxx != '\0') return cxx;
  return "c++";
}

namespace detail {
namespace {

// ---- compilation ----------------------------------------------------------------------------

const std::string& compiler_identity() {
  static const std::string id = [] {
    const std::string cmd = emulation_compiler() + " --version 2>&1";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[256];
      while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
      pclose(p);
    }
    return out.substr(0, out.find('\n'));
  }();
  return id;
}

// The CPU the kernels are compiled for (-march=native): part of the cache key, so that a cache
// shared between machines (a home folder on a cluster's file system) never hands one CPU's
// instructions to another.  /proc/cpuinfo's model and feature lines; empty elsewhere.
const std::string& cpu_identity() {
  static const std::string id = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line, out;
    for (const char* field : {"model name", "flags", "Features", "CPU implementer", "CPU part"}) {
      in.clear();
      in.seekg(0);
      while (std::getline(in, line))
        if (line.rfind(field, 0) == 0) {
          out += line + "\n";
          break;
        }
    }
    return out;
  }();
  return id;
}

// The kernel's file as the emulator compiles it, with the kernel entries.  The kernels named in
// `to_split` (they synchronise) are split into regions where regions.cpp can (`split` gets
// their names), the comments then left out of the file.
std::string translation_unit(const CompileRequest& r, const std::set<std::string>& to_split,
                             const std::set<std::string>& synchronising,
                             std::set<std::string>& split) {
  // extern __shared__ T name[];  ->  T* name = (T*)the block's dynamic shared memory;
  static const std::regex dynamic(
      R"(extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?([^;\[]*?)\s+(\w+)\s*\[\s*\]\s*;)");
  std::string source = std::regex_replace(
      r.source, dynamic, "$1* $2 = reinterpret_cast<$1*>(cunumpy_emulator_dynamic_shared());");
  split.clear();
  if (!to_split.empty()) {
    std::set<std::string> made;
    std::string regions = split_into_regions(
        strip_comments(source), to_split,
        [&](std::string_view name) { return synchronises(name, synchronising); }, r.source_name,
        made);
    if (!made.empty()) {
      source = std::move(regions);
      split = std::move(made);
    }
  }
  std::string tu = "#include <cunumpy/emulator.hpp>\n#line 1 \"" + r.source_name + "\"\n" + source +
                   "\n#define CUNUMPY_EMULATOR_EXPORT extern \"C\" "
                   "__attribute__((visibility(\"default\")))\n";
  // Kernel i's entries: cunumpy_emulator_entry_i (one thread) and cunumpy_emulator_block_i.
  for (std::size_t i = 0; i < r.expressions.size(); ++i) {
    const std::string& e = r.expressions[i];
    const std::string n = std::to_string(i);
    for (const std::string& piece :
         {"CUNUMPY_EMULATOR_EXPORT void cunumpy_emulator_entry_" + n +
              "(void** args, const uint3* thread) { ::cunumpy_emulator::set_thread(*thread); "
              "::cunumpy_emulator::call(&" +
              e + ", args); }\n",
          "CUNUMPY_EMULATOR_EXPORT void cunumpy_emulator_block_" + n +
              "(void** args) { ::cunumpy_emulator::loop<&" + e + ">(&" + e + ", args); }\n"})
      tu += piece;
    if (split.contains(kernel_name(e)))
      tu += "CUNUMPY_EMULATOR_EXPORT void cunumpy_emulator_regions_" + n +
            "(void** args) { ::cunumpy_emulator::regions<&" + e + ">(&" + e + ", args); }\n";
  }
  tu +=
      "CUNUMPY_EMULATOR_EXPORT void cunumpy_emulator_init(const ::cunumpy_emulator::Hooks* h) { "
      "::cunumpy_emulator::hooks = h; }\n"
      "CUNUMPY_EMULATOR_EXPORT void cunumpy_emulator_set_index(const ::cunumpy_emulator::Index* "
      "i) { ::cunumpy_emulator::set_index(*i); }\n"
      "CUNUMPY_EMULATOR_EXPORT uint3 cunumpy_emulator_thread() { return "
      "::cunumpy_emulator::here()->thread; }\n";
  return tu;
}

// A command of several words, as make and the shell split CXX ("ccache g++", "env c++"):
// at blanks, with single and double quotes grouping and a backslash escaping one character.
std::vector<std::string> command_words(const std::string& command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (quote != 0) {
      if (c == quote)
        quote = 0;
      else
        word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::exchange(word, {}));
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  if (words.empty()) words.emplace_back("c++");
  return words;
}

// The sanitizer flags the kernels are compiled with: the library's own when it is sanitized and
// the emulation compiler is of the family that built it (GCC's and clang's AddressSanitizer
// runtimes cannot share a process); else none, said once on stderr when the library is
// sanitized.
std::vector<std::string> kernel_sanitizer_flags() {
#if defined(CUNUMPY_KERNEL_SANITIZE)
  const std::string family =
      compiler_identity().find("clang") != std::string::npos ? "Clang" : "GNU";
  if (family == CUNUMPY_KERNEL_SANITIZE_COMPILER) return command_words(CUNUMPY_KERNEL_SANITIZE);
  static std::once_flag said;
  std::call_once(said, [&] {
    std::fprintf(stderr,
                 "cunumpy: the kernel emulator compiles kernels with %s (%s), not with the "
                 "compiler family that built this sanitized library (%s): its kernels are not "
                 "sanitized (the two AddressSanitizer runtimes cannot share a process); set CXX to "
                 "a %s compiler to sanitize them\n",
                 emulation_compiler().c_str(), family.c_str(), CUNUMPY_KERNEL_SANITIZE_COMPILER,
                 CUNUMPY_KERNEL_SANITIZE_COMPILER);
  });
#endif
  return {};
}

// The files of a make-style dependency list ("target: a b \\\n c"; in a name "\\ " is a blank,
// "\\#" a '#' and "$$" a '$').
std::vector<std::filesystem::path> dependency_files(const std::string& text) {
  std::vector<std::filesystem::path> out;
  std::string name;
  bool target = true;  // the words before the first ':' name the target
  auto flush = [&] {
    if (!name.empty() && !target) out.emplace_back(name);
    name.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size() && (text[i + 1] == ' ' || text[i + 1] == '#')) {
      name += text[++i];
    } else if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      name += '$';
      ++i;
    } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      flush();
      ++i;
    } else if (c == ':' && target &&
               (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n')) {
      name.clear();
      target = false;
    } else if (c == ' ' || c == '\n' || c == '\t') {
      flush();
    } else {
      name += c;
    }
  }
  flush();
  return out;
}

// The files the compiler read (the dependency list at `deps`, system headers left out by
// -MMD) that the cache key does not cover: neither the translation unit, nor a header the
// source's includes resolve to, nor one of cunumpy's headers (the -I folder the key holds is
// named by their digest), nor one of the CUDA toolkit's (its version is in the key).
std::vector<std::filesystem::path> unkeyed_headers(
    const std::filesystem::path& deps, const std::vector<std::filesystem::path>& keyed) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(deps, ec)) return {};
  std::set<fs::path> covered;
  for (const fs::path& h : keyed) covered.insert(fs::weakly_canonical(h, ec));
  covered.insert(fs::weakly_canonical(deps.parent_path() / "kernel.cpp", ec));
  const fs::path folders[] = {fs::weakly_canonical(cuda_include_dir(), ec),
                              fs::weakly_canonical(toolkit_include_dir(), ec)};
  auto inside = [](const fs::path& file, const fs::path& folder) {
    const fs::path rel = file.lexically_relative(folder);
    return !folder.empty() && !rel.empty() && *rel.begin() != "..";
  };
  std::vector<fs::path> missed;
  for (const fs::path& f : dependency_files(read_file(deps))) {
    const fs::path c = fs::weakly_canonical(f, ec);
    if (covered.count(c) != 0 || inside(c, folders[0]) || inside(c, folders[1])) continue;
    missed.push_back(c);
  }
  return missed;
}

// Said once per kernel: it is not cached, and why.
void warn_uncached(const std::string& owner, const std::vector<std::filesystem::path>& missed) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (!said.insert(owner).second) return;
  std::string files;
  for (const auto& f : missed) files += "\n  " + f.string();
  std::fprintf(stderr,
               "cunumpy: %s is compiled every run, not cached: the compiler read headers its "
               "#include lines do not name (a computed #include?), so the cache key cannot "
               "follow their edits:%s\n  include them by name to cache the kernel\n",
               owner.c_str(), files.c_str());
}

std::atomic<unsigned long long> g_builds{0};  // this process's build folders and loose copies

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

// Whether NVRTC fuses a * b + c into one fma for these options: by default it does (as nvcc),
// --fmad=false (or -fmad=false) turns it off.
bool fuses_multiply_add(const std::vector<std::string>& options) {
  bool fused = true;
  for (const std::string& o : options) {
    if (o == "--fmad=false" || o == "-fmad=false") fused = false;
    if (o == "--fmad=true" || o == "-fmad=true") fused = true;
  }
  return fused;
}

namespace {
// The emulator's rounding follows: a * b + c contracted into one fma where NVRTC's would be
// (-ffp-contract=fast, which uses the CPU's FMA instructions under -march=native; a CPU without
// them rounds twice), not where --fmad=false asks for two roundings.
const char* contraction_flag(const std::vector<std::string>& options) {
  return fuses_multiply_add(options) ? "-ffp-contract=fast" : "-ffp-contract=off";
}
}  // namespace

// The library of a translation unit `tu` whose key inputs are `text`: from the cache (the entry
// checked whole before it is loaded: `from_cache`), else compiled by the host compiler (in a
// private folder when the configured cache cannot be written, or a compilation of its own when
// the cache is off).  Returns the file to load.
std::filesystem::path build_library(const std::string& text, const std::string& tu,
                                    const std::vector<std::string>& flags, const CompileRequest& r,
                                    bool& from_cache) {
  namespace fs = std::filesystem;
  const std::string key = sha256_hex(text);
  const fs::path dir = usable_cache_dir();
  const fs::path entry = dir.empty() ? fs::path() : dir / (key + ".so");
  fs::path load = entry;
  from_cache = false;
  if (!entry.empty() && read_cache_entry(entry)) {
    from_cache = true;
    return load;
  }
  {
    // Compiled in a private folder of its own (removed after), so concurrent compilations of one
    // kernel, by threads or processes, never share a file; each writes a whole entry.
    const fs::path work = private_temp_dir() / ("build-" + key.substr(0, 16) + "-" +
                                                std::to_string(g_builds.fetch_add(1)));
    std::error_code ec;
    fs::create_directories(work, ec);
    struct Cleanup {
      fs::path dir;
      ~Cleanup() {
        std::error_code e;
        fs::remove_all(dir, e);
      }
    } cleanup{work};
    {
      std::ofstream out(work / "kernel.cpp");
      out << tu;
      if (!out.flush())
        throw Error("the kernel emulator: cannot write " + (work / "kernel.cpp").string());
    }
    std::string cmd;
    for (const std::string& word : command_words(emulation_compiler())) {
      cmd += shell_quote(word);
      cmd += ' ';
    }
    for (const auto& f : flags) {
      cmd += shell_quote(f);
      cmd += ' ';
    }
    for (const std::string& piece :
         {std::string("-MMD -MF "), shell_quote((work / "kernel.d").string()),
          std::string(" -x c++ "), shell_quote((work / "kernel.cpp").string()), std::string(" -o "),
          shell_quote((work / "kernel.so").string()), std::string(" > "),
          shell_quote((work / "kernel.log").string()), std::string(" 2>&1")})
      cmd += piece;
    const int status = std::system(cmd.c_str());
    count_compilation(Compiler::host);
    if (status != 0) {
      std::ifstream in(work / "kernel.log");
      std::ostringstream log;
      log << in.rdbuf();
      throw CompileError(r.owner + ": the emulator's compiler (" + emulation_compiler() +
                         ") could not compile " + r.source_name + ":\n" + log.str());
    }
    const std::string library = read_file(work / "kernel.so");
    // Cached only when the key covers every file the compiler read (its -MMD list): a header
    // reached by a computed #include is not in the key, so such a kernel compiles every run
    // rather than ever running with a header's old contents.
    const std::vector<fs::path> missed = unkeyed_headers(work / "kernel.d", r.headers);
    if (!missed.empty()) warn_uncached(r.owner, missed);
    if (!entry.empty() && missed.empty() && write_cache_entry(entry, library)) {
      load = entry;
    } else {  // no cache: loaded from a copy of its own that outlives the build folder
      load = private_temp_dir() / (key + "-" + std::to_string(g_builds.fetch_add(1)) + ".so");
      write_file_atomically(load, library);
    }
  }
  return load;
}

std::vector<std::shared_ptr<EmulatedKernel>> emulate_compile(const CompileRequest& r) {
  namespace fs = std::filesystem;
  std::vector<std::string> flags = {"-std=c++20",
                                    "-O3",  // kernels are small: -O3's vectoriser costs little
                                    "-fPIC",
                                    "-shared",
                                    contraction_flag(r.options),
                                    "-march=native",  // this CPU: compiled where it runs, as NVRTC
                                    "-fvisibility=hidden",
                                    "-w"};
  // Debug mode (CUNUMPY_BOUNDS_CHECK): a fault at a guard page is thrown as an exception from
  // the faulting load or store (engine.cpp).  Only then: every load and store a possible
  // throw keeps the compiler from moving stores across loads in the split kernels.
  if (std::find(r.options.begin(), r.options.end(), "-DCUNUMPY_BOUNDS_CHECK") != r.options.end())
    flags.push_back("-fnon-call-exceptions");
  // The kernel's threadIdx & co. are a thread_local of the loaded library, reached with the
  // default TLS dialect: its address is computed once per block (emulator.hpp).  Not with TLS
  // descriptors (-mtls-dialect=gnu2): glibc before 2.40 lets their slow path (a thread's first
  // access after more libraries were loaded) clobber vector registers, which corrupted the
  // vectorised block loop.
  for (std::string& f : kernel_sanitizer_flags()) flags.push_back(std::move(f));
  std::vector<std::string> kernel_options;  // the request's options the host compiler takes
  for (const std::string& o : r.options)
    if (o.rfind("-D", 0) == 0 || o.rfind("-I", 0) == 0 || o.rfind("-U", 0) == 0) {
      kernel_options.push_back(o);
      flags.push_back(o);
    }
  // cunumpy's headers after the kernel's own folders, as NVRTC searches them (and as
  // resolve_includes tracks them); a repeated -I is ignored.
  flags.push_back("-I" + cuda_include_dir().string());
  // (Appended piece by piece: GCC 12 warns, falsely, on "text" + std::string; -Wrestrict.)
  std::string text = "emulator\n";
  for (const std::string& piece : {compiler_identity(), std::string("\n"), cpu_identity(),
                                   toolkit_identity(), std::string("\n")})
    text += piece;
  for (const auto& f : flags) {
    text += f;
    text += '\n';
  }
  // The inputs NVRTC's key covers too (the headers read once: for the key and the search for
  // barriers), then the translation unit the emulator makes of them and the built-ins header,
  // part of every emulated kernel: an edit of either recompiles them.
  const std::vector<std::string> headers = append_key_inputs(text, r, kernel_options);
  // Barriers and warp operations need the threads as fibers or the kernel split into regions;
  // other kernels run as loops.  Kernel by kernel (a module's barrier-free kernels run as loops
  // beside its tiled ones): the functions and macros each names, in the source, the headers it
  // includes and the -D options.
  std::set<std::string> synchronising;
  const std::vector<bool> barriers =
      kernels_with_barriers(r.source, headers, r.options, r.expressions, &synchronising);
  std::set<std::string> to_split;
  const bool fibers_asked =
      std::find(r.options.begin(), r.options.end(), "-DCUNUMPY_EMULATOR_FIBERS") != r.options.end();
  for (std::size_t i = 0; i < r.expressions.size(); ++i)
    if (barriers[i] && !fibers_asked) to_split.insert(kernel_name(r.expressions[i]));
  std::set<std::string> split;
  std::string tu = translation_unit(r, to_split, synchronising, split);
  text += "\nbuiltins\n";
  for (const char* builtins : {"emulator.hpp", "emulator_builtins.hpp"})
    text += read_file(cuda_include_dir() / "cunumpy" / builtins);
  text += "\ntranslation unit\n";
  // Dynamic shared memory is rewritten in the kernel's own file only.
  static const std::regex extern_shared(R"(extern\s+__shared__)");
  for (std::size_t i = 0; i < headers.size(); ++i)
    if (std::regex_search(strip_comments(headers[i]), extern_shared))
      throw CompileError(r.owner + ": " + r.headers[i].string() +
                         " declares extern __shared__ memory; the kernel emulator maps dynamic "
                         "shared memory where the kernel's own source declares it: declare it "
                         "there and pass the pointer to the header's device function");
  // The library of a translation unit, from the cache or compiled.  A kernel split into regions
  // that the host compiler refuses (a construct the rewrite misread) is compiled again unsplit,
  // to run as fibers.
  auto lib = std::make_shared<EmulatedLibrary>();
  for (;;) {
    try {
      lib->file = build_library(text + tu, tu, flags, r, lib->from_cache);
      break;
    } catch (const CompileError&) {
      if (split.empty()) throw;
      split.clear();
      tu = translation_unit(r, {}, synchronising, split);
    }
  }
  const fs::path load = lib->file;

  lib->handle = dlopen(load.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle == nullptr)
    throw Error("the kernel emulator: cannot load " + load.string() + ": " + dlerror());
  auto init = reinterpret_cast<void (*)(const cunumpy_emulator::Hooks*)>(
      dlsym(lib->handle, "cunumpy_emulator_init"));
  auto set_index = reinterpret_cast<void (*)(const cunumpy_emulator::Index*)>(
      dlsym(lib->handle, "cunumpy_emulator_set_index"));
  const auto lacks = [&] {
    return Error("the kernel emulator: " + load.string() +
                 " lacks its entry points; remove it and run again");
  };
  auto thread = reinterpret_cast<uint3 (*)()>(dlsym(lib->handle, "cunumpy_emulator_thread"));
  if (init == nullptr || set_index == nullptr || thread == nullptr) throw lacks();
  std::vector<std::shared_ptr<EmulatedKernel>> kernels;
  for (std::size_t i = 0; i < r.expressions.size(); ++i) {
    auto k = std::make_shared<EmulatedKernel>();
    k->library = lib;
    k->name = r.expressions[i];
    k->set_index = set_index;
    k->thread = thread;
    const std::string n = std::to_string(i);
    k->entry = reinterpret_cast<void (*)(void**, const uint3*)>(
        dlsym(lib->handle, ("cunumpy_emulator_entry_" + n).c_str()));
    k->block = reinterpret_cast<void (*)(void**)>(
        dlsym(lib->handle, ("cunumpy_emulator_block_" + n).c_str()));
    if (k->entry == nullptr || k->block == nullptr) throw lacks();
    kernels.push_back(std::move(k));
  }
  init(&emulator_hooks());
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    kernels[i]->barriers = barriers[i];
    if (split.contains(kernel_name(r.expressions[i])))
      kernels[i]->regions = reinterpret_cast<void (*)(void**)>(
          dlsym(lib->handle, ("cunumpy_emulator_regions_" + std::to_string(i)).c_str()));
  }
  return kernels;
}

std::string emulated_as(const EmulatedKernel& kernel) {
  return kernel.regions != nullptr ? "regions" : kernel.barriers ? "fibers" : "loop";
}

bool from_cache(const EmulatedKernel& kernel) noexcept {
  return kernel.library->from_cache;
}

}  // namespace detail

bool emulated_kernels_sanitized() {
  return !detail::kernel_sanitizer_flags().empty();
}

}  // namespace cunumpy
