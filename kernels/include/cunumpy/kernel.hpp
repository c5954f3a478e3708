// cunumpy/kernel.hpp: a host kernel and its CUDA twin behind one call, and host kernels that
// take device data.
//
//   void push_host(const cn::Array<double>& x, const cn::Array<double>& v, double dt, long long n);
//   cn::Kernel push("push", push_host, cn::CudaKernel::from_file("push/push_cuda.cu"));
//   push(cn::threads(n), x, v, dt, n);     // host kernel on host, CUDA kernel on cuda / emulated
//
//   cn::HostKernel smooth("smooth", smooth_host, {.outputs = std::vector{1}});
//   smooth(field, out);                    // device arrays: copied to the host and back (counted)
//
// Python -> C++: PyccelKernel -> HostKernel (it wraps any host callable: an OpenMP loop, a
// Fortran routine, a library call); Kernel(host, cuda, dispatch=..., missing_cuda=...) ->
// Kernel(name, host, cuda, {.dispatch, .missing_cuda}), with the launch shape (cn::Launch)
// as the first argument of every call (the host kernel ignores it); KernelArguments
// (__host_args__ / __cuda_args__) -> a type with host_args() and cuda_args() members;
// resolve_host_args -> resolve_host_args(args...) (a tuple); object_modules -> a type that
// opts in with a for_each_array(f) member; as_kernel_array / kernel_output -> the functions
// of the same names (kernel_output is a scope object).  `fuse` has no C++ form: a
// parallel_for body already is one fused kernel,
//   cn::parallel_for("axpy_then_scale", n,
//                    CUNUMPY_LAMBDA(long long i) { y(i) = 2 * (a * x(i) + y(i)); });
//
// Conversion events (count_transfers): one kernel_conversion event per converted call, naming
// the kernel and the number of arrays; a Kernel's fallback adds one fallback event.  The
// copies a conversion makes are counted by those events, not as to_host / to_device.  C++ gives
// a variadic call no caller location, so the events' place is where the kernel was defined.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cunumpy/array.hpp>
#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/ledger.hpp>
#include <cunumpy/transfer.hpp>

