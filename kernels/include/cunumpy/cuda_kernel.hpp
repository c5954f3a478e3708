// cunumpy/cuda_kernel.hpp: CUDA kernels compiled at run time by NVRTC, every argument checked
// against the parsed signature.
//
//   cunumpy::CudaKernel block_sum(R"(
//     extern "C" __global__ void block_sum(const double* x, double* out, int n) { ... })",
//     "block_sum", {.block_size = 128});
//   auto [grid, block] = block_sum.launch_shape(x.size());
//   auto partial = cunumpy::zeros<double>({grid.x});
//   block_sum({.n_threads = x.size(), .shared_mem = 128 * 8}, x, partial, x.size());
//
//   auto scale = cunumpy::CudaKernel(source, "scale", {.template_args = {"double", 3}});
//   scale(cunumpy::threads(n), x, 2.0, n);               // instantiation scale<double, 3>
//
// The source is compiled on first use (or by compile()) to CUBIN for the bound device's
// architecture (sm_90 without a device), with the headers cunumpy ships on the include path,
// through an on-disk cache whose key covers the source, the options, the contents of every
// header the source includes, NVRTC's version, the architecture and cunumpy's version.  The
// image is loaded with the CUDA runtime's library API, so nothing links the driver library.
// Compilation needs no GPU (CI compiles real kernels); a launch needs the cuda backend.
//
// Arguments are checked against the signature (check_signature, the default): pointer
// parameters take device arrays of the pointee's dtype (any for void*) and never host arrays
// (nothing is copied implicitly); Array<n>D<T> views take arrays or strided() views of that
// dtype and rank, packed as (pointer, shape, strides in elements); integers are range-checked
// into integer parameters; floating-point values go into floating-point and complex parameters
// of at least their precision (a double into a float parameter is an error: convert it);
// bools into bool and integer parameters; struct parameters take struct_value<S>(...) of that
// struct.  An argument object (a type with cuda_args() returning a tuple) stands for several
// parameters and is flattened.  The Python reference's keyword arguments are a Launch (the
// first argument) and CudaKernelOptions (designated initialisers).
#pragma once

#include <array>
#include <climits>
#include <cstddef>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <cunumpy/array.hpp>
#include <cunumpy/cuda_signature.hpp>
#include <cunumpy/cuda_struct.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/stream.hpp>
#include <cunumpy/target.hpp>

