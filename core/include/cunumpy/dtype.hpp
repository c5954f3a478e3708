// cunumpy/dtype.hpp: the element types an Array<T> may hold, with their NumPy names.
//
// Arithmetic types and std::complex<float|double>.  dtype_name<T>() gives the NumPy name
// used in reports and error messages ("float64", "int32", "complex128").
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace cunumpy {

// Whether T is std::complex<float> or std::complex<double>.
template <typename T>
struct is_complex : std::false_type {};
template <typename T>
struct is_complex<std::complex<T>> : std::bool_constant<std::is_floating_point_v<T>> {};

// The element types of arrays and MPI buffers.
template <typename T>
concept Element = (std::is_arithmetic_v<T> || is_complex<T>::value) && !std::is_const_v<T> &&
                  !std::is_volatile_v<T>;

// The element types that arange and linspace produce.
template <typename T>
concept RealElement = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

// Type-erased element kind, for code that dispatches on the type at run time.
enum class DType : std::uint8_t {
  boolean,
  int8,
  uint8,
  int16,
  uint16,
  int32,
  uint32,
  int64,
  uint64,
  float32,
  float64,
  complex64,
  complex128
};

// The DType of an element type.
template <Element T>
constexpr DType dtype_of() noexcept {
  if constexpr (std::is_same_v<T, bool>)
    return DType::boolean;
  else if constexpr (std::is_same_v<T, float>)
    return DType::float32;
  else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, long double>)
    return DType::float64;  // long double reported by size below
  else if constexpr (std::is_same_v<T, std::complex<float>>)
    return DType::complex64;
  else if constexpr (is_complex<T>::value)
    return DType::complex128;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    if constexpr (sizeof(T) == 1)
      return DType::int8;
    else if constexpr (sizeof(T) == 2)
      return DType::int16;
    else if constexpr (sizeof(T) == 4)
      return DType::int32;
    else
      return DType::int64;
  } else {
    if constexpr (sizeof(T) == 1)
      return DType::uint8;
    else if constexpr (sizeof(T) == 2)
      return DType::uint16;
    else if constexpr (sizeof(T) == 4)
      return DType::uint32;
    else
      return DType::uint64;
  }
}

// NumPy's name of a dtype ("float64", "int32", ...).
constexpr std::string_view to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::boolean:
      return "bool";
    case DType::int8:
      return "int8";
    case DType::uint8:
      return "uint8";
    case DType::int16:
      return "int16";
    case DType::uint16:
      return "uint16";
    case DType::int32:
      return "int32";
    case DType::uint32:
      return "uint32";
    case DType::int64:
      return "int64";
    case DType::uint64:
      return "uint64";
    case DType::float32:
      return "float32";
    case DType::float64:
      return "float64";
    case DType::complex64:
      return "complex64";
    case DType::complex128:
      return "complex128";
  }
  return "unknown";
}

// Bytes per element of a dtype.
constexpr std::size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::boolean:
    case DType::int8:
    case DType::uint8:
      return 1;
    case DType::int16:
    case DType::uint16:
      return 2;
    case DType::int32:
    case DType::uint32:
    case DType::float32:
      return 4;
    case DType::int64:
    case DType::uint64:
    case DType::float64:
    case DType::complex64:
      return 8;
    case DType::complex128:
      return 16;
  }
  return 0;
}

// NumPy's name of the element type T.
template <Element T>
constexpr std::string_view dtype_name() noexcept {
  if constexpr (std::is_same_v<T, long double>)
    return "longdouble";
  else
    return to_string(dtype_of<T>());
}

}  // namespace cunumpy
