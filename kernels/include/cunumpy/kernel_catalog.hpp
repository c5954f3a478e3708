// cunumpy/kernel_catalog.hpp: the kernels of a code being ported to the GPU, by name, with
// their CUDA sources found at run time; several host implementations of one kernel.
//
//   cn::KernelCatalog catalog({.cuda_folder = "kernels"});     // kernels/<name>/<name>_cuda.cu
//   auto& push = catalog.add("push", push_host);                // CUDA source found, or missing
//   catalog.add("deposit", deposit_host);
//   std::puts(catalog.summary().c_str());   // CUDA kernels: 1 of 2 (missing: deposit)
//   catalog.compile_all(2);                  // at setup: the first step pays no compilation
//   catalog.check_signatures();              // in a unit test of the port
//
//   cn::HostImplementations<void (*)(Particles&, double)> push_impls(
//       "push", {{"openmp", [] { return &push_openmp; }},
//                {"reference", [] { return &push_ref; }}});
//   cn::set_kernel_implementation("reference");          // every kernel, or
//   {
//     auto scope = cn::use_kernel_implementation("openmp");   // this scope's calls
//     push_impls(particles, dt);
//   }
//
// Python -> C++: KernelCatalog.from_package (a package of modules) -> a catalog built by
// registration of the host kernels (functions of the application) plus a folder of CUDA
// sources read at run time, laid out as <folder>/<name>/<name>_cuda.cu (cuda_suffix);
// Kernel.from_folder -> KernelCatalog::add for one kernel; HostImplementations(name,
// loaders) -> the same, with "reference" (the plain C++ version) in the role of "python";
// CompiledHostKernel (compiled on first call by your compiler) -> a loader that opens a
// shared library on first use (load_host_function), e.g. one built by your build system from
// Fortran or ISPC; parity_cases -> the names to run cunumpy::testing's kernels_agree over.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/kernel.hpp>

namespace cunumpy {

// Where a catalog finds its CUDA sources, and the options of its kernels.
struct CatalogOptions {
  std::filesystem::path cuda_folder;  // <cuda_folder>/<name>/<name><cuda_suffix>; empty: none
  std::string cuda_suffix = "_cuda.cu";
  CudaKernelOptions cuda;  // for every CUDA kernel (block size, include dirs, ...)
  Dispatch dispatch = Dispatch::backend;
  MissingCuda missing_cuda = MissingCuda::raise;
  HostKernelOptions host;  // the host kernels' conversion (fallback path)
};

// The options of one catalog kernel, over the catalog's: what is set here replaces the
// catalog's value, the lists add to the catalog's.
struct CatalogKernelOptions {
  std::optional<Dispatch> dispatch;
  std::optional<MissingCuda> missing_cuda;
  std::optional<std::vector<int>> outputs;  // the host kernel's outputs (HostKernelOptions)
  std::optional<bool> convert;
  std::vector<std::string> host_parameters;  // the host parameters' names, for the check
  std::optional<bool> check_signature;
  std::optional<Dim3> block_size;                   // the CUDA kernel's
  std::vector<std::string> cuda_options;            // NVRTC options, after the catalog's
  std::vector<std::filesystem::path> include_dirs;  // after the catalog's
};

// The kernels of a code being ported: host kernels by name, with their CUDA twins when their
// sources exist (see the top of this header).
class KernelCatalog {
 public:
  KernelCatalog() = default;
  explicit KernelCatalog(CatalogOptions options) : options_(std::move(options)) {}

  // Registers a host kernel under `name`, with the CUDA kernel of the catalog's folder when
  // its source exists (__global__ function `name`); returns it with its types, to call.
  // `options` add to the catalog's.  ValueError for a name registered twice.  The kernel's
  // conversion and fallback events name `where`: the line that calls add.  A host function of
  // raw pointers and scalars (a legacy routine) is taken as it is: see HostKernel.
  template <typename H>
  Kernel<std::decay_t<H>>& add(std::string name, H host, CatalogKernelOptions options = {},
                               std::source_location where = std::source_location::current()) {
    using K = Kernel<std::decay_t<H>>;
    KernelOptions o = kernel_options(options);
    const std::filesystem::path path = cuda_path(name);
    if (!path.empty()) o.cuda_path = path.string();
    std::optional<CudaKernel> cuda;
    if (!path.empty() && std::filesystem::exists(path))
      cuda = CudaKernel::from_file(path, name, cuda_options(options), options_.cuda_suffix);
    return insert(std::make_shared<K>(name, std::move(host), std::move(cuda), std::move(o), where));
  }
  // Registers a kernel built by hand (its CUDA side given, or nvcc-compiled).
  template <typename H, typename D>
  Kernel<H, D>& add(std::shared_ptr<Kernel<H, D>> kernel) {
    return insert(std::move(kernel));
  }