namespace cunumpy {

// Which kernel a call runs: the active backend's (backend), or the CUDA kernel when any
// top-level argument lives on the device (arrays), else the host function directly.
enum class Dispatch { backend, arrays };
// A call that needs the CUDA kernel of a Kernel without one: an error, or the host kernel on
// host copies of the device arrays (slow: every call copies; a warning once).
enum class MissingCuda { raise, fallback };

// An argument object with a host form (what the host kernel receives in its position).
template <typename T>
concept HostArguments = requires(const T& t) {
  t.host_args();
};

// An object whose arrays a HostKernel converts: for_each_array(f) calls f(array) for each
// Array member (f takes the array by reference and may replace it).  The C++ form of the
// Python object_modules: the type opts in.
template <typename T>
concept ArrayHolder = requires(T& t) {
  t.for_each_array([](auto&) {});
};

namespace detail {

template <typename T>
struct is_array_type : std::false_type {};
template <typename T>
struct is_array_type<Array<T>> : std::true_type {};
template <typename T>
inline constexpr bool is_array_v = is_array_type<std::remove_cvref_t<T>>::value;

template <typename T>
struct is_vector_type : std::false_type {};
template <typename T, typename A>
struct is_vector_type<std::vector<T, A>> : std::true_type {};
template <typename T>
struct is_tuple_like : std::false_type {};
template <typename... T>
struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <typename A, typename B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <typename T>
struct is_std_array : std::false_type {};
template <typename T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};
template <typename T>
struct is_map_type : std::false_type {};
template <typename K, typename V, typename C, typename A>
struct is_map_type<std::map<K, V, C, A>> : std::true_type {};
template <typename K, typename V, typename H, typename E, typename A>
struct is_map_type<std::unordered_map<K, V, H, E, A>> : std::true_type {};

template <typename V>
decltype(auto) host_form(V&& v) {
  if constexpr (HostArguments<std::remove_cvref_t<V>>) {
    return v.host_args();
  } else {
    return std::forward<V>(v);
  }
}

// Calls f(array) for every Array in `v`: itself, the elements of vectors, std::arrays, tuples
// and pairs, the values of maps (recursively), the arrays of an ArrayHolder.
template <typename V, typename F>
void visit_arrays(V& v, F& f) {
  using T = std::remove_cvref_t<V>;
  if constexpr (is_array_type<T>::value) {
    f(v);
  } else if constexpr (is_vector_type<T>::value || is_std_array<T>::value) {
    for (auto& e : v) visit_arrays(e, f);
  } else if constexpr (is_map_type<T>::value) {
    for (auto& entry : v) visit_arrays(entry.second, f);
  } else if constexpr (is_tuple_like<T>::value) {
    std::apply([&](auto&... e) { (visit_arrays(e, f), ...); }, v);
  } else if constexpr (ArrayHolder<T>) {
    v.for_each_array([&](auto& a) { visit_arrays(a, f); });
  }
}

template <typename V>
bool has_device_array(const V& v) {
  bool found = false;
  auto f = [&](const auto& a) { found = found || a.is_device(); };
  visit_arrays(const_cast<V&>(v), f);
  return found;
}

// A device-only argument: a device array, or an object with cuda_args() and no host form.
template <typename V>
bool lives_on_device(const V& v) {
  using T = std::remove_cvref_t<V>;
  if constexpr (is_array_type<T>::value) {
    return v.is_device();
  } else if constexpr (CudaArguments<T> && !HostArguments<T>) {
    return true;
  } else {
    return false;
  }
}
template <typename V>
Backend device_of(const V& v) {
  using T = std::remove_cvref_t<V>;
  if constexpr (is_array_type<T>::value) {
    return v.is_device() ? v.backend() : Backend::host;
  } else {
    return Backend::host;
  }
}

// The host copies of one converted call: one per device buffer (aliasing kept), the
// positions each came from, and the copies back.
class Conversion {
 public:
  explicit Conversion(int count) : count_(count) {}

  template <typename T>
  Array<T> to_host_copy(const Array<T>& a, int position) {
    if (!a.is_device()) return a;
    for (Entry& e : entries_)
      if (e.device_data == a.data() && e.bytes == a.nbytes()) {
        e.positions.push_back(position);
        return *static_cast<const Array<T>*>(e.host.get());
      }
    Array<T> h = empty<T>(a.shape(), Backend::host);
    copy_memory(h.data(), Backend::host, a.data(), a.backend(), a.nbytes());
    Entry e;
    e.device_data = a.data();
    e.bytes = a.nbytes();
    e.device_backend = a.backend();
    e.host_data = h.data();
    e.host = std::make_shared<Array<T>>(h);
    e.positions.push_back(position);
    entries_.push_back(std::move(e));
    return h;
  }

  // Copies back every array seen at a position of `outputs` (each buffer once); all of them
  // when outputs is nullopt.
  void copy_back(const std::optional<std::vector<int>>& outputs) {
    for (const Entry& e : entries_) {
      bool write = !outputs.has_value();
      if (outputs)
        for (int p : e.positions)
          for (int o : *outputs)
            if (p == (o < 0 ? count_ + o : o)) write = true;
      if (write) copy_memory(e.device_data, e.device_backend, e.host_data, Backend::host, e.bytes);
    }
  }
  int arrays() const noexcept { return static_cast<int>(entries_.size()); }
  Backend device() const noexcept {
    return entries_.empty() ? Backend::host : entries_.front().device_backend;
  }