namespace cunumpy {

namespace detail {
class EmulatedKernel;
struct CompileRequest;
}  // namespace detail
class CudaModule;

// Up to three extents; rank says how many were given.
struct Dim3 {
  long long x = 1, y = 1, z = 1;
  int rank = 1;
  Dim3() = default;
  Dim3(long long x_) : x(x_) {}  // NOLINT: a 1D extent converts
  Dim3(long long x_, long long y_) : x(x_), y(y_), rank(2) {}
  Dim3(long long x_, long long y_, long long z_) : x(x_), y(y_), z(z_), rank(3) {}
  long long operator[](int d) const noexcept { return d == 0 ? x : d == 1 ? y : z; }
  long long product() const noexcept { return x * y * z; }
  friend bool operator==(const Dim3& a, const Dim3& b) noexcept {
    return a.x == b.x && a.y == b.y && a.z == b.z;
  }
};

// How a call launches: n_threads (grid = ceil(n_threads / block) per dimension) or grid;
// block instead of the kernel's block size; dynamic shared memory in bytes; the stream (the
// current one by default).
struct Launch {
  std::optional<Dim3> n_threads;
  std::optional<Dim3> grid;
  std::optional<Dim3> block;
  std::size_t shared_mem = 0;
  std::optional<StreamRef> stream;
};
inline Launch threads(Dim3 n) {
  Launch l;
  l.n_threads = n;
  return l;
}

// A strided view of an array (the C++ form of a NumPy slice): each axis start:stop:step.
struct Slice {
  long long start = 0;
  long long stop = LLONG_MAX;
  long long step = 1;
};
template <Element T, int N>
struct StridedArray {
  Array<T> base;         // keeps the memory alive
  ArrayView<T, N> view;  // pointer, shape and strides in elements
};
namespace detail {
[[noreturn]] void throw_slice(const Shape& shape, int axis, const Slice& s);
}
// ValueError for a step that is not positive, or a rank other than the array's.
template <int N, Element T>
StridedArray<T, N> strided(const Array<T>& a, const std::array<Slice, N>& slices) {
  StridedArray<T, N> out{a, a.template view<N>()};
  for (int d = 0; d < N; ++d) {
    const Slice& s = slices[static_cast<std::size_t>(d)];
    const long long extent = a.shape(d);
    const long long start = std::min(std::max(s.start, 0LL), extent),
                    stop = std::min(std::max(s.stop, start), extent);
    if (s.step <= 0 || s.start < 0) detail::throw_slice(a.shape(), d, s);
    out.view.data += start * out.view.strides[d];
    out.view.shape[d] = (stop - start + s.step - 1) / s.step;
    out.view.strides[d] *= s.step;
  }
  return out;
}

// One kernel argument, type-erased (what a launch checks and packs).
struct KernelArg {
  enum class Kind : std::uint8_t {
    array,
    signed_integer,
    unsigned_integer,
    floating,
    complex,
    boolean,
    structure
  };
  Kind kind = Kind::array;
  DType dtype = DType::float64;  // arrays: the element type; scalars: their own type
  Backend backend = Backend::host;
  int ndim = 0;
  bool contiguous = true;
  bool allocated = true;       // arrays: false for a default-constructed Array (no memory)
  const void* data = nullptr;  // arrays: the elements; structures: the packed bytes
  long long shape[4] = {};
  long long strides[4] = {};  // in elements
  union {
    long long i;
    unsigned long long u;
    double f;
    bool b;
  } value{};
  double imag = 0;                        // complex scalars
  std::size_t bytes = 0;                  // structures
  const CudaStruct* structure = nullptr;  // structures
};

// The type-erased form of each kind of kernel argument: arrays, strided views, scalars,
// complex values, struct values.
template <Element T>
KernelArg kernel_arg(const Array<T>& a) {
  KernelArg k;
  k.kind = KernelArg::Kind::array;
  k.dtype = dtype_of<T>();
  k.backend = a.backend();
  k.ndim = a.ndim();
  k.data = a.data();
  k.allocated = a.memory() != nullptr;
  long long stride = 1;
  for (int d = a.ndim() - 1; d >= 0; --d) {
    k.shape[d] = a.shape()[d];
    k.strides[d] = stride;
    stride *= a.shape()[d];
  }
  return k;
}
template <Element T, int N>
KernelArg kernel_arg(const StridedArray<T, N>& s) {
  KernelArg k = kernel_arg(s.base);
  k.ndim = N;
  k.data = s.view.data;
  long long expect = 1;
  for (int d = N - 1; d >= 0; --d) {
    k.shape[d] = s.view.shape[d];
    k.strides[d] = s.view.strides[d];
    if (s.view.shape[d] != 1 && s.view.strides[d] != expect) k.contiguous = false;
    expect *= s.view.shape[d];
  }
  return k;
}
template <typename T>
requires(std::is_arithmetic_v<T>) KernelArg kernel_arg(T v) {
  KernelArg k;
  if constexpr (std::is_same_v<T, bool>) {
    k.kind = KernelArg::Kind::boolean;
    k.value.b = v;
  } else if constexpr (std::is_floating_point_v<T>) {
    k.kind = KernelArg::Kind::floating;
    k.value.f = static_cast<double>(v);
  } else if constexpr (std::is_signed_v<T>) {
    k.kind = KernelArg::Kind::signed_integer;
    k.value.i = v;
  } else {
    k.kind = KernelArg::Kind::unsigned_integer;
    k.value.u = v;
  }
  k.dtype = dtype_of<T>();
  return k;
}
template <typename T>
KernelArg kernel_arg(const std::complex<T>& v) {
  KernelArg k;
  k.kind = KernelArg::Kind::complex;
  k.dtype = dtype_of<std::complex<T>>();
  k.value.f = static_cast<double>(v.real());
  k.imag = static_cast<double>(v.imag());
  return k;
}
template <typename S>
KernelArg kernel_arg(const CudaStructValue<S>& s) {
  KernelArg k;
  k.kind = KernelArg::Kind::structure;
  k.data = &s.packed();
  k.bytes = sizeof(S);
  k.structure = &s.descriptor();
  return k;
}

// An object that stands for several kernel parameters: cuda_args() returns them as a tuple
// (arrays, scalars, struct values, or argument objects again), flattened into the launch.
// The C++ form of the reference's __cuda_args__ protocol.
template <typename T>
concept CudaArguments = requires(const T& t) {
  std::tuple_size<std::decay_t<decltype(t.cuda_args())>>::value;
};

namespace detail {
// After compiling several kernels: nothing when none failed, the one failure as it was thrown,
// or one CompileError naming every failed kernel with its message.
void rethrow_compile_failures(std::vector<std::pair<std::string, std::exception_ptr>>& failures);

template <typename A>
void append_kernel_args(std::vector<KernelArg>& out, const A& a) {
  if constexpr (CudaArguments<A>) {
    std::apply([&](const auto&... x) { (append_kernel_args(out, x), ...); }, a.cuda_args());
  } else {
    out.push_back(kernel_arg(a));
  }
}

// Where an argument goes, for error messages only (built when one is thrown):
// "CudaKernel 'push' argument 2 ('double* x')" or "struct Particles field 'x'".
struct ArgWhere {
  std::string_view owner;  // the kernel's expression, or the struct's name
  std::size_t index;
  const CudaParameter* param;
  bool field;
  bool host_arrays = false;  // host arrays are accepted (emulate_cuda_kernel)
  std::string str() const;
};
// Checks `arg` against `param` and writes its bytes at `dst` (room for packed_room(arg));
// returns how many.
std::size_t pack_argument(const CudaParameter& param, const KernelArg& arg, void* dst,
                          const ArgWhere& where);
// The bytes of an argument as given (check_signature = false): arrays as their pointer,
// scalars as their own type.
std::size_t pack_unchecked(const KernelArg& arg, void* dst);
}  // namespace detail

// The launch buffer of prepared arguments: each parameter's bytes, and the pointers to them
// that cudaLaunchKernel takes.  Each parameter has room for its own size (a struct of any size,
// a view of up to four dimensions), aligned to 16 bytes.
class PackedArgs {
 public:
  void** pointers() noexcept { return pointers_; }
  std::size_t size() const noexcept { return count_; }
  // The bytes of parameter i.
  std::span<const std::byte> bytes(std::size_t i) const {
    return {static_cast<const std::byte*>(pointers_[i]), sizes_[i]};
  }
  // Room for n parameters of kScalarRoom each (one allocation); slot(bytes) hands out room for
  // the next one, at least `bytes` large (growing the buffer for a large struct), commit()
  // records how many bytes it holds.
  void reserve(std::size_t n);
  void* slot(std::size_t bytes);
  void commit(std::size_t bytes) noexcept;

