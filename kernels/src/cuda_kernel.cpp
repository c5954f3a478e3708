// CudaKernel: compilation, argument checks and packing, launch (cuda_kernel.hpp).
#include <cunumpy/cuda_kernel.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include <cunumpy/arithmetic.cuh>
#include <cunumpy/backend.hpp>
#include <cunumpy/internal/cuda_api.hpp>
#include <cunumpy/internal/emulated_arena.hpp>
#include <cunumpy/internal/text.hpp>
#include <cunumpy/ledger.hpp>
#include <cunumpy/memory.hpp>

#include "cuda_compiler.hpp"
#include "cuda_emulator.hpp"
#include "cuda_source.hpp"

namespace cunumpy {

// ---- debug mode ----------------------------------------------------------------------------

// The state is the emulated arena's (core), so that its allocations follow debug mode.
namespace arena = detail::emulated_arena;

void set_cuda_debug(bool enabled) noexcept {
  if (arena::debug_scope() != nullptr) *arena::debug_scope() = enabled;
  arena::debug_default().store(enabled);
}
bool get_cuda_debug() noexcept {
  return arena::debug_now();
}

CudaDebugScope::CudaDebugScope(bool enabled) noexcept
    : enabled_(enabled), previous_(arena::debug_scope()) {
  arena::debug_scope() = &enabled_;
}
CudaDebugScope::~CudaDebugScope() {
  arena::debug_scope() = previous_;
}

// ---- argument checks and packing -----------------------------------------------------------

namespace detail {
void rethrow_compile_failures(std::vector<std::pair<std::string, std::exception_ptr>>& failures) {
  if (failures.empty()) return;
  if (failures.size() == 1) std::rethrow_exception(failures.front().second);
  std::sort(failures.begin(), failures.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string message = std::to_string(failures.size()) + " kernels did not compile:";
  for (const auto& [name, failure] : failures) message += " " + name + ",";
  message.back() = ';';
  for (const auto& [name, failure] : failures) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      message += "\n\n" + name + ": " + e.what();
    } catch (...) {
      message += "\n\n" + name + ": (an exception that is not a std::exception)";
    }
  }
  throw CompileError(message);
}
}  // namespace detail

