// cunumpy/device_function_kernel.hpp: an elementwise CudaKernel around a __device__ function,
// to run a device helper (B-spline evaluation, a mapping, small linear algebra) on many inputs
// at once and compare it with its host version.
//
//   auto find_span = cunumpy::device_function_kernel(
//       bsplines_cuh, "int find_span(const double* t, int p, double eta)");
//   find_span(cunumpy::threads(n), t, p, eta, spans, n);
//
// The generated kernel takes the function's parameters in order, then the output and the count:
// a pointer (or array view, or struct) parameter is passed unchanged to every call (shared by
// all threads); a scalar parameter `T x` becomes `const T* x` of n elements and thread i passes
// x[i]; the return value of thread i goes to out[i] (`R* out`; a void function has no out);
// `int n` is the number of elements, threads i >= n do nothing.  The prototype above gives
//
//   extern "C" __global__ void find_span_kernel(const double* t, const int* p,
//                                               const double* eta, int* out, int n)
//
// ValueError for a struct or pointer return type, an unsupported parameter type, or a
// parameter named like `out_param` or `n_param` (rename the generated one then).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <cunumpy/cuda_kernel.hpp>

namespace cunumpy {

// The wrapper kernel's name and options.
struct DeviceFunctionOptions {
  std::optional<std::string> name;    // the kernel's name; <function>_kernel when not given
  std::vector<std::string> includes;  // #include lines before header_source: "a.cuh", <b.cuh>
  std::string n_param = "n";          // the generated parameters' names
  std::string out_param = "out";
  CudaKernelOptions kernel;  // include dirs, block size, options, structs, ...
};

// The kernel's generated source (what device_function_kernel compiles).
std::string device_function_source(std::string_view header_source, std::string_view signature,
                                   const DeviceFunctionOptions& options = {});

// The elementwise kernel around a __device__ function of a header (see above).
CudaKernel device_function_kernel(std::string_view header_source, std::string_view signature,
                                  DeviceFunctionOptions options = {});

}  // namespace cunumpy