  // The room every argument that is not a struct fits in: a pointer, a scalar (complex<double>:
  // 16 bytes) or a view of four dimensions (pointer, shape, strides: 72 bytes).
  static constexpr std::size_t kScalarRoom = 72;

 private:
  static constexpr std::size_t kAlign = 16;
  void grow(std::size_t parameters, std::size_t slot_bytes);
  // One block: the pointers, the sizes and the offsets of `capacity_` parameters, then the
  // slots (each kAlign-aligned).
  std::unique_ptr<std::byte[]> block_;
  void** pointers_ = nullptr;
  std::size_t* sizes_ = nullptr;
  std::size_t* offsets_ = nullptr;
  std::byte* slots_ = nullptr;
  std::size_t count_ = 0, capacity_ = 0, slot_bytes_ = 0, used_ = 0, pending_ = 0;
};
// The room argument `arg` needs in a launch buffer.
inline std::size_t packed_room(const KernelArg& arg) noexcept {
  return arg.kind == KernelArg::Kind::structure ? std::max(arg.bytes, PackedArgs::kScalarRoom)
                                                : PackedArgs::kScalarRoom;
}

// The launch shape's source when a call gives neither n_threads nor grid.
enum class NThreadsFrom { none, first_array };

// How a CudaKernel is compiled and launched: the block size, NVRTC's options, include folders,
// the structs and template arguments of its signature, the checks and debug mode.
struct CudaKernelOptions {
  Dim3 block_size = 128;
  std::vector<std::string> options;
  std::vector<std::filesystem::path> include_dirs;
  std::optional<std::filesystem::path> source_dir;
  // The file the source was read from (from_file sets it): compile errors name it.
  std::optional<std::filesystem::path> source_file;
  std::vector<const CudaStruct*> structs;
  std::vector<TemplateArg> template_args;
  bool check_signature = true;
  std::optional<bool> debug;  // nothing: the global setting (set_cuda_debug), read at every launch
  NThreadsFrom n_threads_from = NThreadsFrom::none;
  std::function<Dim3(std::span<const KernelArg>)>
      n_threads_of;  // instead: a function of the arguments
};

// The kernel cache's counters since the process started, for both compilers: NVRTC's CUBIN
// and the kernel emulator's host-compiled libraries share the cache and its counters.
struct KernelCacheStats {
  long long hits = 0;      // compilations served from the disk cache
  long long misses = 0;    // not in the cache: compiled
  long long rejected = 0;  // an entry that was truncated or corrupted: compiled again, rewritten
  long long compiles = 0;  // NVRTC compilations
  long long host_compiles = 0;  // the emulator's compilations by the host compiler
};
KernelCacheStats kernel_cache_stats() noexcept;

// The host compiler the kernel emulator compiles CUDA kernels with on the emulated backend:
// CXX, else c++.
std::string emulation_compiler();

// Whether the emulator compiles kernels with the sanitizers this library was built with
// (CUNUMPY_SANITIZE: AddressSanitizer and UBSan, with debug lines, so an out-of-bounds access
// in a kernel is reported at its line): true when the library is sanitized and
// emulation_compiler() is of the family that built it (a clang++ in a GCC-sanitized process
// compiles unsanitized kernels, said once on stderr: the two runtimes cannot share a process).
bool emulated_kernels_sanitized();

// Debug mode: -lineinfo and -DCUNUMPY_BOUNDS_CHECK are added to the options (unless present),
// and every launch synchronises its stream and throws CudaError naming the kernel, its grid
// and block.  CUNUMPY_CUDA_DEBUG=1 (true, yes, on) enables it at start.  set_cuda_debug sets
// the process default; cuda_debug(on) sets it for the calling thread only, until the scope
// ends (as use_backend does for the backend).  get_cuda_debug() is the calling thread's.
inline constexpr std::array<std::string_view, 2> cuda_debug_options = {"-lineinfo",
                                                                       "-DCUNUMPY_BOUNDS_CHECK"};
void set_cuda_debug(bool enabled) noexcept;
bool get_cuda_debug() noexcept;
class [[nodiscard]] CudaDebugScope {
 public:
  explicit CudaDebugScope(bool enabled) noexcept;
  ~CudaDebugScope();
  CudaDebugScope(const CudaDebugScope&) = delete;
  CudaDebugScope& operator=(const CudaDebugScope&) = delete;