namespace detail {

void throw_slice(const Shape& shape, int axis, const Slice& s) {
  throw ValueError("strided: axis " + std::to_string(axis) + " of shape " + shape.str() +
                   ": start " + std::to_string(s.start) + " and step " + std::to_string(s.step) +
                   " must be non-negative and positive; pass slices within the array");
}

void throw_struct_fields(const CudaStruct& s, std::size_t given) {
  std::string names;
  for (const auto& f : s.fields()) names += (names.empty() ? "" : ", ") + f.name;
  throw ValueError("struct_value<" + s.name() + ">: " + std::to_string(given) +
                   " value(s) given for the " + std::to_string(s.fields().size()) + " fields (" +
                   names + "); pass one value per field, in order");
}

std::string ArgWhere::str() const {
  if (field)
    return "struct " + std::string(owner) + " field '" + (param != nullptr ? param->name : "") +
           "'";
  std::string s = "CudaKernel '" + std::string(owner) + "' argument " + std::to_string(index);
  if (param != nullptr) s += " ('" + param->text + "')";
  return s;
}

namespace {

std::string describe(const KernelArg& a) {
  switch (a.kind) {
    case KernelArg::Kind::array:
      if (!a.allocated) return "an unallocated Array (default-constructed: it has no memory)";
      return std::string(a.backend == Backend::host ? "a host" : "a device") + " array of " +
             std::string(to_string(a.dtype)) + " with " + std::to_string(a.ndim) + " dimension(s)";
    case KernelArg::Kind::signed_integer:
    case KernelArg::Kind::unsigned_integer:
      return "an integer (" + std::string(to_string(a.dtype)) + ")";
    case KernelArg::Kind::floating:
      return "a floating-point value (" + std::string(to_string(a.dtype)) + ")";
    case KernelArg::Kind::complex:
      return "a complex value (" + std::string(to_string(a.dtype)) + ")";
    case KernelArg::Kind::boolean:
      return "a bool";
    case KernelArg::Kind::structure:
      return "a struct " + a.structure->name();
  }
  return "a value";
}

[[noreturn]] void type_error(const ArgWhere& where, const std::string& expected, const KernelArg& a,
                             const std::string& fix) {
  throw TypeError(where.str() + ": expected " + expected + ", got " + describe(a) + "; " + fix);
}

// `expected` (a callable giving the text) runs only for an error.
template <typename Expected>
void require_device_array(const CudaParameter& p, const KernelArg& a, const ArgWhere& where,
                          Expected&& expected) {
  if (a.kind != KernelArg::Kind::array) type_error(where, expected(), a, "pass an Array");
  if (!a.allocated)
    type_error(where, expected(), a,
               "give it memory first (cunumpy::empty / zeros / to_device(host_array), or assign "
               "an array to it) before passing it to a kernel");
  if (a.backend == Backend::host && !where.host_arrays)
    type_error(where, expected(), a,
               "host data is never copied to the device implicitly: pass to_device(array) (or "
               "build it with "
               "as_device_array)");
  if (p.dtype && *p.dtype != a.dtype)
    type_error(where, expected(), a,
               "convert the data to " + std::string(to_string(*p.dtype)) +
                   " or change the kernel's parameter type");
}

template <typename I>
bool fits(const KernelArg& a) {
  if (a.kind == KernelArg::Kind::boolean) return true;
  if (a.kind == KernelArg::Kind::signed_integer) {
    if constexpr (std::is_signed_v<I>)
      return a.value.i >= static_cast<long long>(std::numeric_limits<I>::min()) &&
             a.value.i <= static_cast<long long>(std::numeric_limits<I>::max());
    else
      return a.value.i >= 0 &&
             static_cast<unsigned long long>(a.value.i) <= std::numeric_limits<I>::max();
  }
  return a.value.u <= static_cast<unsigned long long>(std::numeric_limits<I>::max());
}

template <typename I>
std::size_t pack_integer(const CudaParameter& p, const KernelArg& a, void* dst,
                         const ArgWhere& where) {
  if (a.kind != KernelArg::Kind::signed_integer && a.kind != KernelArg::Kind::unsigned_integer &&
      a.kind != KernelArg::Kind::boolean)
    type_error(where, "an integer for '" + p.ctype + "'", a,
               a.kind == KernelArg::Kind::floating ? "convert it to an integer type first"
                                                   : "pass an integer");
  if (!fits<I>(a))
    throw ValueError(where.str() + ": " +
                     (a.kind == KernelArg::Kind::unsigned_integer ? std::to_string(a.value.u)
                                                                  : std::to_string(a.value.i)) +
                     " does not fit the parameter type '" + p.ctype + "' (" +
                     std::to_string(static_cast<long long>(std::numeric_limits<I>::min())) +
                     " .. " + std::to_string(std::numeric_limits<I>::max()) +
                     "); pass a value in range or widen the parameter");
  const I v = a.kind == KernelArg::Kind::boolean          ? static_cast<I>(a.value.b)
              : a.kind == KernelArg::Kind::signed_integer ? static_cast<I>(a.value.i)
                                                          : static_cast<I>(a.value.u);
  std::memcpy(dst, &v, sizeof(I));
  return sizeof(I);
}

// A double into a float parameter (or complex128 into complex64) loses precision: an error.
bool narrower(DType param, DType given) {
  const bool single = param == DType::float32 || param == DType::complex64;
  return single && (given == DType::float64 || given == DType::complex128);
}

double as_double(const KernelArg& a) {
  switch (a.kind) {
    case KernelArg::Kind::signed_integer:
      return static_cast<double>(a.value.i);
    case KernelArg::Kind::unsigned_integer:
      return static_cast<double>(a.value.u);
    case KernelArg::Kind::boolean:
      return a.value.b ? 1.0 : 0.0;
    default:
      return a.value.f;
  }
}

template <typename F>
std::size_t pack_real(const CudaParameter& p, const KernelArg& a, void* dst,
                      const ArgWhere& where) {
  if (a.kind == KernelArg::Kind::boolean || a.kind == KernelArg::Kind::complex ||
      a.kind == KernelArg::Kind::array || a.kind == KernelArg::Kind::structure)
    type_error(where, "a real number for '" + p.ctype + "'", a,
               "pass a floating-point or integer value");
  if (a.kind == KernelArg::Kind::floating && narrower(*p.dtype, a.dtype))
    type_error(
        where, "a value of at most single precision for '" + p.ctype + "'", a,
        "convert it (static_cast<float>(x)) to accept the rounding, or make the parameter double");
  const F v = static_cast<F>(as_double(a));
  std::memcpy(dst, &v, sizeof(F));
  return sizeof(F);
}

template <typename F>
std::size_t pack_complex(const CudaParameter& p, const KernelArg& a, void* dst,
                         const ArgWhere& where) {
  if (a.kind == KernelArg::Kind::boolean || a.kind == KernelArg::Kind::array ||
      a.kind == KernelArg::Kind::structure)
    type_error(where, "a number for '" + p.ctype + "'", a,
               "pass a complex, floating-point or integer value");
  if ((a.kind == KernelArg::Kind::floating || a.kind == KernelArg::Kind::complex) &&
      narrower(*p.dtype, a.dtype))
    type_error(where, "a value of at most single precision for '" + p.ctype + "'", a,
               "convert it to std::complex<float> to accept the rounding, or make the parameter "
               "complex<double>");
  const F v[2] = {static_cast<F>(as_double(a)),
                  static_cast<F>(a.kind == KernelArg::Kind::complex ? a.imag : 0.0)};
  std::memcpy(dst, v, sizeof(v));
  return sizeof(v);
}

}  // namespace

std::size_t pack_argument(const CudaParameter& p, const KernelArg& a, void* dst,
                          const ArgWhere& where) {
  if (p.pointer) {
    require_device_array(p, a, where, [&] {
      return "a contiguous device array" +
             (p.dtype ? " of " + std::string(to_string(*p.dtype)) : std::string());
    });
    if (!a.contiguous)
      type_error(where, "a contiguous device array", a,
                 "a strided view would be read as a flat buffer: pass the whole array, or make the "
                 "parameter an "
                 "Array" +
                     std::to_string(std::max(a.ndim, 1)) + "D<" + p.ctype + "> view");
    std::memcpy(dst, &a.data, sizeof(void*));
    return sizeof(void*);
  }
  if (p.view_ndim > 0) {
    auto expected = [&] {
      return "a device array of " + std::string(to_string(*p.dtype)) + " with " +
             std::to_string(p.view_ndim) + " dimension(s)";
    };
    require_device_array(p, a, where, expected);
    if (a.ndim != p.view_ndim)
      type_error(where, expected(), a,
                 "reshape the array or use an Array" + std::to_string(a.ndim) + "D parameter");
    auto* out = static_cast<unsigned char*>(dst);
    std::memcpy(out, &a.data, 8);
    std::memcpy(out + 8, a.shape, 8 * static_cast<std::size_t>(a.ndim));
    std::memcpy(out + 8 + 8 * a.ndim, a.strides, 8 * static_cast<std::size_t>(a.ndim));
    return 8 * (1 + 2 * static_cast<std::size_t>(a.ndim));
  }
  if (!p.struct_name.empty()) {
    if (a.kind != KernelArg::Kind::structure || a.structure->name() != p.struct_name)
      type_error(where, "a struct " + p.struct_name, a,
                 "pass struct_value<" + p.struct_name + ">(...)");
    std::memcpy(dst, a.data, a.bytes);
    return a.bytes;
  }
  if (a.kind == KernelArg::Kind::array || a.kind == KernelArg::Kind::structure)
    type_error(where, "a scalar '" + p.ctype + "'", a, "pass a value of that type");
  switch (*p.dtype) {
    case DType::boolean:
      if (a.kind != KernelArg::Kind::boolean)
        type_error(where, "a bool", a, "pass true or false (or x != 0)");
      std::memcpy(dst, &a.value.b, 1);
      return 1;
    case DType::int8:
      return pack_integer<std::int8_t>(p, a, dst, where);
    case DType::uint8:
      return pack_integer<std::uint8_t>(p, a, dst, where);
    case DType::int16:
      return pack_integer<std::int16_t>(p, a, dst, where);
    case DType::uint16:
      return pack_integer<std::uint16_t>(p, a, dst, where);
    case DType::int32:
      return pack_integer<std::int32_t>(p, a, dst, where);
    case DType::uint32:
      return pack_integer<std::uint32_t>(p, a, dst, where);
    case DType::int64:
      return pack_integer<std::int64_t>(p, a, dst, where);
    case DType::uint64:
      return pack_integer<std::uint64_t>(p, a, dst, where);
    case DType::float32:
      return pack_real<float>(p, a, dst, where);
    case DType::float64:
      return pack_real<double>(p, a, dst, where);
    case DType::complex64:
      return pack_complex<float>(p, a, dst, where);
    case DType::complex128:
      return pack_complex<double>(p, a, dst, where);
  }
  return 0;
}

std::size_t pack_unchecked(const KernelArg& a, void* dst) {
  auto put = [dst](const auto& v) {  // writes v's bytes, returns how many
    std::memcpy(dst, &v, sizeof v);
    return sizeof v;
  };
  const bool single = a.dtype == DType::float32 || a.dtype == DType::complex64;
  switch (a.kind) {
    case KernelArg::Kind::array:
      return put(a.data);
    case KernelArg::Kind::structure:
      std::memcpy(dst, a.data, a.bytes);
      return a.bytes;
    case KernelArg::Kind::boolean:
      return put(a.value.b);
    case KernelArg::Kind::signed_integer:
    case KernelArg::Kind::unsigned_integer:  // the value's own width (little-endian: its low bytes)
      std::memcpy(dst, &a.value.u, dtype_size(a.dtype));
      return dtype_size(a.dtype);
    case KernelArg::Kind::floating:
      return single ? put(static_cast<float>(a.value.f)) : put(a.value.f);
    case KernelArg::Kind::complex:
      return single ? put(std::array<float, 2>{static_cast<float>(a.value.f),
                                               static_cast<float>(a.imag)})
                    : put(std::array<double, 2>{a.value.f, a.imag});
  }
  return 0;
}

}  // namespace detail

