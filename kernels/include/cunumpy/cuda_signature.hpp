// cunumpy/cuda_signature.hpp: the C side of run-time compiled CUDA kernels: C types, kernel
// signatures, and the headers a source includes.
//
//   auto params = cunumpy::parse_cuda_signature(source, "scale", {}, {"double", 3});
//   params[0].ctype == "double", params[0].pointer, params[0].dtype == DType::float64
//   cunumpy::ctype_of<double>() == "double"
//   auto headers = cunumpy::resolve_includes(source, {"kernels/common"}, "kernels/push");
//   cunumpy::include_hash(headers)              // 16 hex digits of SHA-256 of their contents
//
// C types map to dtypes as on Linux (LP64): int is int32, long and long long are int64, size_t
// is uint64, float is float32, double is float64, complex<double> is complex128; the fixed-width
// types (int8_t ... uint64_t) and bool are supported too.  A parameter is a scalar, a pointer to
// a scalar (or void*), an array view Array1D<T> .. Array4D<T> of a scalar type, or a struct
// named in `structs` (passed by value).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <cunumpy/dtype.hpp>

namespace cunumpy {

// The C type of a dtype ("double", "long long", "complex<double>", ...).
std::string_view ctype_of(DType dtype) noexcept;
template <Element T>
std::string_view ctype_of() noexcept {
  return ctype_of(dtype_of<T>());
}

// The dtype of a C scalar type ("unsigned int", "int64_t", "size_t", "complex<float>", ...),
// nothing for a type that is not one.
std::optional<DType> dtype_of_ctype(std::string_view ctype);

// One template argument of a kernel template: a C type ("double", or a DType), or a value
// (an integer or a bool) for a non-type parameter.
class TemplateArg {
 public:
  TemplateArg(const char* ctype) : text_(ctype), type_(true) {}  // NOLINT: implicit by design
  TemplateArg(std::string ctype) : text_(std::move(ctype)), type_(true) {}    // NOLINT
  TemplateArg(DType dtype) : text_(ctype_of(dtype)), type_(true) {}           // NOLINT
  TemplateArg(bool value) : text_(value ? "true" : "false"), type_(false) {}  // NOLINT
  template <typename I>
  requires(std::is_integral_v<I> && !std::is_same_v<I, bool>) TemplateArg(I value)
      : text_(std::to_string(value)), type_(false) {}  // NOLINT
  const std::string& text() const noexcept { return text_; }
  bool is_type() const noexcept { return type_; }

 private:
  std::string text_;
  bool type_;
};

// One kernel parameter.
struct CudaParameter {
  std::string name;
  std::string ctype;           // the scalar, pointee, view element or struct type, e.g. "double"
  std::optional<DType> dtype;  // its dtype (nothing for void* and structs)
  bool pointer = false;        // T* (const or not)
  bool is_const = false;       // const T* or const T
  std::string struct_name;     // a struct parameter (by value)
  int view_ndim = 0;           // Array<n>D<T>: n
  std::string text;            // the parameter as written
};

// The parameters of the __global__ function `name` of `source` (declared extern "C", or a
// template instantiated with `template_args`), comments ignored.  `structs` names the struct
// types parameters may have.  ValueError with the offending text for what cannot be parsed:
// a function that is not there, macros, pointers to pointers, unknown types, references,
// arrays, default arguments, a template without (or with the wrong number of) arguments.
std::vector<CudaParameter> parse_cuda_signature(std::string_view source, std::string_view name,
                                                std::span<const std::string> structs = {},
                                                std::span<const TemplateArg> template_args = {});

// The names of the __global__ functions of a source, in source order, comments ignored.
std::vector<std::string> cuda_kernel_names(std::string_view source);

// The template instantiation "name<double, 3>" (`name` without arguments).
std::string template_expression(std::string_view name, std::span<const TemplateArg> template_args);

// The headers a source includes (#include "name" and #include <name>), recursively, each
// once, in order of first inclusion.  A name is looked up as NVRTC and g++ do with -I folders:
// a quoted name first relative to the including file (`base_dir` for the source itself, a
// header's own folder for nested includes); then both forms in `include_dirs` in order, then in
// `angle_dirs` (the headers cunumpy ships, so a changed shipped header is seen).  System
// headers and names that cannot be found are skipped (the compiler reports those).
std::vector<std::filesystem::path> resolve_includes(
    std::string_view source, std::span<const std::filesystem::path> include_dirs = {},
    const std::optional<std::filesystem::path>& base_dir = std::nullopt,
    std::span<const std::filesystem::path> angle_dirs = {});

// The first 16 hex digits of the SHA-256 of the files' contents, in order.
std::string include_hash(std::span<const std::filesystem::path> paths);

// The SHA-256 of bytes, as 64 hex digits (OpenSSL's libcrypto).
std::string sha256_hex(std::string_view bytes);

// The folder of the CUDA headers cunumpy ships (cunumpy/array_view.cuh, atomic.cuh, index.cuh,
// reduce.cuh, emulator.hpp, ...): CUNUMPY_INCLUDE_DIR when set (a development copy); else the
// copy compiled into the library, written out once into a folder named by its digest in the
// kernel cache (a private temporary folder when the cache is off or cannot be written).  It
// never reads the source tree or a path fixed at build time: an installed prefix can be moved,
// and a program can run where neither exists.  Every CudaKernel has it on its include path.
std::filesystem::path cuda_include_dir();

}  // namespace cunumpy