 private:
  bool enabled_;
  bool* previous_;
};
// Debug mode for the calling thread until the scope ends.
[[nodiscard]] inline CudaDebugScope cuda_debug(bool enabled = true) noexcept {
  return CudaDebugScope(enabled);
}

namespace detail {
// set_global / get_global of one value of type T, for a class with set_global_bytes and
// get_global_bytes (CudaKernel, CudaModule).
template <typename Derived>
class GlobalValues {
 public:
  template <typename T>
  requires std::is_trivially_copyable_v<T>
  void set_global(std::string_view name, const T& value, Backend backend = get_backend(),
                  std::source_location where = std::source_location::current()) {
    static_cast<Derived&>(*this).set_global_bytes(
        name, std::as_bytes(std::span<const T>(&value, 1)), backend, where);
  }
  template <typename T>
  requires std::is_trivially_copyable_v<T> T
  get_global(std::string_view name, Backend backend = get_backend(),
             std::source_location where = std::source_location::current()) {
    T value{};
    static_cast<Derived&>(*this).get_global_bytes(
        name, std::as_writable_bytes(std::span<T>(&value, 1)), backend, where);
    return value;
  }
};
}  // namespace detail

// A CUDA kernel compiled at run time: NVRTC on cuda, the kernel emulator on the emulated
// device (see the top of this header).
class CudaKernel : public detail::GlobalValues<CudaKernel> {
 public:
  CudaKernel(std::string source, std::string name, CudaKernelOptions options = {});
  // The kernel of a .cu file: `name` defaults to the file name without `suffix`
  // (axpy_cuda.cu -> axpy); the file's folder is the source_dir and is added to include_dirs.
  static CudaKernel from_file(const std::filesystem::path& path,
                              std::optional<std::string> name = std::nullopt,
                              CudaKernelOptions options = {}, std::string_view suffix = "_cuda.cu");
  // Every __global__ function of a file, in source order: the kernels of one CudaModule (one
  // source, compiled once for all of them).
  static std::vector<std::pair<std::string, CudaKernel>> all_from_file(
      const std::filesystem::path& path, CudaKernelOptions options = {});

  const std::string& name() const noexcept;
  // name, or the template instantiation ("scale<double, 3>").
  const std::string& expression() const noexcept;
  const std::string& source() const noexcept;
  const Dim3& block_size() const noexcept;
  const std::vector<std::string>& options() const noexcept;
  const std::vector<std::filesystem::path>& include_dirs() const noexcept;
  const std::optional<std::filesystem::path>& source_dir() const noexcept;
  const std::vector<const CudaStruct*>& structs() const noexcept;
  const std::vector<TemplateArg>& template_args() const noexcept;
  // The parsed parameters (empty with check_signature = false).
  const std::vector<CudaParameter>& signature() const noexcept;
  bool check_signature() const noexcept;
  std::optional<bool> debug() const noexcept;
  // Whether debug mode applies to this kernel now (its own setting, else the global one).
  bool debug_active() const noexcept;
  // The headers the source includes (resolve_includes over source_dir, include_dirs and
  // cunumpy's headers); recomputed at every call, so it follows the files on disk.
  std::vector<std::filesystem::path> included_headers() const;
  // The options a compilation now would pass: options, debug options, -I for every include
  // folder and cunumpy's headers, -DCUNUMPY_INCLUDE_HASH=0x... when the source includes any
  // header, and the target architecture.
  std::vector<std::string> compile_options() const;
  // "sm_90": the bound device's, or sm_90 without one.
  std::string architecture() const;