 private:
  struct Entry {
    void* device_data = nullptr;
    const void* host_data = nullptr;
    std::size_t bytes = 0;
    Backend device_backend = Backend::host;
    std::shared_ptr<const void> host;
    std::vector<int> positions;
  };
  int count_;
  std::vector<Entry> entries_;
};

// The converted form of one argument: host copies of its arrays (a value), or the argument
// itself (a reference) when it holds no array.
template <typename V>
decltype(auto) convert_argument(V& v, Conversion& c, int position) {
  using T = std::remove_cvref_t<V>;
  if constexpr (is_array_type<T>::value) {
    return c.to_host_copy(v, position);
  } else if constexpr (is_vector_type<T>::value || is_std_array<T>::value ||
                       is_map_type<T>::value || is_tuple_like<T>::value || ArrayHolder<T>) {
    T copy = v;  // the caller's object keeps its device arrays
    auto f = [&](auto& a) { a = c.to_host_copy(a, position); };
    visit_arrays(copy, f);
    return copy;
  } else {
    return static_cast<V&>(v);
  }
}

// A returned value with its host arrays moved to `device` (arrays, tuples, pairs, vectors).
template <typename R>
R result_to_device(R r, Backend device) {
  auto f = [&](auto& a) {
    if (a.is_host()) {
      using A = std::remove_cvref_t<decltype(a)>;
      A d = A(a.shape(), device);
      copy_memory(d.data(), device, a.data(), Backend::host, a.nbytes());
      a = d;
    }
  };
  visit_arrays(r, f);
  return r;
}

void record_conversion(const std::string& kernel, int arrays, const std::source_location& where);
[[noreturn]] void throw_output_index(const std::string& kernel, int index, int arguments);
void record_fallback(const std::string& kernel, const std::source_location& where);
// Prints the fallback warning the first time `flag` is seen unset.
void warn_fallback_once(std::atomic<bool>& flag, const std::string& kernel,
                        const std::string& cuda_path);

}  // namespace detail

// The arguments with every HostArguments object replaced by its host_args(); the others are
// passed on as they are (references).
template <typename... A>
auto resolve_host_args(A&&... args) {
  return std::tuple<decltype(detail::host_form(std::forward<A>(args)))...>(
      detail::host_form(std::forward<A>(args))...);
}

// The type of a Kernel's parameters as a C++ host function declares them, for the signature
// check: nothing for a generic lambda.
namespace detail {
template <typename F, typename = void>
struct host_signature {
  static constexpr bool known = false;
  using args = std::tuple<>;
};
template <typename R, typename... A>
struct host_signature<R (*)(A...)> {
  static constexpr bool known = true;
  using args = std::tuple<A...>;
};
template <typename R, typename... A>
struct host_signature<R(A...)> : host_signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct host_signature<R (C::*)(A...) const> : host_signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct host_signature<R (C::*)(A...)> : host_signature<R (*)(A...)> {};
template <typename F>
struct host_signature<F, std::void_t<decltype(&F::operator())>>
    : host_signature<decltype(&F::operator())> {};

// A host data pointer where the host function takes a pointer to an Array's elements: a legacy
// routine of raw pointers and scalars is a host kernel as it is.
template <typename P, typename V>
inline constexpr bool pointer_parameter_v = [] {
  using T = std::remove_cvref_t<V>;
  if constexpr (std::is_pointer_v<P> && is_array_type<T>::value)
    return std::is_same_v<std::remove_cv_t<std::remove_pointer_t<P>>, typename T::value_type>;
  else
    return false;
}();

template <typename P, typename V>
decltype(auto) as_host_parameter(V&& v) {
  if constexpr (pointer_parameter_v<P, V>)
    return static_cast<P>(v.data());
  else
    return std::forward<V>(v);
}

// Whether F can be called with A..., adapted as above.
template <typename F, typename... A>
constexpr bool host_callable() {
  using S = host_signature<std::remove_cvref_t<F>>;
  if constexpr (std::is_invocable_v<const F&, A...>) {
    return true;
  } else if constexpr (S::known) {
    if constexpr (std::tuple_size_v<typename S::args> != sizeof...(A)) {
      return false;
    } else {
      return []<std::size_t... I>(std::index_sequence<I...>) {
        return std::is_invocable_v<
            const F&, decltype(as_host_parameter<std::tuple_element_t<I, typename S::args>>(
                          std::declval<A>()))...>;
      }
      (std::index_sequence_for<A...>{});
    }
  } else {
    return false;
  }
}

template <typename F, typename... A>
decltype(auto) invoke_host(const F& f, A&&... args) {
  using S = host_signature<std::remove_cvref_t<F>>;
  if constexpr (std::is_invocable_v<const F&, A...>) {
    return std::invoke(f, std::forward<A>(args)...);
  } else if constexpr (S::known && std::tuple_size_v<typename S::args> == sizeof...(A)) {
    return [&]<std::size_t... I>(std::index_sequence<I...>)->decltype(auto) {
      return std::invoke(f, as_host_parameter<std::tuple_element_t<I, typename S::args>>(
                                std::forward<A>(args))...);
    }
    (std::index_sequence_for<A...>{});
  }
}

template <typename...>
inline constexpr bool always_false_v = false;
}  // namespace detail

