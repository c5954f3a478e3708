// cunumpy/cuda_struct.hpp: a C struct passed to kernels by value, defined once for host code,
// nvcc-compiled code and NVRTC sources.
//
//   CUNUMPY_CUDA_STRUCT(Particles, (double*, x), (double*, v), (int, n), (double, charge))
//
//   const cunumpy::CudaStruct& s = cunumpy::cuda_struct<Particles>();
//   std::string source = s.declaration() + R"(extern "C" __global__ void push(Particles p, double
//   dt) {...})"; cunumpy::CudaKernel push(source, "push", {.structs = {&s}});
//   push(cunumpy::threads(n), cunumpy::struct_value<Particles>(x, v, n, -1.0), 0.1);
//
// The macro defines the C++ struct (an ordinary aggregate for host and nvcc code) and its
// descriptor: the fields with their C types, offsets and sizes as the host compiler lays them
// out, the declaration() text for NVRTC sources, to_header() / write_cuda_header() for a
// header to commit next to the kernels (keep it in sync with a test), check_source() and
// verify_layout().  Field types are the kernel parameter types: scalars, pointers to scalars
// (or void*) and array views (cunumpy::Array1D<T> .. Array4D<T>).  This is the C++ form of the
// Python reference's CudaStruct: the type, not a list of strings, is the one definition.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <cunumpy/array_view.cuh>
#include <cunumpy/cuda_signature.hpp>

namespace cunumpy {

// One field of a CudaStruct: its name, C type, offset and size.
struct CudaStructField {
  std::string name;
  std::string
      ctype;  // the C type of the field's C++ type, e.g. "Array2D<double>", "double*", "long long"
  std::size_t offset;
  std::size_t size;
};

namespace detail {
template <typename T>
struct is_array_view : std::false_type {};
template <typename T, int N>
struct is_array_view<ArrayView<T, N>> : std::true_type {};

// The C type (as NVRTC sources write it) of a field's C++ type: the type decides, not its
// spelling, so `std::int64_t`, `long long` and `cn::Array2D<double>` all come out right.
template <typename T>
std::string field_ctype() {
  if constexpr (std::is_pointer_v<T>) {
    using P = std::remove_pointer_t<T>;
    const std::string qualifier = std::is_const_v<P> ? "const " : "";
    if constexpr (std::is_void_v<std::remove_cv_t<P>>)
      return qualifier + "void*";
    else
      return qualifier + std::string(ctype_of<std::remove_cv_t<P>>()) + "*";
  } else if constexpr (is_array_view<T>::value) {
    return "Array" + std::to_string(T::rank) + "D<" +
           std::string(ctype_of<std::remove_cv_t<typename T::value_type>>()) + ">";
  } else {
    static_assert(Element<T>,
                  "CUNUMPY_CUDA_STRUCT fields are scalars, pointers to scalars or array views");
    return std::string(ctype_of<T>());
  }
}
}  // namespace detail

// The descriptor of a struct passed to kernels by value (made by CUNUMPY_CUDA_STRUCT).
class CudaStruct {
 public:
  CudaStruct(std::string name, std::vector<CudaStructField> fields, std::size_t size,
             std::size_t alignment);

  const std::string& name() const noexcept { return name_; }
  const std::vector<CudaStructField>& fields() const noexcept { return fields_; }
  // The fields as kernel parameters (parsed C types), in order.
  const std::vector<CudaParameter>& parameters() const noexcept { return parameters_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t alignment() const noexcept { return alignment_; }
  bool has_views() const noexcept;

  // "struct Particles {\n  double* x;\n  ...\n};\n": the C definition for an NVRTC source (a
  // struct with views needs #include <cunumpy/array_view.cuh> before it; to_header adds it).
  std::string declaration() const;
  // The definition as a header: an include guard (NAME_CUH by default), the array view header
  // when needed, `includes` (file names or #include lines), the definition.  Written to `path`
  // when one is given.
  std::string to_header(std::optional<std::filesystem::path> path = std::nullopt,
                        std::optional<std::string> guard = std::nullopt,
                        std::span<const std::string> includes = {}) const;
  // ValueError when `source` defines this struct with other fields (names or types, in order).
  void check_source(std::string_view source) const;
  // A one-thread kernel that writes sizeof, alignof and every field's offset as the CUDA
  // compiler lays the struct out (NVRTC has no offsetof at compile time).
  std::string layout_source(std::optional<std::string> include = std::nullopt) const;
  // Compiles and runs layout_source on the cuda backend and returns the differences from the
  // host layout, one line each ("offset of n: 12 for the CUDA compiler, 16 on the host");
  // empty when the layouts agree.  `include` checks a header (e.g. the committed one) instead
  // of declaration().  BackendError without a GPU (the nvcc build checks the layout at compile
  // time there; the kernel emulator will run it on the CPU).
  std::vector<std::string> verify_layout(std::optional<std::string> include = std::nullopt,
                                         std::span<const std::filesystem::path> include_dirs = {},
                                         std::span<const std::string> options = {}) const;

 private:
  std::string name_;
  std::vector<CudaStructField> fields_;
  std::vector<CudaParameter> parameters_;
  std::size_t size_, alignment_;
};

// Several structs in one header (the guard defaults to the file name: pusher_args.cuh ->
// PUSHER_ARGS_CUH); returns the text.
std::string write_cuda_header(const std::filesystem::path& path,
                              std::span<const CudaStruct* const> structs,
                              std::optional<std::string> guard = std::nullopt,
                              std::span<const std::string> includes = {});

// The descriptor of a struct defined with CUNUMPY_CUDA_STRUCT.
template <typename S>
const CudaStruct& cuda_struct() {
  return cunumpy_cuda_struct(static_cast<const S*>(nullptr));
}

// A type defined with CUNUMPY_CUDA_STRUCT.
template <typename S>
concept DefinedCudaStruct = requires {
  cunumpy_cuda_struct(static_cast<const S*>(nullptr));
};

// A packed struct and the arrays it points to: the struct holds only their addresses, so the
// value keeps them alive.  Made by struct_value<S>(...) with every field checked like a
// kernel argument.
template <typename S>
class CudaStructValue {
 public:
  const S& packed() const noexcept { return packed_; }
  const CudaStruct& descriptor() const noexcept { return cuda_struct<S>(); }