  // The kernel `name` (LookupError naming the known ones).
  const KernelBase& operator[](std::string_view name) const { return *find(name); }
  KernelBase& at(std::string_view name) { return *find(name); }
  // The kernel with its types, to call it: H is the host function's type as add took it
  // (decltype(&f) or decltype(f) for a function f).  TypeError when it was registered with
  // other types, LookupError for an unknown name.
  template <typename H, typename D = CudaKernel>
  Kernel<std::decay_t<H>, D>& get(std::string_view name) {
    auto* k = dynamic_cast<Kernel<std::decay_t<H>, D>*>(find(name).get());
    if (k == nullptr)
      throw TypeError("KernelCatalog: kernel '" + std::string(name) +
                      "' was registered with other host or CUDA types than those asked for");
    return *k;
  }
  bool contains(std::string_view name) const;
  std::size_t size() const noexcept { return kernels_.size(); }
  std::vector<std::string> names() const;
  std::vector<std::string> with_cuda() const;     // the ported kernels
  std::vector<std::string> without_cuda() const;  // the kernels still to port
  // "CUDA kernels: 3 of 60 (missing: a, b, c)"; at most max_missing names, then "...".
  std::string summary(std::size_t max_missing = 10) const;
  // Compiles every CUDA kernel, in `jobs` threads (0: one per CPU), all of them even if some
  // fail; returns their names, or afterwards throws the one failure, or one CompileError
  // naming every kernel that failed with its message.
  std::vector<std::string> compile_all(int jobs = 1);
  // ValueError listing every kernel whose host and CUDA parameters differ.
  void check_signatures() const;
  // The names of the kernels that have a CUDA kernel, for a parametrised parity test.
  std::vector<std::string> parity_cases() const { return with_cuda(); }
  // Where the CUDA source of `name` is expected (empty without a folder).
  std::filesystem::path cuda_path(std::string_view name) const;
  const CatalogOptions& options() const noexcept { return options_; }

 private:
  template <typename K>
  K& insert(std::shared_ptr<K> kernel) {
    if (contains(kernel->name()))
      throw ValueError("KernelCatalog: a kernel named '" + kernel->name() +
                       "' is registered already");
    K& ref = *kernel;
    kernels_.emplace(kernel->name(), std::move(kernel));
    return ref;
  }
  const std::shared_ptr<KernelBase>& find(std::string_view name) const;
  KernelOptions kernel_options(const CatalogKernelOptions& o) const;
  CudaKernelOptions cuda_options(const CatalogKernelOptions& o) const;

  CatalogOptions options_;
  std::map<std::string, std::shared_ptr<KernelBase>, std::less<>> kernels_;
};

// ---- host implementations by name --------------------------------------------------------

// The choice of host implementation (nothing: each kernel's default), as the backend is
// chosen: set_kernel_implementation sets the process default (from
// CUNUMPY_KERNEL_IMPLEMENTATION when set, read at first use); use_kernel_implementation sets
// it for the calling thread only, until the scope ends; get_kernel_implementation() is the
// calling thread's.  Applies to host calls only.
void set_kernel_implementation(std::optional<std::string> name);
std::optional<std::string> get_kernel_implementation();

// The host implementation chosen for the calling thread until the scope ends.
class [[nodiscard]] KernelImplementationScope {
 public:
  explicit KernelImplementationScope(std::optional<std::string> name);
  ~KernelImplementationScope();
  KernelImplementationScope(const KernelImplementationScope&) = delete;
  KernelImplementationScope& operator=(const KernelImplementationScope&) = delete;

 private:
  std::optional<std::string> name_;
  std::optional<std::string>* previous_;
};
// Chooses the host implementation `name` (nothing: the process default) for the calling thread.
inline KernelImplementationScope use_kernel_implementation(std::optional<std::string> name) {
  return KernelImplementationScope(std::move(name));
}

namespace detail {
void warn_reference_once(const std::string& kernel, const std::string& errors);
}

// Several host versions of one kernel (e.g. "openmp", "serial", "reference"), each a loader
// returning the function (or throwing when it is unavailable), loaded on first use.  A call
// runs selected(): the process-wide choice (LookupError when this kernel lacks it or cannot
// load it), else the first that loads in the order given; "reference" is required and is the
// last resort (with a warning once when the others failed to load).
template <typename F>
class HostImplementations {
 public:
  using Function = F;
  using Loader = std::function<F()>;