void PackedArgs::grow(std::size_t parameters, std::size_t slot_bytes) {
  const std::size_t meta = (3 * sizeof(std::size_t) * parameters + kAlign - 1) / kAlign * kAlign;
  auto block = std::make_unique_for_overwrite<std::byte[]>(meta + slot_bytes);
  auto** pointers = reinterpret_cast<void**>(block.get());
  auto* sizes = reinterpret_cast<std::size_t*>(pointers + parameters);
  auto* offsets = sizes + parameters;
  std::byte* slots = block.get() + meta;
  if (count_ > 0) {
    std::memcpy(sizes, sizes_, count_ * sizeof(std::size_t));
    std::memcpy(offsets, offsets_, count_ * sizeof(std::size_t));
  }
  if (used_ > 0) std::memcpy(slots, slots_, used_);
  for (std::size_t i = 0; i < count_; ++i) pointers[i] = slots + offsets[i];  // the slots moved
  block_ = std::move(block);
  pointers_ = pointers;
  sizes_ = sizes;
  offsets_ = offsets;
  slots_ = slots;
  capacity_ = parameters;
  slot_bytes_ = slot_bytes;
}

void PackedArgs::reserve(std::size_t n) {
  if (n > capacity_ || n * kScalarRoom > slot_bytes_)
    grow(std::max(n, capacity_), std::max(n * kScalarRoom, slot_bytes_));
}

void* PackedArgs::slot(std::size_t bytes) {
  const std::size_t room = (bytes + kAlign - 1) / kAlign * kAlign;
  if (count_ == capacity_ || used_ + room > slot_bytes_)
    grow(count_ == capacity_ ? std::max<std::size_t>(8, 2 * capacity_) : capacity_,
         std::max(used_ + room, 2 * slot_bytes_));
  pending_ = room;
  return slots_ + used_;
}

void PackedArgs::commit(std::size_t bytes) noexcept {
  offsets_[count_] = used_;
  sizes_[count_] = bytes;
  pointers_[count_] = slots_ + used_;
  ++count_;
  used_ += pending_;
  pending_ = 0;
}

// ---- the kernel ----------------------------------------------------------------------------