// Which arguments a HostKernel may write, and how it converts device arrays.
struct HostKernelOptions {
  // The arguments the function may write, by position (negative: from the end); the others
  // are not copied back.  nullopt: every converted array is copied back (correct, twice the
  // transfers); {} : nothing is.
  std::optional<std::vector<int>> outputs;
  // Force the conversion on (true) or off (false); nullopt: when the active backend is a
  // device or a device array is among the arguments.
  std::optional<bool> convert;
};

// A host function that can be called with device arrays (the Python PyccelKernel).  Without
// device data (and on the host backend) it calls the function directly at the cost of a type
// check per argument; else it copies the device arrays it is given (also inside vectors,
// tuples and ArrayHolder objects, which are copied so the caller's keep their device arrays)
// to the host, calls, copies back the declared outputs, and moves returned arrays to the
// device.  One device array passed twice is one host copy.
// A parameter T* or const T* given an Array<T> receives the array's host data: a legacy routine
// of raw pointers and scalars is a host kernel without a wrapper.
template <typename F>
class HostKernel {
 public:
  HostKernel(std::string name, F function, HostKernelOptions options = {},
             std::source_location where = std::source_location::current())
      : name_(std::move(name)),
        function_(std::move(function)),
        options_(std::move(options)),
        where_(where) {}

  template <typename... A>
  decltype(auto) operator()(A&&... args) const {
    return call(options_.convert, std::forward<A>(args)...);
  }

  // A call with the conversion forced on or off (nullopt: decided by the arguments).
  template <typename... A>
  decltype(auto) call(std::optional<bool> convert, A&&... args) const {
    return call_resolved(convert, detail::host_form(std::forward<A>(args))...);
  }

  const std::string& name() const noexcept { return name_; }
  const F& function() const noexcept { return function_; }
  const HostKernelOptions& options() const noexcept { return options_; }
  const std::source_location& where() const noexcept { return where_; }

 private:
  template <typename... A>
  decltype(auto) call_resolved(std::optional<bool> convert, A&&... args) const {
    if (options_.outputs)
      for (const int o : *options_.outputs)
        if (o >= static_cast<int>(sizeof...(A)) || o < -static_cast<int>(sizeof...(A)))
          detail::throw_output_index(name_, o, static_cast<int>(sizeof...(A)));
    if constexpr (!detail::host_callable<F, A...>()) {
      static_assert(detail::always_false_v<A...>,
                    "cunumpy::HostKernel: the host function cannot take these arguments. Each "
                    "Array<T> argument needs a parameter const Array<T>&, Array<T>, T* or const T* "
                    "(the same T); scalars convert as in a C++ call; the count must match");
    } else {
      const bool needed = convert.value_or(get_backend() != Backend::host ||
                                           (detail::has_device_array(args) || ...));
      if (!needed) return detail::invoke_host(function_, std::forward<A>(args)...);
      return converted(std::forward<A>(args)...);
    }
  }

