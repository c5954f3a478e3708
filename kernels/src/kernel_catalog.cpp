// KernelCatalog, the host-implementation choice and shared-library host functions
// (kernel_catalog.hpp).
#include <cunumpy/kernel_catalog.hpp>

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <set>
#include <thread>

namespace cunumpy {

bool KernelCatalog::contains(std::string_view name) const {
  return kernels_.find(name) != kernels_.end();
}

const std::shared_ptr<KernelBase>& KernelCatalog::find(std::string_view name) const {
  auto it = kernels_.find(name);
  if (it == kernels_.end()) {
    std::string known;
    for (const auto& [n, k] : kernels_) known += (known.empty() ? "" : ", ") + n;
    throw LookupError("KernelCatalog: no kernel named '" + std::string(name) +
                      "'; the catalog has " + (known.empty() ? std::string("none") : known));
  }
  return it->second;
}

KernelOptions KernelCatalog::kernel_options(const CatalogKernelOptions& o) const {
  KernelOptions k;
  k.dispatch = o.dispatch.value_or(options_.dispatch);
  k.missing_cuda = o.missing_cuda.value_or(options_.missing_cuda);
  k.host = options_.host;
  if (o.outputs) k.host.outputs = o.outputs;
  if (o.convert) k.host.convert = o.convert;
  k.host_parameters = o.host_parameters;
  k.check_signature = o.check_signature.value_or(options_.cuda.check_signature);
  return k;
}

CudaKernelOptions KernelCatalog::cuda_options(const CatalogKernelOptions& o) const {
  CudaKernelOptions c = options_.cuda;
  if (o.block_size) c.block_size = *o.block_size;
  c.options.insert(c.options.end(), o.cuda_options.begin(), o.cuda_options.end());
  c.include_dirs.insert(c.include_dirs.end(), o.include_dirs.begin(), o.include_dirs.end());
  if (o.check_signature) c.check_signature = *o.check_signature;
  return c;
}

std::vector<std::string> KernelCatalog::names() const {
  std::vector<std::string> out;
  for (const auto& [n, k] : kernels_) out.push_back(n);
  return out;
}

std::vector<std::string> KernelCatalog::with_cuda() const {
  std::vector<std::string> out;
  for (const auto& [n, k] : kernels_)
    if (k->has_cuda()) out.push_back(n);
  return out;
}

std::vector<std::string> KernelCatalog::without_cuda() const {
  std::vector<std::string> out;
  for (const auto& [n, k] : kernels_)
    if (!k->has_cuda()) out.push_back(n);
  return out;
}

std::string KernelCatalog::summary(std::size_t max_missing) const {
  const auto missing = without_cuda();
  std::string s = "CUDA kernels: " + std::to_string(kernels_.size() - missing.size()) + " of " +
                  std::to_string(kernels_.size());
  if (missing.empty()) return s;
  s += " (missing: ";
  for (std::size_t i = 0; i < missing.size() && i < max_missing; ++i)
    s += (i > 0 ? ", " : "") + missing[i];
  if (missing.size() > max_missing) s += max_missing > 0 ? ", ..." : "...";
  return s + ")";
}

std::vector<std::string> KernelCatalog::compile_all(int jobs) {
  std::vector<KernelBase*> todo;
  for (auto& [n, k] : kernels_)
    if (k->has_cuda()) todo.push_back(k.get());
  if (jobs <= 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  jobs = std::min<int>(jobs, static_cast<int>(std::max<std::size_t>(todo.size(), 1)));
  std::vector<std::exception_ptr> failures(todo.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < todo.size(); i = next++) {
      try {
        todo[i]->compile();
      } catch (...) {
        failures[i] = std::current_exception();
      }
    }
  };
  if (jobs == 1) {
    work();
  } else {
    std::vector<std::thread> threads;
    for (int t = 0; t < jobs; ++t) threads.emplace_back(work);
    for (auto& t : threads) t.join();
  }
  std::vector<std::pair<std::string, std::exception_ptr>> failed;
  for (std::size_t i = 0; i < todo.size(); ++i)
    if (failures[i]) failed.emplace_back(todo[i]->name(), failures[i]);
  detail::rethrow_compile_failures(failed);
  std::vector<std::string> out;
  for (KernelBase* k : todo) out.push_back(k->name());
  return out;
}

void KernelCatalog::check_signatures() const {
  std::string all;
  int bad = 0;
  for (const auto& [n, k] : kernels_) {
    const std::string d = k->signature_difference();
    if (d.empty()) continue;
    ++bad;
    all += "\n" + d;
  }
  if (bad > 0)
    throw ValueError("KernelCatalog: " + std::to_string(bad) +
                     " kernel(s) whose host and CUDA parameters differ:" + all);
}

std::filesystem::path KernelCatalog::cuda_path(std::string_view name) const {
  if (options_.cuda_folder.empty()) return {};
  return options_.cuda_folder / std::string(name) / (std::string(name) + options_.cuda_suffix);
}

// ---- the host-implementation choice ------------------------------------------------------

namespace {
struct Choice {
  std::mutex mutex;
  std::optional<std::string> name;
};
Choice& choice() {
  static Choice* c = [] {
    auto* c = new Choice;
    if (const char* env = std::getenv("CUNUMPY_KERNEL_IMPLEMENTATION");
        env != nullptr && *env != '\0')
      c->name = env;
    return c;
  }();
  return *c;
}
// The calling thread's innermost use_kernel_implementation scope (nullptr: the default).
thread_local std::optional<std::string>* t_scope = nullptr;
}  // namespace

void set_kernel_implementation(std::optional<std::string> name) {
  if (name && name->empty()) name.reset();
  if (t_scope != nullptr) *t_scope = name;
  Choice& c = choice();
  std::lock_guard lock(c.mutex);
  c.name = std::move(name);
}

std::optional<std::string> get_kernel_implementation() {
  if (t_scope != nullptr) return *t_scope;
  Choice& c = choice();
  std::lock_guard lock(c.mutex);
  return c.name;
}

KernelImplementationScope::KernelImplementationScope(std::optional<std::string> name)
    : name_(name && name->empty() ? std::nullopt : std::move(name)), previous_(t_scope) {
  t_scope = &name_;
}

KernelImplementationScope::~KernelImplementationScope() {
  t_scope = previous_;
}

namespace detail {
void warn_reference_once(const std::string& kernel, const std::string& errors) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard lock(mutex);
  if (!warned.insert(kernel).second) return;
  std::fprintf(stderr,
               "cunumpy: warning: kernel '%s' runs its reference host implementation: the others "
               "failed to load (%s)\n",
               kernel.c_str(), errors.c_str());
}
}  // namespace detail

void* load_host_symbol(const std::filesystem::path& library, const std::string& symbol) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    throw Error("load_host_function: cannot open " + library.string() + ": " + dlerror() +
                "; build the library first or give its path");
  void* f = dlsym(handle, symbol.c_str());
  if (f == nullptr)
    throw Error("load_host_function: " + library.string() + " has no symbol '" + symbol +
                "'; declare the function extern \"C\"");
  return f;  // the library stays loaded: its functions are used until the process ends
}

}  // namespace cunumpy