// The compiled images of one source, shared by the kernels of a module (a lone CudaKernel is
// a module of one kernel): one NVRTC program, one emulator library, one copy of the module data.
struct CudaKernel::Program {
  std::string source;
  CudaKernelOptions o;                   // module-wide: options, folders, file, debug, checks
  std::vector<std::string> expressions;  // the kernels, in order
  std::string owner;                     // what compile errors name
  std::string program_name;              // the file compile errors give
  std::mutex mutex;
  // The compiled image per target, each made whole or not at all:
  // NVRTC's CUBIN, loaded as a CUDA library when a GPU is present (by compile()) ...
  struct CudaImage {
    detail::CompiledCode code;
    void* library = nullptr;
    std::vector<void*> kernels;  // per expression
    CudaImage() = default;
    CudaImage(CudaImage&& o) noexcept
        : code(std::move(o.code)),
          library(std::exchange(o.library, nullptr)),
          kernels(std::move(o.kernels)) {}
    CudaImage& operator=(CudaImage&& o) noexcept {
      std::swap(code, o.code);
      std::swap(library, o.library);
      std::swap(kernels, o.kernels);
      return *this;
    }
    ~CudaImage() { detail::cuda_api::library_unload(library); }
  };
  CudaImage cuda;
  std::atomic<bool> compiled{false};  // `cuda` is set: set last, under the mutex; read without it
  // ... and the emulator's library, per expression (by compile_for(emulated)).
  std::vector<std::shared_ptr<detail::EmulatedKernel>> emulated;
};

// One kernel: its program and its place there, its signature and launch settings.
struct CudaKernel::State {
  std::shared_ptr<Program> program;
  std::size_t index = 0;  // in program->expressions
  std::string name, expression;
  CudaKernelOptions o;
  std::vector<std::string> struct_names;
  std::vector<CudaParameter> signature;
  std::mutex mutex;
  std::atomic<int> shared_limit{
      default_shared_memory_per_block};  // the dynamic shared memory the kernel may use now
};

namespace {
void check_block(const Dim3& b, const std::string& kernel) {
  if (b.x <= 0 || b.y <= 0 || b.z <= 0 || b.product() > 1024)
    throw ValueError("CudaKernel '" + kernel + "': block " + detail::dims_text(b.x, b.y, b.z) +
                     " must have positive extents and at most 1024 threads");
}

// The file compile errors give: source_file, else source_dir / name.cu, else name.cu.
std::string program_name_of(const CudaKernelOptions& o, const std::string& name) {
  if (o.source_file) return o.source_file->string();
  return o.source_dir ? (*o.source_dir / (name + ".cu")).string() : name + ".cu";
}

// The same expression, blanks ignored ("scale<double,3>" names "scale<double, 3>").
bool same_expression(std::string_view a, std::string_view b) {
  auto next = [](std::string_view s, std::size_t& i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    return i < s.size() ? s[i++] : '\0';
  };
  std::size_t i = 0, j = 0;
  for (;;) {
    const char x = next(a, i), y = next(b, j);
    if (x != y) return false;
    if (x == '\0') return true;
  }
}
}  // namespace

std::shared_ptr<CudaKernel::State> CudaKernel::make_state(std::shared_ptr<Program> program,
                                                          std::size_t index, std::string name,
                                                          std::vector<TemplateArg> template_args) {
  auto state = std::make_shared<State>();
  State& s = *state;
  s.program = std::move(program);
  s.index = index;
  s.name = std::move(name);
  s.o = s.program->o;
  s.o.template_args = std::move(template_args);
  check_block(s.o.block_size, s.name);
  s.expression = template_expression(s.name, s.o.template_args);
  for (const CudaStruct* st : s.o.structs) {
    s.struct_names.push_back(st->name());
    st->check_source(s.program->source);
  }
  if (s.o.check_signature)
    s.signature =
        parse_cuda_signature(s.program->source, s.name, s.struct_names, s.o.template_args);
  return state;
}

CudaKernel::CudaKernel(std::string source, std::string name, CudaKernelOptions options) {
  auto program = std::make_shared<Program>();
  std::vector<TemplateArg> template_args = std::exchange(options.template_args, {});
  program->source = std::move(source);
  program->o = std::move(options);
  program->expressions = {template_expression(name, template_args)};
  program->owner = "CudaKernel '" + program->expressions.front() + "'";
  program->program_name = program_name_of(program->o, name);
  state_ = make_state(std::move(program), 0, std::move(name), std::move(template_args));
}

namespace {
// The folder of `path` as from_file adds it: the source_dir, first of the include folders.
void from_file_options(const std::filesystem::path& path, CudaKernelOptions& options) {
  const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  options.source_dir = dir;
  options.source_file = path;
  if (std::find(options.include_dirs.begin(), options.include_dirs.end(), dir) ==
      options.include_dirs.end())
    options.include_dirs.insert(options.include_dirs.begin(), dir);
}
}  // namespace

CudaKernel CudaKernel::from_file(const std::filesystem::path& path, std::optional<std::string> name,
                                 CudaKernelOptions options, std::string_view suffix) {
  std::string source = detail::read_file(path);
  if (!name) {
    const std::string file = path.filename().string();
    name = file.size() > suffix.size() && file.ends_with(suffix)
               ? file.substr(0, file.size() - suffix.size())
               : path.stem().string();
  }
  from_file_options(path, options);
  return CudaKernel(std::move(source), std::move(*name), std::move(options));
}

std::vector<std::pair<std::string, CudaKernel>> CudaKernel::all_from_file(
    const std::filesystem::path& path, CudaKernelOptions options) {
  const CudaModule module = CudaModule::from_file(path, {}, std::move(options));
  std::vector<std::pair<std::string, CudaKernel>> out;
  for (const CudaKernel& k : module.kernels()) out.emplace_back(k.name(), k);
  return out;
}