  template <typename... A>
  auto converted(A&&... args) const {
    constexpr int count = static_cast<int>(sizeof...(A));
    detail::Conversion c(count);
    // Brace initialisation evaluates left to right: positions and aliasing are in order.
    auto host_args = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<decltype(detail::convert_argument(args, c, 0))...>{
          detail::convert_argument(args, c, static_cast<int>(I))...};
    }
    (std::index_sequence_for<A...>{});
    const Backend device = c.device() == Backend::host ? get_backend() : c.device();
    auto run = [&](auto&&... a) -> decltype(auto) {
      return detail::invoke_host(function_, std::forward<decltype(a)>(a)...);
    };
    using R = decltype(std::apply(run, host_args));
    if constexpr (std::is_void_v<R>) {
      std::apply(run, host_args);
      c.copy_back(options_.outputs);
      detail::record_conversion(name_, c.arrays(), where_);
    } else {
      R r = std::apply(run, host_args);
      c.copy_back(options_.outputs);
      detail::record_conversion(name_, c.arrays(), where_);
      if constexpr (std::is_reference_v<R>) {
        return r;
      } else {
        return device == Backend::host ? std::move(r)
                                       : detail::result_to_device(std::move(r), device);
      }
    }
  }

  std::string name_;
  F function_;
  HostKernelOptions options_;
  std::source_location where_;
};

namespace detail {
// One host parameter as the CUDA side sees it.
struct HostParameter {
  enum class Kind { array, scalar, object, unknown } kind = Kind::unknown;
  std::optional<DType> dtype;  // arrays and scalars
  std::string struct_name;     // a struct value (or struct arguments object)
  std::string text;            // how the host declares it, e.g. "Array<float64>", "double"
};

template <typename T>
std::string_view host_type_text() {
  if constexpr (std::is_same_v<T, bool>)
    return "bool";
  else if constexpr (Element<T>)
    return ctype_of<T>();
  else
    return "an argument object";
}

template <typename A>
void host_parameters_of(std::vector<HostParameter>& out) {
  using T = std::remove_cvref_t<A>;
  HostParameter p;
  if constexpr (is_array_type<T>::value) {
    using E = typename T::value_type;
    p.kind = HostParameter::Kind::array;
    p.dtype = dtype_of<E>();
    p.text = "Array<" + std::string(dtype_name<E>()) + ">";
    out.push_back(std::move(p));
  } else if constexpr (std::is_pointer_v<T> &&
                       Element<std::remove_cv_t<std::remove_pointer_t<T>>>) {
    using E = std::remove_cv_t<std::remove_pointer_t<T>>;
    p.kind = HostParameter::Kind::array;  // a legacy routine's pointer, given an Array's data
    p.dtype = dtype_of<E>();
    p.text = std::string(std::is_const_v<std::remove_pointer_t<T>> ? "const " : "") +
             std::string(ctype_of<E>()) + "*";
    out.push_back(std::move(p));
  } else if constexpr (std::is_arithmetic_v<T> || is_complex<T>::value) {
    p.kind = HostParameter::Kind::scalar;
    if constexpr (Element<T>) p.dtype = dtype_of<T>();
    p.text = std::string(host_type_text<T>());
    out.push_back(std::move(p));
  } else if constexpr (CudaArguments<T>) {
    // An object with a device form stands for the parameters its cuda_args() gives.
    using Flat = std::remove_cvref_t<decltype(std::declval<const T&>().cuda_args())>;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (host_parameters_of<std::tuple_element_t<I, Flat>>(out), ...);
    }
    (std::make_index_sequence<std::tuple_size_v<Flat>>{});
  } else if constexpr (requires { T::cuda_struct_name(); }) {
    p.kind = HostParameter::Kind::object;
    p.struct_name = T::cuda_struct_name();
    p.text = "struct " + p.struct_name;
    out.push_back(std::move(p));
  } else {
    p.kind = HostParameter::Kind::unknown;
    p.text = "an object";
    out.push_back(std::move(p));
  }
}