  // Compiles (through the cache) and loads the kernel when a device is usable.  CompileError
  // with NVRTC's log when the source does not compile.
  void compile();
  // Readies the image a launch on `backend` runs: NVRTC's (compile()) for cuda and host, the
  // kernel emulator's library (compiled by the host compiler, through the same cache) for
  // emulated, so that the first launch pays no compilation.
  void compile_for(Backend backend);
  bool is_compiled() const noexcept;  // NVRTC's image
  bool is_compiled_for(Backend backend) const noexcept;
  // Whether the image came from the disk cache: NVRTC's once compiled, else the emulator's.
  bool loaded_from_cache() const noexcept;
  // How the kernel emulator runs a block of this kernel (its library compiled first when
  // needed): "loop" (no barrier or warp operation: the threads one after the other, as one
  // loop), "regions" (split at its barriers and warp operations: each piece between two a loop
  // over the threads, then an exchange) or "fibers" (each thread on a stack of its own, meeting
  // the others at each synchronisation).  docs/tour.md says what each costs.
  std::string emulated_as();
  // The file name compile errors give: source_file, else source_dir / name.cu, else name.cu.
  std::string program_name() const;
  const std::string& cubin() const;  // after compile()

  // Module-scope data: a __constant__ or __device__ variable of the kernel's source at global
  // namespace scope, by its name as declared, in the image `backend` runs (cuda: the NVRTC
  // module's, through cudaLibraryGetGlobal; emulated: a variable of the emulator's library),
  // compiled first when needed: the C++ form of CuPy's RawModule.get_global and of
  // cudaMemcpyToSymbol / cudaMemcpyFromSymbol.  Each image holds its own copy, initialised as
  // the source says.  The bytes must be the variable's size (ValueError giving both sizes);
  // a name the source does not define is a ValueError naming the kernel; the host backend is a
  // BackendError (it runs no CUDA kernel).  In order on the backend's current stream; each call
  // is one counted transfer (to_device for set, to_host for get).
  //
  //   kernel.set_global("coef", std::array<double, 3>{1.0, 2.0, 3.0});
  //   const int hits = kernel.get_global<int>("counter");
  void set_global_bytes(std::string_view name, std::span<const std::byte> bytes, Backend backend,
                        std::source_location where = std::source_location::current());
  void get_global_bytes(std::string_view name, std::span<std::byte> out, Backend backend,
                        std::source_location where = std::source_location::current());
  // The variable's size in bytes (no transfer).  set_global(name, value) and
  // get_global<T>(name) (detail::GlobalValues) move one value of a trivially copyable type.
  std::size_t global_bytes(std::string_view name, Backend backend);

  // The (grid, block) a call would use.  ValueError for a block of more than 1024 threads or
  // negative extents, or a launch with neither n_threads nor grid and no n_threads_from.
  std::pair<Dim3, Dim3> launch_shape(std::optional<Dim3> n_threads,
                                     std::optional<Dim3> grid = std::nullopt,
                                     std::optional<Dim3> block = std::nullopt) const;

  // Checks and packs the arguments as a launch would (the part a benchmark measures).
  template <typename... A>
  PackedArgs prepare_args(const A&... args) const {
    if constexpr ((!CudaArguments<A> && ...)) {
      const std::array<KernelArg, sizeof...(A)> flat{kernel_arg(args)...};
      return prepare(flat);
    } else {
      std::vector<KernelArg> flat;
      flat.reserve(sizeof...(A));
      (detail::append_kernel_args(flat, args), ...);
      return prepare(flat);
    }
  }
  PackedArgs prepare(std::span<const KernelArg> args) const;