// ---- modules -------------------------------------------------------------------------------

CudaModule::CudaModule(std::string source, std::vector<ModuleKernel> kernels,
                       CudaKernelOptions options) {
  auto program = std::make_shared<CudaKernel::Program>();
  if (kernels.empty())
    throw ValueError(
        "CudaModule: no kernels named; list the __global__ functions to compile, e.g. "
        "{\"push\", \"deposit\", {\"scale\", {\"double\", 3}}}");
  if (!options.template_args.empty())
    throw ValueError(
        "CudaModule: options.template_args applies to one kernel; give each template kernel's "
        "arguments with its name, e.g. {\"scale\", {\"double\", 3}}");
  std::string names;
  for (const ModuleKernel& k : kernels) {
    std::string e = template_expression(k.name, k.template_args);
    for (const std::string& before : program->expressions)
      if (same_expression(before, e))
        throw ValueError("CudaModule: kernel '" + e + "' is listed twice; list each once");
    names += (names.empty() ? "" : ", ") + e;
    program->expressions.push_back(std::move(e));
  }
  program->source = std::move(source);
  program->o = std::move(options);
  program->program_name = program_name_of(program->o, kernels.front().name);
  program->owner = "CudaModule '" + program->program_name + "' (kernels " + names + ")";
  for (std::size_t i = 0; i < kernels.size(); ++i)
    kernels_.push_back(CudaKernel(CudaKernel::make_state(program, i, std::move(kernels[i].name),
                                                         std::move(kernels[i].template_args))));
}

CudaModule CudaModule::from_file(const std::filesystem::path& path,
                                 std::vector<ModuleKernel> kernels, CudaKernelOptions options) {
  std::string source = detail::read_file(path);
  if (kernels.empty())
    for (std::string& n : cuda_kernel_names(source)) kernels.emplace_back(std::move(n));
  if (kernels.empty())
    throw ValueError("CudaModule: " + path.string() +
                     " defines no __global__ function; give a file with kernels");
  from_file_options(path, options);
  return CudaModule(std::move(source), std::move(kernels), std::move(options));
}

CudaKernel CudaModule::kernel(std::string_view expression) const {
  for (const CudaKernel& k : kernels_)
    if (same_expression(k.expression(), expression) ||
        (k.template_args().empty() && k.name() == expression))
      return k;
  std::string names;
  for (const CudaKernel& k : kernels_) names += (names.empty() ? "" : ", ") + k.expression();
  throw ValueError("CudaModule '" + program_name() + "': no kernel '" + std::string(expression) +
                   "'; it holds " + names +
                   " (a kernel is compiled only when listed when the module is made)");
}

const CudaKernel& CudaModule::first() const {
  if (kernels_.empty())
    throw Error("CudaModule: this module was moved from; use the module it was moved to");
  return kernels_.front();
}
CudaKernel& CudaModule::first() {
  return const_cast<CudaKernel&>(std::as_const(*this).first());
}
const std::string& CudaModule::source() const {
  return first().source();
}
std::string CudaModule::program_name() const {
  return first().program_name();
}
void CudaModule::compile() {
  first().compile();
}
void CudaModule::compile_for(Backend backend) {
  first().compile_for(backend);
}
bool CudaModule::is_compiled_for(Backend backend) const {
  return first().is_compiled_for(backend);
}
bool CudaModule::loaded_from_cache() const {
  return first().loaded_from_cache();
}
void CudaModule::set_global_bytes(std::string_view name, std::span<const std::byte> bytes,
                                  Backend backend, std::source_location where) {
  first().set_global_bytes(name, bytes, backend, where);
}
void CudaModule::get_global_bytes(std::string_view name, std::span<std::byte> out, Backend backend,
                                  std::source_location where) {
  first().get_global_bytes(name, out, backend, where);
}
std::size_t CudaModule::global_bytes(std::string_view name, Backend backend) {
  return first().global_bytes(name, backend);
}

// ---- the kernel's accessors and compilation --------------------------------------------------

const std::string& CudaKernel::name() const noexcept {
  return state_->name;
}
const std::string& CudaKernel::expression() const noexcept {
  return state_->expression;
}
const std::string& CudaKernel::source() const noexcept {
  return state_->program->source;
}
const Dim3& CudaKernel::block_size() const noexcept {
  return state_->o.block_size;
}
const std::vector<std::string>& CudaKernel::options() const noexcept {
  return state_->o.options;
}
const std::vector<std::filesystem::path>& CudaKernel::include_dirs() const noexcept {
  return state_->o.include_dirs;
}
const std::optional<std::filesystem::path>& CudaKernel::source_dir() const noexcept {
  return state_->o.source_dir;
}
const std::vector<const CudaStruct*>& CudaKernel::structs() const noexcept {
  return state_->o.structs;
}
const std::vector<TemplateArg>& CudaKernel::template_args() const noexcept {
  return state_->o.template_args;
}
const std::vector<CudaParameter>& CudaKernel::signature() const noexcept {
  return state_->signature;
}
bool CudaKernel::check_signature() const noexcept {
  return state_->o.check_signature;
}
std::optional<bool> CudaKernel::debug() const noexcept {
  return state_->o.debug;
}
bool CudaKernel::debug_active() const noexcept {
  return state_->o.debug.value_or(get_cuda_debug());
}

std::vector<std::filesystem::path> CudaKernel::included_headers() const {
  const std::filesystem::path shipped[] = {cuda_include_dir()};
  return resolve_includes(state_->program->source, state_->o.include_dirs, state_->o.source_dir,
                          shipped);
}