template <typename F>
std::optional<std::vector<HostParameter>> host_parameters() {
  using S = host_signature<std::remove_cvref_t<F>>;
  if constexpr (!S::known) {
    return std::nullopt;
  } else {
    std::vector<HostParameter> out;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (host_parameters_of<std::tuple_element_t<I, typename S::args>>(out), ...);
    }
    (std::make_index_sequence<std::tuple_size_v<typename S::args>>{});
    return out;
  }
}

// ValueError showing both lists when the host parameters and the CUDA signature differ;
// `host_names` (optional) are compared with the CUDA parameter names.
void check_kernel_signature(const std::string& kernel, const std::vector<HostParameter>& host,
                            const std::vector<std::string>& host_names,
                            const std::vector<CudaParameter>& cuda);
// The difference as text (empty: none).
std::string kernel_signature_difference(const std::string& kernel,
                                        const std::vector<HostParameter>& host,
                                        const std::vector<std::string>& host_names,
                                        const std::vector<CudaParameter>& cuda);
}  // namespace detail

// How a Kernel chooses between its host and CUDA sides, and what it does without a CUDA side.
struct KernelOptions {
  Dispatch dispatch = Dispatch::backend;
  MissingCuda missing_cuda = MissingCuda::raise;
  std::string cuda_path;                     // where the CUDA source is expected (for messages)
  HostKernelOptions host;                    // the host kernel's conversion (the fallback path)
  std::vector<std::string> host_parameters;  // the host parameters' names, for check_signature
  bool check_signature = true;
};

// What a catalog knows of a kernel, whatever its argument types.
class KernelBase {
 public:
  virtual ~KernelBase() = default;
  const std::string& name() const noexcept { return name_; }
  const KernelOptions& options() const noexcept { return options_; }
  Dispatch dispatch() const noexcept { return options_.dispatch; }
  MissingCuda missing_cuda() const noexcept { return options_.missing_cuda; }
  const std::string& cuda_path() const noexcept { return options_.cuda_path; }
  virtual bool has_cuda() const noexcept = 0;
  // Readies the CUDA kernel for the calling thread's active backend now (NVRTC, or the kernel
  // emulator's library on emulated; nothing for an nvcc-compiled one); whether there is one.
  virtual bool compile() = 0;
  // ValueError showing both parameter lists when the host and CUDA kernels differ; nothing
  // without a CUDA kernel, with check_signature = false, or when the host side has no fixed
  // parameter types (a generic lambda).
  virtual void check_signature() const = 0;
  // The difference check_signature() would report (empty: none or nothing to check).
  virtual std::string signature_difference() const = 0;
  // The host parameters as the check sees them ("Array<float64>", "double", ...), or nothing.
  virtual std::optional<std::vector<std::string>> host_parameters() const = 0;
  // The kernel a call on the calling thread's active backend runs: "host", "cuda" or
  // "host (fallback)"; BackendError when it needs a missing CUDA kernel and missing_cuda is
  // raise (call it once at setup to fail early).
  virtual std::string get_kernel() const = 0;

 protected:
  KernelBase(std::string name, KernelOptions options)
      : name_(std::move(name)), options_(std::move(options)) {}
  std::string name_;
  KernelOptions options_;
  mutable std::atomic<bool> warned_{false};
};

// A named host kernel and its optional CUDA counterpart: a CudaKernel (NVRTC; on the emulated
// backend it runs through the kernel emulator), or any callable taking the Launch first (an
// nvcc-compiled __global__ function's launcher), or a Target and the Launch (it is told where
// the call runs: the arrays' device with Dispatch::arrays).  Every call takes the launch shape
// first; the host kernel ignores it.
template <typename H, typename D = CudaKernel>
class Kernel : public KernelBase {
 public:
  Kernel(std::string name, H host, std::optional<D> cuda = std::nullopt, KernelOptions options = {},
         std::source_location where = std::source_location::current())
      : KernelBase(std::move(name), std::move(options)),
        host_(name_, std::move(host), options_.host, where),
        cuda_(std::move(cuda)) {}