  // Launches where the arguments live: on the backend of launch.stream when one is given, else
  // of the first device array among the arguments, else the calling thread's active backend.
  // On cuda it runs as a CUDA kernel, on the emulated device through the kernel emulator (the
  // source compiled by the host compiler, every block and thread run, __syncthreads met by
  // all the block's threads); BackendError on host.  Nothing is launched for a grid with a
  // zero extent.
  template <typename... A>
  void operator()(const Launch& launch, const A&... args) {
    with_args([&](std::span<const KernelArg> flat) { launch_args(launch, flat); }, args...);
  }
  void launch_args(const Launch& launch, std::span<const KernelArg> args);
  // Launches on `target` (its backend and, unless launch.stream is given, its stream).
  template <typename... A>
  void launch_on(const Target& target, const Launch& launch, const A&... args) {
    with_args([&](std::span<const KernelArg> flat) { launch_args_on(target, launch, flat); },
              args...);
  }
  void launch_args_on(const Target& target, const Launch& launch, std::span<const KernelArg> args);
  // Runs through the kernel emulator now, on the calling thread, on host arrays or emulated
  // device arrays, whatever the active backend (emulate_cuda_kernel).
  template <typename... A>
  void emulate(const Launch& launch, const A&... args) {
    with_args([&](std::span<const KernelArg> flat) { emulate_args(launch, flat); }, args...);
  }
  void emulate_args(const Launch& launch, std::span<const KernelArg> args);

  struct State;
  struct Program;

 private:
  friend class CudaModule;
  template <typename F, typename... A>
  static void with_args(F&& f, const A&... args) {
    if constexpr ((!CudaArguments<A> && ...)) {
      const std::array<KernelArg, sizeof...(A)> flat{kernel_arg(args)...};
      f(std::span<const KernelArg>(flat));
    } else {
      std::vector<KernelArg> flat;
      flat.reserve(sizeof...(A));
      (detail::append_kernel_args(flat, args), ...);
      f(std::span<const KernelArg>(flat));
    }
  }
  enum class Mode { queued, emulate_now };
  void run(Backend backend, std::optional<StreamRef> stream, Mode mode, const Launch& launch,
           std::span<const KernelArg> args);
  // The launchers, one per backend, behind run(): a checked launch (its grid and block, its
  // packed arguments) on the kernel emulator or on CUDA.
  struct Checked {
    Dim3 grid, block;
    PackedArgs args;
    std::size_t shared_mem = 0;
    std::optional<StreamRef> stream;
  };
  void launch_emulated(Checked launch, Mode mode);
  void launch_cuda(Checked launch);
  PackedArgs prepare(std::span<const KernelArg> args, bool host_arrays) const;
  explicit CudaKernel(std::shared_ptr<State> state) : state_(std::move(state)) {}
  // Kernel `index` of `program`, named `name` (instantiated with `template_args`).
  static std::shared_ptr<State> make_state(std::shared_ptr<Program> program, std::size_t index,
                                           std::string name,
                                           std::vector<TemplateArg> template_args);
  std::shared_ptr<detail::EmulatedKernel> emulated() const;
  std::vector<std::string> options_for(std::span<const std::filesystem::path> headers,
                                       const std::string& arch) const;
  // What either compiler compiles this kernel's program from (the headers resolved once).
  detail::CompileRequest request() const;
  // The device address of module-scope variable `name` in the image `backend` runs, and its size.
  void* global_address(std::string_view name, Backend backend, std::size_t* bytes);
  std::shared_ptr<State> state_;
};

// A kernel of a module: its name and, for a kernel template, the arguments of the
// instantiation.
struct ModuleKernel {
  std::string name;
  std::vector<TemplateArg> template_args;
  ModuleKernel(const char* name_) : name(name_) {}                     // NOLINT: implicit by design
  ModuleKernel(std::string name_, std::vector<TemplateArg> args = {})  // NOLINT
      : name(std::move(name_)), template_args(std::move(args)) {}
};

// Several kernels of one source compiled once: one NVRTC program and one CUBIN on cuda (a
// name expression per kernel), one host-compiled library on the emulated device, one cache
// entry for each, and one copy of the module-scope data (__constant__ and __device__
// variables) that every kernel of the module sees.  The C++ form of CuPy's RawModule
// (get_function, get_global) and of a jitify2 program with several name expressions.
//
//   cunumpy::CudaModule pic(source, {"deposit", "push", {"scale", {"double", 3}}});
//   cunumpy::CudaKernel push = pic.kernel("push");      // a CudaKernel like any other
//   pic.set_global("dt", 0.1, cunumpy::Backend::emulated);  // seen by all three kernels
//   push(cunumpy::threads(n), x, v, n);
//
// The options (block size, NVRTC options, include folders, structs, checks, debug) are the
// module's, for each kernel; each kernel's arguments are checked against its own signature.
// A kernel that is not listed is not compiled (NVRTC compiles only what is named).
class CudaModule : public detail::GlobalValues<CudaModule> {
 public:
  // ValueError for an empty or repeated list, or options.template_args (give each template
  // kernel's arguments with its name).
  CudaModule(std::string source, std::vector<ModuleKernel> kernels, CudaKernelOptions options = {});
  // The module of a .cu file: the given kernels, else every __global__ function the file
  // defines (name a kernel template with its arguments); the file's folder is the source_dir
  // and the first include folder, as in CudaKernel::from_file.
  static CudaModule from_file(const std::filesystem::path& path,
                              std::vector<ModuleKernel> kernels = {},
                              CudaKernelOptions options = {});