std::string CudaKernel::architecture() const {
  if (cuda_available()) return "sm_" + std::to_string(detail::cuda_api::compute_capability());
  return "sm_90";
}

std::vector<std::string> CudaKernel::compile_options() const {
  return request().options;
}

detail::CompileRequest CudaKernel::request() const {
  const Program& p = *state_->program;
  detail::CompileRequest r;
  r.source = p.source;
  r.source_name = p.program_name;
  r.expressions = p.expressions;
  r.owner = p.owner;
  r.arch = architecture();
  r.headers = included_headers();  // resolved once: for the options and the cache key
  r.options = options_for(r.headers, r.arch);
  return r;
}

std::vector<std::string> CudaKernel::options_for(std::span<const std::filesystem::path> headers,
                                                 const std::string& arch) const {
  const State& s = *state_;
  std::vector<std::string> out = s.o.options;
  auto has = [&](std::string_view o) { return std::find(out.begin(), out.end(), o) != out.end(); };
  if (debug_active())
    for (std::string_view d : cuda_debug_options)
      if (!has(d)) out.emplace_back(d);
  auto add_dir = [&](const std::filesystem::path& dir) {
    const std::string flag = "-I" + dir.string();
    if (!has(flag)) out.push_back(flag);
  };
  for (const auto& dir : s.o.include_dirs) add_dir(dir);
  add_dir(cuda_include_dir());
  // The toolkit's headers (cuda/std/complex, ...), CCCL in its own folder since CUDA 13.
  const std::filesystem::path toolkit = CUNUMPY_CUDA_INCLUDE_DIR;
  std::error_code ec;
  if (std::filesystem::exists(toolkit, ec)) add_dir(toolkit);
  if (std::filesystem::exists(toolkit / "cccl", ec)) add_dir(toolkit / "cccl");
  if (!headers.empty()) out.push_back("-DCUNUMPY_INCLUDE_HASH=0x" + include_hash(headers));
  out.push_back("--gpu-architecture=" + arch);
  return out;
}

void CudaKernel::compile() {
  Program& p = *state_->program;
  if (p.compiled.load(std::memory_order_acquire)) return;  // every launch: no lock
  std::lock_guard lock(p.mutex);
  if (p.compiled.load(std::memory_order_relaxed)) return;
  detail::CompiledCode code = detail::compile_cuda(request());
  // Loaded into a local image and kept only whole: a kernel that cannot be found leaves nothing
  // behind (a later attempt starts again, never with a list that is off by one).
  Program::CudaImage image;
  if (cuda_available()) {
    image.library = detail::cuda_api::library_load(code.cubin.data());
    for (const std::string& lowered : code.lowered_names)
      image.kernels.push_back(detail::cuda_api::library_kernel(image.library, lowered.c_str()));
  }
  image.code = std::move(code);
  p.cuda = std::move(image);
  p.compiled.store(true, std::memory_order_release);
}

void CudaKernel::compile_for(Backend backend) {
  if (backend != Backend::emulated) return compile();
  (void)emulated();
}

// The kernel emulator's kernel, its program's library compiled (through the cache) and loaded
// on first use: one lock per emulated launch.
std::shared_ptr<detail::EmulatedKernel> CudaKernel::emulated() const {
  Program& p = *state_->program;
  std::lock_guard lock(p.mutex);
  if (p.emulated.empty()) p.emulated = detail::emulate_compile(request());
  return p.emulated[state_->index];
}

void* CudaKernel::global_address(std::string_view name, Backend backend, std::size_t* bytes) {
  State& s = *state_;
  if (backend == Backend::host)
    throw BackendError(s.program->owner + ": module data ('" + std::string(name) +
                       "') lives in a device image; pass Backend::cuda or Backend::emulated (the "
                       "host backend runs no CUDA kernel)");
  void* address = nullptr;
  if (backend == Backend::cuda) {
    compile();
    if (s.program->cuda.library == nullptr)
      throw BackendError(s.program->owner + ": module data on cuda needs a device (" +
                         cuda_unavailable_reason() + "); use Backend::emulated");
    address =
        detail::cuda_api::library_global(s.program->cuda.library, std::string(name).c_str(), bytes);
  } else {
    address = detail::emulated_global(*emulated(), name, bytes);
  }
  if (address == nullptr)
    throw ValueError(s.program->owner +
                     "': its source defines no module-scope "
                     "variable named '" +
                     std::string(name) +
                     "'; give a __constant__ or __device__ variable at global namespace scope, "
                     "by its name as declared");
  return address;
}

std::size_t CudaKernel::global_bytes(std::string_view name, Backend backend) {
  std::size_t bytes = 0;
  (void)global_address(name, backend, &bytes);
  return bytes;
}

namespace {
// One copy between host bytes and a module variable of `size` bytes (to the device when
// `to_device`), after the size check, counted, in order on the backend's current stream.
void copy_global(const std::string& owner, std::string_view name, Backend backend, void* device,
                 std::size_t holds, void* host, std::size_t bytes, bool to_device,
                 const std::source_location& where) {
  if (holds != bytes)
    throw ValueError(owner + ": module variable '" + std::string(name) + "' holds " +
                     std::to_string(holds) + " bytes, " + std::to_string(bytes) +
                     " were given; pass a value (or array) of exactly its type");
  detail::record_transfer(
      to_device ? TransferKind::to_device : TransferKind::to_host,
      [&] {
        return std::string(to_device ? "set_global('" : "get_global('") + std::string(name) +
               "', " + std::to_string(bytes) + " bytes) of " + owner;
      },
      where);
  void* dst = to_device ? device : host;
  const void* src = to_device ? host : device;
  if (backend == Backend::cuda) {
    detail::cuda_api::copy(dst, src, bytes,
                           to_device ? detail::cuda_api::Direction::host_to_device
                                     : detail::cuda_api::Direction::device_to_host,
                           current_stream(Backend::cuda).native_handle());
  } else {
    detail::emulated_order(Backend::emulated);  // after the kernels queued on the stream
    std::memcpy(dst, src, bytes);
  }
}
}  // namespace