  // Host and CUDA kernels return the same type: void, as kernels write their results into
  // arrays (a CudaKernel returns nothing), or the same type for a callable CUDA side.
  template <typename... A>
  decltype(auto) operator()(const Launch& launch, A&&... args) {
    using HostResult = decltype(host_(std::forward<A>(args)...));
    using CudaResult =
        decltype(invoke_cuda(std::declval<const Target&>(), launch, std::forward<A>(args)...));
    static_assert(std::is_same_v<HostResult, CudaResult>,
                  "cunumpy::Kernel: the host and CUDA kernels must return the same type (void: "
                  "kernels write their results into arrays)");
    if (options_.dispatch == Dispatch::arrays) {
      bool on_device = false;
      Backend device = Backend::host;
      auto look = [&](const auto& a) {
        if (!detail::lives_on_device(a)) return;
        on_device = true;
        if (device == Backend::host) device = detail::device_of(a);
      };
      (look(args), ...);
      if (!on_device) return host_.call(false, std::forward<A>(args)...);  // host data: directly
      // The arrays' device (an argument object without arrays: the active device backend).
      if (device == Backend::host)
        device = get_backend() == Backend::host ? Backend::emulated : get_backend();
      return run_device(on(device), launch, std::forward<A>(args)...);
    }
    if (get_backend() == Backend::host) return host_(std::forward<A>(args)...);
    return run_device(active_target(), launch, std::forward<A>(args)...);
  }

  std::string get_kernel() const override {
    if (get_backend() == Backend::host) return "host";
    if (!cuda_ && options_.missing_cuda == MissingCuda::raise) throw missing(get_backend());
    return cuda_ ? "cuda" : "host (fallback)";
  }

  const HostKernel<H>& host() const noexcept { return host_; }
  const std::optional<D>& cuda() const noexcept { return cuda_; }
  std::optional<D>& cuda() noexcept { return cuda_; }

  bool has_cuda() const noexcept override { return cuda_.has_value(); }
  bool compile() override {
    if (!cuda_) return false;
    if constexpr (std::is_same_v<D, CudaKernel>) cuda_->compile_for(get_backend());
    return true;
  }
  void check_signature() const override {
    const std::string d = signature_difference();
    if (!d.empty()) throw ValueError(d);
  }
  std::string signature_difference() const override {
    if constexpr (std::is_same_v<D, CudaKernel>) {
      if (!cuda_ || !options_.check_signature || !cuda_->check_signature()) return {};
      const auto host = detail::host_parameters<H>();
      if (!host) return {};
      return detail::kernel_signature_difference(name_, *host, options_.host_parameters,
                                                 cuda_->signature());
    } else {
      return {};  // an nvcc-compiled kernel: the compiler checks the launcher's call
    }
  }
  std::optional<std::vector<std::string>> host_parameters() const override {
    const auto host = detail::host_parameters<H>();
    if (!host) return std::nullopt;
    std::vector<std::string> out;
    for (const auto& p : *host) out.push_back(p.text);
    return out;
  }

 private:
  template <typename... A>
  decltype(auto) run_device(const Target& target, const Launch& launch, A&&... args) {
    if (cuda_) return invoke_cuda(target, launch, std::forward<A>(args)...);
    if (options_.missing_cuda == MissingCuda::raise) throw missing(target.backend);
    detail::warn_fallback_once(warned_, name_, options_.cuda_path);
    detail::record_fallback(name_, host_.where());
    return host_.call(true, std::forward<A>(args)...);
  }

  // The CUDA side on `target`: a CudaKernel launches there; a callable that takes the target
  // first is given it (the library never changes the active backend for it).
  template <typename... A>
  decltype(auto) invoke_cuda(const Target& target, const Launch& launch, A&&... args) {
    if constexpr (std::is_same_v<D, CudaKernel>) {
      return cuda_->launch_on(target, launch, std::forward<A>(args)...);
    } else if constexpr (std::is_invocable_v<D&, const Target&, const Launch&, A...>) {
      return std::invoke(*cuda_, target, launch, std::forward<A>(args)...);
    } else if constexpr (std::is_invocable_v<D&, const Launch&, A...>) {
      return std::invoke(*cuda_, launch, std::forward<A>(args)...);
    } else {
      return std::invoke(*cuda_, std::forward<A>(args)...);
    }
  }