  HostImplementations(std::string kernel, std::vector<std::pair<std::string, Loader>> loaders)
      : state_(std::make_shared<State>()) {
    state_->kernel = std::move(kernel);
    bool reference = false;
    for (auto& [name, loader] : loaders) {
      reference = reference || name == "reference";
      state_->order.push_back(name);
      state_->slots.emplace(name, Slot{std::move(loader), std::nullopt, {}, false});
    }
    if (!reference)
      throw ValueError("HostImplementations '" + state_->kernel +
                       "': a \"reference\" implementation is required (the plain C++ version, the "
                       "last resort and what the others are checked against)");
  }

  template <typename... A>
  requires std::is_invocable_v<const F&, A...>
  decltype(auto) operator()(A&&... args) const {
    return std::invoke(get(selected()), std::forward<A>(args)...);
  }

  const std::string& kernel() const noexcept { return state_->kernel; }
  const std::vector<std::string>& names() const noexcept { return state_->order; }
  // Loads `name` now and tells whether it is usable.
  bool available(const std::string& name) const {
    if (!state_->slots.count(name)) return false;
    load(name);
    return state_->slots.at(name).function.has_value();
  }
  // The function of `name`; LookupError when it is missing or failed to load (with its error).
  const F& get(const std::string& name) const {
    auto it = state_->slots.find(name);
    if (it == state_->slots.end())
      throw LookupError("HostImplementations '" + state_->kernel + "' has no implementation '" +
                        name + "'; it has " + joined());
    load(name);
    if (!it->second.function)
      throw LookupError("HostImplementations '" + state_->kernel + "': implementation '" + name +
                        "' failed to load: " + it->second.error);
    return *it->second.function;
  }
  // The load errors so far, by name.
  std::map<std::string, std::string> errors() const {
    std::map<std::string, std::string> out;
    std::lock_guard lock(state_->mutex);
    for (const auto& [name, slot] : state_->slots)
      if (slot.loaded && !slot.function) out[name] = slot.error;
    return out;
  }
  // The implementation a call runs now.
  std::string selected() const {
    if (const auto chosen = get_kernel_implementation()) {
      (void)get(*chosen);  // LookupError when this kernel lacks it or it does not load
      return *chosen;
    }
    for (const std::string& name : state_->order)
      if (name != "reference" && available(name)) return name;
    const auto failed = errors();
    if (!failed.empty()) {
      std::string text;
      for (const auto& [name, error] : failed)
        text += (text.empty() ? "" : "; ") + name + ": " + error;
      detail::warn_reference_once(state_->kernel, text);
    }
    return "reference";
  }
  // The reference implementation.
  const F& reference() const { return get("reference"); }

 private:
  struct Slot {
    Loader loader;
    std::optional<F> function;
    std::string error;
    bool loaded = false;
  };
  struct State {
    std::string kernel;
    std::vector<std::string> order;
    std::map<std::string, Slot> slots;
    mutable std::mutex mutex;
  };
  void load(const std::string& name) const {
    std::lock_guard lock(state_->mutex);
    Slot& s = state_->slots.at(name);
    if (s.loaded) return;
    s.loaded = true;
    try {
      s.function = s.loader();
    } catch (const std::exception& e) {
      s.error = e.what();
    } catch (...) {
      s.error = "unknown exception";
    }
  }
  std::string joined() const {
    std::string s;
    for (const auto& n : state_->order) s += (s.empty() ? "" : ", ") + n;
    return s;
  }
  std::shared_ptr<State> state_;
};

namespace detail {
template <typename F>
struct host_signature<HostImplementations<F>> : host_signature<F> {};
}  // namespace detail

// A host function from a shared library, opened at the call (a HostImplementations loader):
// `symbol` must be an extern "C" function of type F.  Error naming the library and symbol
// when either is missing.
void* load_host_symbol(const std::filesystem::path& library, const std::string& symbol);
template <typename F>
F load_host_function(const std::filesystem::path& library, const std::string& symbol) {
  static_assert(std::is_pointer_v<F> && std::is_function_v<std::remove_pointer_t<F>>,
                "load_host_function: F must be a function pointer type");
  return reinterpret_cast<F>(load_host_symbol(library, symbol));
}

}  // namespace cunumpy