void CudaKernel::set_global_bytes(std::string_view name, std::span<const std::byte> bytes,
                                  Backend backend, std::source_location where) {
  std::size_t holds = 0;
  void* address = global_address(name, backend, &holds);
  copy_global(state_->program->owner, name, backend, address, holds,
              const_cast<std::byte*>(bytes.data()), bytes.size(), true, where);
}

void CudaKernel::get_global_bytes(std::string_view name, std::span<std::byte> out, Backend backend,
                                  std::source_location where) {
  std::size_t holds = 0;
  void* address = global_address(name, backend, &holds);
  copy_global(state_->program->owner, name, backend, address, holds, out.data(), out.size(), false,
              where);
}

bool CudaKernel::is_compiled() const noexcept {
  return state_->program->compiled.load(std::memory_order_acquire);
}
bool CudaKernel::is_compiled_for(Backend backend) const noexcept {
  if (backend != Backend::emulated) return is_compiled();
  std::lock_guard lock(state_->program->mutex);
  return !state_->program->emulated.empty();
}
bool CudaKernel::loaded_from_cache() const noexcept {
  const Program& p = *state_->program;
  std::lock_guard lock(state_->program->mutex);
  if (p.compiled.load()) return p.cuda.code.from_cache;
  return !p.emulated.empty() && detail::from_cache(*p.emulated.front());
}

std::string CudaKernel::emulated_as() {
  return detail::emulated_as(*emulated());
}

std::string CudaKernel::program_name() const {
  return state_->program->program_name;
}
const std::string& CudaKernel::cubin() const {
  if (!is_compiled())
    throw Error("CudaKernel '" + state_->name + "': not compiled yet; call compile() first");
  return state_->program->cuda.code.cubin;
}

std::pair<Dim3, Dim3> CudaKernel::launch_shape(std::optional<Dim3> n_threads,
                                               std::optional<Dim3> grid,
                                               std::optional<Dim3> block) const {
  const State& s = *state_;
  Dim3 b = block.value_or(s.o.block_size);
  check_block(b, s.name);
  if (grid) {
    if (grid->x < 0 || grid->y < 0 || grid->z < 0)
      throw ValueError("CudaKernel '" + s.name + "': the grid must have non-negative extents");
    return {*grid, b};
  }
  if (!n_threads)
    throw ValueError("CudaKernel '" + s.name +
                     "': a launch needs n_threads or grid (or a kernel with "
                     "n_threads_from); pass Launch{.n_threads = n}");
  const Dim3& n = *n_threads;
  if (n.x < 0 || n.y < 0 || n.z < 0)
    throw ValueError("CudaKernel '" + s.name + "': n_threads must be non-negative, got (" +
                     std::to_string(n.x) + ", " + std::to_string(n.y) + ", " + std::to_string(n.z) +
                     ")");
  if (b.rank == 1 && n.rank > 1) b = Dim3(b.x, 1, 1);
  Dim3 g(ceil_div(n.x, b.x), ceil_div(n.y, b.y), ceil_div(n.z, b.z));
  g.rank = n.rank;
  return {g, b};
}

PackedArgs CudaKernel::prepare(std::span<const KernelArg> args) const {
  return prepare(args, false);
}

PackedArgs CudaKernel::prepare(std::span<const KernelArg> args, bool host_arrays) const {
  const State& s = *state_;
  PackedArgs packed;
  packed.reserve(args.size());
  if (s.o.check_signature && args.size() != s.signature.size()) {
    std::string params;
    for (const auto& p : s.signature) params += (params.empty() ? "" : ", ") + p.text;
    throw TypeError("CudaKernel '" + s.expression + "': " + std::to_string(args.size()) +
                    " argument(s) given, the "
                    "signature has " +
                    std::to_string(s.signature.size()) + " (" + params + ")");
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    void* dst = packed.slot(packed_room(args[i]));
    const std::size_t n =
        s.o.check_signature
            ? detail::pack_argument(
                  s.signature[i], args[i], dst,
                  detail::ArgWhere{s.expression, i, &s.signature[i], false, host_arrays})
            : detail::pack_unchecked(args[i], dst);
    packed.commit(n);
  }
  return packed;
}

void CudaKernel::launch_args(const Launch& launch, std::span<const KernelArg> args) {
  // Where the arguments live: the given stream's backend, else the first device array's, else
  // the calling thread's active backend.
  Backend backend = launch.stream ? launch.stream->backend() : get_backend();
  if (!launch.stream) {
    auto it = std::find_if(args.begin(), args.end(), [](const KernelArg& a) {
      return a.kind == KernelArg::Kind::array && a.backend != Backend::host;
    });
    if (it != args.end()) backend = it->backend;
  }
  run(backend, launch.stream, Mode::queued, launch, args);
}

void CudaKernel::launch_args_on(const Target& target, const Launch& launch,
                                std::span<const KernelArg> args) {
  run(target.backend, launch.stream.value_or(target.stream), Mode::queued, launch, args);
}

void CudaKernel::emulate_args(const Launch& launch, std::span<const KernelArg> args) {
  run(Backend::emulated, std::nullopt, Mode::emulate_now, launch, args);
}