  BackendError missing(Backend backend) const {
    return BackendError(
        "Kernel '" + name_ + "' has no CUDA kernel" +
        (options_.cuda_path.empty() ? std::string() : " (expected at " + options_.cuda_path + ")") +
        " and the " + std::string(to_string(backend)) +
        " backend needs one; write it, or make the kernel with missing_cuda = "
        "MissingCuda::fallback to run the host kernel on host copies (slow)");
  }

  HostKernel<H> host_;
  std::optional<D> cuda_;
};

// Deduces Kernel<H, D> from the host and CUDA callables.
template <typename H, typename D>
Kernel(std::string, H, D, KernelOptions = {},
       std::source_location = std::source_location::current()) -> Kernel<H, D>;
template <typename H>
Kernel(std::string, H) -> Kernel<H>;
template <typename H>
Kernel(std::string, H, std::nullopt_t, KernelOptions = {},
       std::source_location = std::source_location::current()) -> Kernel<H>;

// ---- arguments on the kernel's side (dispatch = arrays) --------------------------------------

namespace detail {
// An element-type conversion of host memory.
template <Element T, Element U>
Array<T> converted_elements(const Array<U>& host) {
  Array<T> out = empty<T>(host.shape(), Backend::host);
  const U* in = host.data();
  T* o = out.data();
  for (long long i = 0; i < host.size(); ++i) o[i] = static_cast<T>(in[i]);
  return out;
}
}  // namespace detail

// `value` on the side of `like` (its backend), as an Array<T>: value itself when it already is
// one there, else a copy: moved across (counted as to_host / to_device) and, for another
// element type, converted on the host.
template <Element T, Element U, Element L>
Array<T> as_kernel_array(const Array<U>& value, const Array<L>& like,
                         std::source_location where = std::source_location::current()) {
  const Backend side = like.backend();
  if constexpr (std::is_same_v<T, U>) {
    if (value.backend() == side) return value;
    return side == Backend::host ? to_host(value, where) : to_device(value, where);
  } else {
    const Array<U> h = value.is_host() ? value : to_host(value, where);
    const Array<T> c = detail::converted_elements<T>(h);
    return side == Backend::host ? c : to_device(c, where);
  }
}

// The buffer a kernel writes for `out`: out itself when as_kernel_array takes it unchanged,
// else a converted copy whose contents go into `out` (on its side) when the scope ends without
// an exception.
template <Element T, Element U>
class KernelOutput {
 public:
  template <Element L>
  KernelOutput(Array<U>& out, const Array<L>& like,
               std::source_location where = std::source_location::current())
      : out_(out),
        buffer_(as_kernel_array<T>(out, like, where)),
        where_(where),
        exceptions_(std::uncaught_exceptions()) {}
  ~KernelOutput() noexcept(false) {
    if (std::uncaught_exceptions() > exceptions_) return;  // an error: nothing written back
    if (static_cast<const void*>(buffer_.data()) == static_cast<const void*>(out_.data())) return;
    copy(out_, as_kernel_array<U>(buffer_, out_, where_), where_);
  }
  KernelOutput(const KernelOutput&) = delete;
  KernelOutput& operator=(const KernelOutput&) = delete;
  Array<T>& buffer() noexcept { return buffer_; }

 private:
  Array<U>& out_;
  Array<T> buffer_;
  std::source_location where_;
  int exceptions_;
};
// An output argument for a kernel pair: `out` on the side `like` lives on (see above).
template <Element T, Element U, Element L>
KernelOutput<T, U> kernel_output(Array<U>& out, const Array<L>& like,
                                 std::source_location where = std::source_location::current()) {
  return KernelOutput<T, U>(out, like, where);
}

}  // namespace cunumpy