  // The kernel named `expression` (its name, or its instantiation "scale<double, 3>", blanks
  // ignored), a handle sharing the module's images; ValueError listing the module's kernels.
  CudaKernel kernel(std::string_view expression) const;
  const std::vector<CudaKernel>& kernels() const noexcept { return kernels_; }
  std::size_t size() const noexcept { return kernels_.size(); }
  const std::string& source() const;
  // The file compile errors give (CudaKernel::program_name of the first kernel).
  std::string program_name() const;

  // Compiles every kernel of the module at once (CudaKernel::compile and compile_for).
  void compile();
  void compile_for(Backend backend);
  bool is_compiled_for(Backend backend) const;
  bool loaded_from_cache() const;

  // The module-scope data of the image `backend` runs, shared by all its kernels (see
  // CudaKernel::set_global_bytes).
  void set_global_bytes(std::string_view name, std::span<const std::byte> bytes, Backend backend,
                        std::source_location where = std::source_location::current());
  void get_global_bytes(std::string_view name, std::span<std::byte> out, Backend backend,
                        std::source_location where = std::source_location::current());
  std::size_t global_bytes(std::string_view name, Backend backend);

 private:
  // The first kernel (Error for a moved-from module).
  const CudaKernel& first() const;
  CudaKernel& first();
  std::vector<CudaKernel> kernels_;
};

// One kernel per key, created by the factory on first use.
template <typename... Key>
class CudaKernelVariants {
 public:
  using KeyTuple = std::tuple<Key...>;
  explicit CudaKernelVariants(std::function<CudaKernel(const Key&...)> factory)
      : factory_(std::move(factory)) {}

  CudaKernel& get(const Key&... key) {
    std::lock_guard lock(mutex_);
    auto it = kernels_.find(KeyTuple(key...));
    if (it == kernels_.end()) it = kernels_.emplace(KeyTuple(key...), factory_(key...)).first;
    return it->second;
  }
  std::vector<KeyTuple> keys() const {
    std::lock_guard lock(mutex_);
    std::vector<KeyTuple> out;
    for (const auto& [k, v] : kernels_) out.push_back(k);
    return out;
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return kernels_.size();
  }
  // Creates the given variants and readies every variant for the active backend (compile_for:
  // NVRTC, or the emulator's library on emulated), `jobs` at a time in threads, all of them
  // even if some fail; then one failure is rethrown as it is, several as one CompileError
  // naming each kernel with its message.
  void compile_all(std::span<const KeyTuple> keys = {}, int jobs = 1) {
    for (const KeyTuple& k : keys) std::apply([&](const Key&... key) { (void)get(key...); }, k);
    std::vector<CudaKernel*> all;
    {
      std::lock_guard lock(mutex_);
      for (auto& [k, v] : kernels_) all.push_back(&v);
    }
    compile_kernels(all, jobs);
  }

 private:
  // Readies each kernel for the calling thread's active backend (compile_for).
  static void compile_kernels(std::span<CudaKernel* const> kernels, int jobs) {
    const Backend backend = get_backend();
    std::mutex m;
    std::size_t next = 0;
    std::vector<std::pair<std::string, std::exception_ptr>> failures;
    auto work = [&] {
      for (;;) {
        CudaKernel* k = nullptr;
        {
          std::lock_guard lock(m);
          if (next == kernels.size()) return;
          k = kernels[next++];
        }
        try {
          k->compile_for(backend);
        } catch (...) {
          std::lock_guard lock(m);
          failures.emplace_back(k->expression(), std::current_exception());
        }
      }
    };
    std::vector<std::thread> threads;
    for (int j = 1; j < std::max(1, jobs); ++j) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    detail::rethrow_compile_failures(failures);
  }