void CudaKernel::run(Backend backend, std::optional<StreamRef> given, Mode mode,
                     const Launch& launch, std::span<const KernelArg> args) {
  State& s = *state_;
  const bool now = mode == Mode::emulate_now;
  std::optional<Dim3> n_threads = launch.n_threads;
  if (!n_threads && !launch.grid) {
    if (s.o.n_threads_of) {
      n_threads = s.o.n_threads_of(args);
    } else if (s.o.n_threads_from == NThreadsFrom::first_array) {
      auto it = std::find_if(args.begin(), args.end(),
                             [](const KernelArg& a) { return a.kind == KernelArg::Kind::array; });
      if (it == args.end())
        throw ValueError("CudaKernel '" + s.name +
                         "': n_threads_from = first_array, but no argument is an array");
      n_threads = Dim3(it->ndim > 0 ? it->shape[0] : 0);
    }
  }
  const std::pair<Dim3, Dim3> shape = launch_shape(n_threads, launch.grid, launch.block);
  const Dim3 grid = shape.first, block = shape.second;
  PackedArgs packed = prepare(args, now);
  if (launch.shared_mem > static_cast<std::size_t>(default_shared_memory_per_block)) {
    const int opt_in = max_shared_memory_per_block(true, backend);
    if (launch.shared_mem > static_cast<std::size_t>(opt_in))
      throw ValueError("CudaKernel '" + s.name + "': " + std::to_string(launch.shared_mem) +
                       " bytes of dynamic shared memory requested, the device allows at most " +
                       std::to_string(opt_in) + " per block; use less or split the work");
  }
  if (grid.product() == 0) return;  // nothing to launch
  Checked checked{grid, block, std::move(packed), launch.shared_mem, given};
  if (backend == Backend::emulated) return launch_emulated(std::move(checked), mode);
  if (backend != Backend::cuda)
    throw BackendError("CudaKernel '" + s.expression +
                       "': a launch needs a device backend (cuda, or emulated for the "
                       "kernel emulator), but no argument is a device array and the active "
                       "backend is " +
                       std::string(to_string(backend)) + " (" + backend_reason() +
                       "); pass device arrays, launch on a device stream or target, or on "
                       "host use a host implementation of the kernel");
  launch_cuda(std::move(checked));
}

// The kernel emulator, on the emulated device's arrays: queued on the stream's worker (the
// default stream runs it now) with the packed argument bytes; debug mode and emulate() run it
// now (debug mode to report errors at the launch).
void CudaKernel::launch_emulated(Checked c, Mode mode) {
  const bool now = mode == Mode::emulate_now;
  const StreamRef stream = c.stream.value_or(current_stream(Backend::emulated));
  const std::shared_ptr<detail::EmulatedKernel> kernel = emulated();  // compiled here, once
  if (!now && stream.backend() == Backend::emulated && !debug_active()) {
    auto args = std::make_shared<PackedArgs>(std::move(c.args));
    std::function<void()> work = [kernel, grid = c.grid, block = c.block, args,
                                  shared = c.shared_mem, counters = detail::atomic_counters_now()] {
      detail::emulate_launch(*kernel, grid, block, args->pointers(), shared, counters);
    };
    if (!detail::emulated_enqueue(stream, work)) work();
    return;
  }
  if (!now) detail::emulated_drain(stream);
  detail::emulate_launch(*kernel, c.grid, c.block, c.args.pointers(), c.shared_mem,
                         detail::atomic_counters_now());
}

// CUDA: the kernel of the loaded CUBIN, launched on the stream through the CUDA door; an
// error of the launch (or, in debug mode, of the kernel's run) names the kernel, grid and block.
void CudaKernel::launch_cuda(Checked c) {
  State& s = *state_;
  compile();
  const auto& loaded = s.program->cuda.kernels;
  void* const kernel = loaded.empty() ? nullptr : loaded[s.index];
  if (kernel == nullptr)
    throw BackendError("CudaKernel '" + s.expression +
                       "': compiled, but CUDA is unavailable to load it (" +
                       cuda_unavailable_reason() + ")");
  if (c.shared_mem > static_cast<std::size_t>(s.shared_limit.load())) {
    std::lock_guard lock(s.mutex);
    detail::cuda_api::set_max_dynamic_shared_memory(kernel, static_cast<int>(c.shared_mem));
    s.shared_limit.store(static_cast<int>(c.shared_mem));
  }
  detail::cuda_api::LaunchDims dims{};
  for (int d = 0; d < 3; ++d) {
    dims.grid[d] = static_cast<unsigned int>(c.grid[d]);
    dims.block[d] = static_cast<unsigned int>(c.block[d]);
  }
  const StreamRef stream = c.stream.value_or(current_stream(Backend::cuda));
  auto named = [&](const CudaError& e, const char* when) {
    std::string where = std::string("CUDA error ") + when + " kernel '" + s.expression +
                        "' with grid " + detail::dims_text(c.grid.x, c.grid.y, c.grid.z) +
                        " and block " + detail::dims_text(c.block.x, c.block.y, c.block.z) + ": ";
    return CudaError(where + e.what(), e.code());
  };
  try {
    detail::cuda_api::launch_kernel(kernel, dims, c.args.pointers(), c.shared_mem,
                                    stream.native_handle(), s.expression.c_str());
  } catch (const CudaError& e) {
    throw named(e, "launching");
  }
  if (debug_active()) {
    try {
      detail::cuda_api::stream_synchronize(stream.native_handle());
      detail::cuda_api::check_last_error("the launch");
    } catch (const CudaError& e) {
      throw named(e, "after launching");
    }
  }
}

}  // namespace cunumpy