 private:
  template <typename T, typename... A>
  friend CudaStructValue<T> struct_value(const A&... fields);
  S packed_{};
  std::vector<std::shared_ptr<const void>> keep_;
};

}  // namespace cunumpy

// ---- the definition macro -----------------------------------------------------------------

#define CUNUMPY_DETAIL_EXPAND(...) __VA_ARGS__
#define CUNUMPY_DETAIL_MEMBER(pair) CUNUMPY_DETAIL_MEMBER_I pair
#define CUNUMPY_DETAIL_MEMBER_I(type, name) type name;
#define CUNUMPY_DETAIL_FIELD(S, pair) CUNUMPY_DETAIL_FIELD_I(S, CUNUMPY_DETAIL_EXPAND pair)
#define CUNUMPY_DETAIL_FIELD_I(...) CUNUMPY_DETAIL_FIELD_II(__VA_ARGS__)
#define CUNUMPY_DETAIL_FIELD_II(S, type, name)                                                 \
  ::cunumpy::CudaStructField{#name, ::cunumpy::detail::field_ctype<type>(), offsetof(S, name), \
                             sizeof(type)},

// Applies M(x) (or M(S, x)) to each of up to 24 arguments.
#define CUNUMPY_DETAIL_COUNT(...)                                                                 \
  CUNUMPY_DETAIL_COUNT_I(__VA_ARGS__, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, \
                         9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define CUNUMPY_DETAIL_COUNT_I(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, \
                               a16, a17, a18, a19, a20, a21, a22, a23, a24, n, ...)              \
  n
#define CUNUMPY_DETAIL_CAT(a, b) CUNUMPY_DETAIL_CAT_I(a, b)
#define CUNUMPY_DETAIL_CAT_I(a, b) a##b
#define CUNUMPY_DETAIL_MAP(M, S, ...) \
  CUNUMPY_DETAIL_CAT(CUNUMPY_DETAIL_MAP_, CUNUMPY_DETAIL_COUNT(__VA_ARGS__))(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_1(M, S, x) M(S, x)
#define CUNUMPY_DETAIL_MAP_2(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_1(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_3(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_2(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_4(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_3(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_5(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_4(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_6(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_5(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_7(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_6(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_8(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_7(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_9(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_8(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_10(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_9(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_11(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_10(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_12(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_11(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_13(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_12(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_14(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_13(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_15(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_14(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_16(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_15(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_17(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_16(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_18(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_17(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_19(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_18(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_20(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_19(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_21(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_20(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_22(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_21(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_23(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_22(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MAP_24(M, S, x, ...) M(S, x) CUNUMPY_DETAIL_MAP_23(M, S, __VA_ARGS__)
#define CUNUMPY_DETAIL_MEMBER_OF(S, pair) CUNUMPY_DETAIL_MEMBER(pair)

// CUNUMPY_CUDA_STRUCT(Name, (type, field), ...): up to 24 fields.  Use it at namespace scope.
#define CUNUMPY_CUDA_STRUCT(Name, ...)                                                      \
  struct Name {                                                                             \
    CUNUMPY_DETAIL_MAP(CUNUMPY_DETAIL_MEMBER_OF, Name, __VA_ARGS__)                         \
  };                                                                                        \
  [[maybe_unused]] inline const ::cunumpy::CudaStruct& cunumpy_cuda_struct(const Name*) {   \
    static const ::cunumpy::CudaStruct descriptor(                                          \
        #Name, {CUNUMPY_DETAIL_MAP(CUNUMPY_DETAIL_FIELD, Name, __VA_ARGS__)}, sizeof(Name), \
        alignof(Name));                                                                     \
    return descriptor;                                                                      \
  }