  std::function<CudaKernel(const Key&...)> factory_;
  mutable std::mutex mutex_;
  std::map<KeyTuple, CudaKernel> kernels_;
};

// ---- struct values ------------------------------------------------------------------------

namespace detail {
template <typename A>
void keep_alive(std::vector<std::shared_ptr<const void>>& keep, const A& a) {
  if constexpr (requires { a.memory(); }) {
    keep.push_back(a.memory());
  } else if constexpr (requires { a.base.memory(); }) {
    keep.push_back(a.base.memory());
  }
}
[[noreturn]] void throw_struct_fields(const CudaStruct& s, std::size_t given);
}  // namespace detail

// The struct S with its fields from `fields` (in field order), each checked like a kernel
// argument against the field's type; the value keeps the arrays alive.
template <typename S, typename... A>
CudaStructValue<S> struct_value(const A&... fields) {
  const CudaStruct& d = cuda_struct<S>();
  if (sizeof...(A) != d.fields().size()) detail::throw_struct_fields(d, sizeof...(A));
  CudaStructValue<S> v;
  const KernelArg args[] = {kernel_arg(fields)...};
  auto* base = reinterpret_cast<unsigned char*>(&v.packed_);
  for (std::size_t i = 0; i < sizeof...(A); ++i) {
    // Packed in a buffer of the argument's room, then copied into the field (a nested struct
    // of any size included).
    std::vector<std::max_align_t> bytes(packed_room(args[i]) / sizeof(std::max_align_t) + 1);
    const std::size_t n =
        detail::pack_argument(d.parameters()[i], args[i], bytes.data(),
                              detail::ArgWhere{d.name(), i, &d.parameters()[i], true});
    std::memcpy(base + d.fields()[i].offset, bytes.data(), std::min(n, d.fields()[i].size));
  }
  (detail::keep_alive(v.keep_, fields), ...);
  return v;
}

}  // namespace cunumpy

namespace cunumpy {

// An argument object that is one struct S (the reference's CudaStructArguments): Derived
// gives fields(), a tuple of the fields' current values in field order (arrays, scalars;
// members or whatever the owner holds now), and passes itself to kernels.  The packed struct
// always matches them: at every use the arrays' addresses, shapes and strides and the scalars'
// values are compared with what was packed, and the struct is packed again when anything
// changed (an array replaced or reallocated, a count changed), so a resized array is picked
// up at the next launch without any call.
//
//   struct Markers : cunumpy::CudaStructArguments<Markers, MarkerArgs> {
//     cunumpy::Array<double> markers;  cunumpy::Array<bool> valid;
//     auto fields() const { return std::make_tuple(markers, markers.shape(0), valid); }
//   };
//   push(cunumpy::threads(n), markers_args, dt);
template <typename Derived, typename S>
class CudaStructArguments {
 public:
  // The packed struct of the current field values.
  const CudaStructValue<S>& packed() const {
    const auto fields = static_cast<const Derived&>(*this).fields();
    auto now = std::apply(
        [](const auto&... f) { return std::array<KernelArg, sizeof...(f)>{kernel_arg(f)...}; },
        fields);
    if (!value_ || !same(now)) {
      value_ = std::apply([](const auto&... f) { return struct_value<S>(f...); }, fields);
      last_.assign(now.begin(), now.end());
      ++packs_;
    }
    return *value_;
  }
  auto cuda_args() const { return std::forward_as_tuple(packed()); }
  // How many times the struct was packed (once, then once per change).
  long long packs() const noexcept { return packs_; }

 private:
  template <std::size_t N>
  bool same(const std::array<KernelArg, N>& now) const {
    if (last_.size() != N) return false;
    for (std::size_t i = 0; i < N; ++i) {
      const KernelArg &a = now[i], &b = last_[i];
      if (a.kind != b.kind || a.dtype != b.dtype || a.data != b.data || a.ndim != b.ndim ||
          a.value.u != b.value.u || a.imag != b.imag)
        return false;
      for (int d = 0; d < a.ndim; ++d)
        if (a.shape[d] != b.shape[d] || a.strides[d] != b.strides[d]) return false;
    }
    return true;
  }
  mutable std::optional<CudaStructValue<S>> value_;
  mutable std::vector<KernelArg> last_;
  mutable long long packs_ = 0;
};

// Runs `kernel` through the kernel emulator now, on the calling thread's turn, whatever the
// active backend: host arrays (and emulated device arrays) are used in place, as the Python
// emulate_cuda_kernel takes NumPy arrays.  So a test compares a CUDA kernel with its host
// version on host data, with no device and no transfer.  The same argument checks as a launch.
//
//   cunumpy::emulate_cuda_kernel(axpy, cunumpy::threads(n), 2.0, x, y, n);   // x, y host arrays
template <typename... A>
void emulate_cuda_kernel(CudaKernel& kernel, const Launch& launch, const A&... args) {
  kernel.emulate(launch, args...);
}

}  // namespace cunumpy
