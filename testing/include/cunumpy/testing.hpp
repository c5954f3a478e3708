// cunumpy/testing.hpp: GoogleTest helpers for applications' kernel tests (target
// cunumpy::testing; the C++ form of the Python cunumpy.kernel_testing).
//
//   class Scale : public cunumpy::testing::OnBackend {};
//   TEST_P(Scale, Doubles) { auto x = cunumpy::ones<double>({4}); ... }   // the backend is active
//   CUNUMPY_INSTANTIATE_ON_BACKENDS(Scale);          // host, emulated, and cuda with a GPU
//
//   TEST(Push, HostAndCudaAgree) {
//     EXPECT_TRUE(cunumpy::testing::kernels_agree(push_host, push_cuda, make_push_args,
//                                                 {.launch = cunumpy::threads(n)}));
//   }
//
// Python -> C++: BACKENDS -> backends(); the `backend` fixture -> OnBackend with
// CUNUMPY_INSTANTIATE_ON_BACKENDS; requires_cupy -> CUNUMPY_REQUIRE_GPU(); the fake CuPy ->
// the emulated backend (Backend::emulated), which runs the device paths, CUDA kernels included,
// without a GPU; assert_kernels_agree -> kernels_agree (an AssertionResult for EXPECT_TRUE /
// ASSERT_TRUE) or assert_kernels_agree (a non-fatal failure).  Without a GPU the CUDA kernel
// runs on the emulator, so parity is checked in CI instead of skipped.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>
#include <cunumpy/device_function_kernel.hpp>
#include <cunumpy/kernel.hpp>
#include <cunumpy/kernel_catalog.hpp>

namespace cunumpy::testing {

// The backends a test runs on: host and emulated always, cuda where a GPU is present.
std::vector<Backend> backends();
// The device backend kernels_agree runs the CUDA kernel on: cuda with a GPU, else emulated.
Backend parity_backend();

// The name of a test instance on a backend ("host", "emulated", "cuda"), for
// INSTANTIATE_TEST_SUITE_P.
inline std::string backend_test_name(const ::testing::TestParamInfo<Backend>& info) {
  return std::string(to_string(info.param));
}

// Activates the parameter's backend for each test (and the host again after it).
class OnBackend : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::cuda && !cuda_available())
      GTEST_SKIP() << "no GPU: " << cuda_unavailable_reason();
    set_backend(GetParam());
  }
  void TearDown() override { set_backend(Backend::host); }
};

// Runs each test on the GPU (the cuda backend selected), skipping it with the reason where
// there is none; the host again after it.
class OnCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
    set_backend(Backend::cuda);
  }
  void TearDown() override { set_backend(Backend::host); }
};

// Runs each test with the emulated device selected, and the host again after it.
class OnEmulated : public ::testing::Test {
 protected:
  void SetUp() override { set_backend(Backend::emulated); }
  void TearDown() override { set_backend(Backend::host); }
};

// How kernels_agree runs and compares.
struct AgreeOptions {
  Launch launch = {};  // the CUDA kernel's launch shape (the host kernel has none)
  // |device - host| <= atol + rtol * |host|, elementwise; integers compare exactly.  The
  // defaults are what a GPU holds where it fuses a * b + c into one rounding (nvcc's and
  // NVRTC's default, and the emulator's where the CPU has FMA) and the host code does not:
  // rtol 1e-12 for double (and complex<double>) elements, 1e-5 for float; atol rtol times the
  // argument's largest magnitude on the host, so that a value that cancels to near zero is
  // compared at the scale of its terms.  rtol = 0 (atol unset) asks for bit equality: compile
  // the CUDA kernel with --fmad=false for it.
  std::optional<double> rtol;
  std::optional<double> atol;
  int n_calls = 1;                 // each kernel is called this many times on its arguments
  std::vector<int> outputs;        // the arguments compared, by index (negative: from the end);
                                   // empty: every array argument
  std::uint64_t seed = 0;          // passed to make_args
  std::optional<Backend> device;   // where the CUDA kernel runs; parity_backend() by default
  std::vector<std::string> names;  // the arguments' names, for the messages
};

namespace detail {

template <typename T>
using is_array = cunumpy::detail::is_array_type<T>;  // kernel.hpp's

template <typename T>
double magnitude(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1.0 : 0.0;
  } else {
    return std::abs(static_cast<std::conditional_t<std::is_arithmetic_v<T>, double, T>>(v));
  }
}
template <typename T>
bool is_nan(const T& v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  if constexpr (!std::is_arithmetic_v<T>) return std::isnan(v.real()) || std::isnan(v.imag());
  return false;
}
template <typename T>
std::string show(const T& v) {
  std::ostringstream s;
  s.precision(17);
  if constexpr (std::is_same_v<T, bool>) {
    s << (v ? "true" : "false");
  } else if constexpr (std::is_integral_v<T>) {
    s << static_cast<long long>(v);
  } else {
    s << v;
  }
  return s.str();
}
std::string index_text(const Shape& shape, long long flat);
std::string show_tolerance(double t);

// AgreeOptions::rtol's default for elements of type T.
template <typename T>
constexpr double default_rtol() {
  if constexpr (std::is_floating_point_v<T>) {
    return sizeof(T) <= 4 ? 1e-5 : 1e-12;
  } else if constexpr (!std::is_arithmetic_v<T>) {  // complex
    return sizeof(typename T::value_type) <= 4 ? 1e-5 : 1e-12;
  } else {
    return 0.0;
  }
}

// Empty when host and device agree, else what differs.
template <typename T>
std::string compare(const std::string& what, const Array<T>& host, const Array<T>& device_side,
                    const AgreeOptions& o, std::string_view device_name) {
  if (!(host.shape() == device_side.shape()))
    return what + ": shape " + host.shape().str() + " on host, " + device_side.shape().str() +
           " on " + std::string(device_name);
  const Array<T> d = device_side.is_host() ? device_side : to_host(device_side);
  const T* h = host.data();
  const T* g = d.data();
  long long bad = 0, first = -1;
  double worst = 0;
  const double rtol = o.rtol.value_or(default_rtol<T>());
  double atol = 0.0;
  if (o.atol) {
    atol = *o.atol;
  } else if constexpr (!std::is_integral_v<T>) {
    for (long long i = 0; i < host.size(); ++i)
      if (!is_nan(h[i])) atol = std::max(atol, magnitude(h[i]));
    atol *= rtol;
  }
  for (long long i = 0; i < host.size(); ++i) {
    bool ok;
    if (is_nan(h[i]) || is_nan(g[i])) {
      ok = is_nan(h[i]) && is_nan(g[i]);
    } else if constexpr (std::is_integral_v<T>) {
      ok = h[i] == g[i];
    } else {
      const double diff = magnitude(T(g[i] - h[i]));
      ok = diff <= atol + rtol * magnitude(h[i]);
      if (!ok && diff > worst) worst = diff;
    }
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (bad == 0) return {};
  std::string m = what + ": " + std::to_string(bad) + " of " + std::to_string(host.size()) +
                  " elements differ beyond rtol=" + show_tolerance(rtol) +
                  ", atol=" + show_tolerance(atol) + "; first at index " +
                  index_text(host.shape(), first) + ": host " + show(h[first]) + ", " +
                  std::string(device_name) + " " + show(g[first]);
  if (worst > 0) m += " (largest difference " + show(worst) + ")";
  return m;
}

template <typename Device, typename Tuple>
void call_device(Device& device, const Launch& launch, Tuple& args) {
  std::apply(
      [&](auto&... a) {
        if constexpr (std::is_invocable_v<Device&, const Launch&, decltype(a)...>) {
          device(launch, a...);
        } else {
          device(a...);
        }
      },
      args);
}

// The arrays of argument `value` to compare: itself, or those one level inside the tuple an
// object's cuda_args() returns.
template <typename V, typename F>
void for_each_array(const V& value, const std::string& name, F&& f) {
  if constexpr (is_array<V>::value) {
    f(name, value);
  } else if constexpr (CudaArguments<V>) {
    const auto inner = value.cuda_args();
    std::size_t j = 0;
    std::apply(
        [&](const auto&... x) {
          (
              [&] {
                using X = std::decay_t<decltype(x)>;
                if constexpr (is_array<X>::value) f(name + "." + std::to_string(j), x);
                ++j;
              }(),
              ...);
        },
        inner);
  }
}

}  // namespace detail

// Runs the host kernel on arguments made for the host and the CUDA kernel on arguments made
// for the device, and compares the arrays among them.  make_args(Backend, seed) returns a
// std::tuple of the positional arguments and runs with that backend active (arrays it creates
// land there: build random data on the host from the seed and move it, so both sides start
// from the same values).  `device` is a CudaKernel (called with options.launch first), a
// callable taking the Launch first, or one taking the arguments alone (an nvcc-compiled
// __global__ wrapper).  The failure names the argument that differs, where and by how much.
template <typename Host, typename Device, typename MakeArgs>
requires(std::is_invocable_v<MakeArgs&, Backend, std::uint64_t>)::testing::AssertionResult
    kernels_agree(Host&& host, Device&& device, MakeArgs&& make_args,
                  const AgreeOptions& options = {}) {
  if (options.n_calls < 1)
    return ::testing::AssertionFailure()
           << "kernels_agree: n_calls must be at least 1, got " << options.n_calls;
  const Backend dev = options.device.value_or(parity_backend());
  if (dev == Backend::host)
    return ::testing::AssertionFailure()
           << "kernels_agree: the device side must run on cuda or emulated, not host";
  using Args = std::decay_t<decltype(make_args(Backend::host, options.seed))>;
  constexpr int count = static_cast<int>(std::tuple_size_v<Args>);
  std::vector<bool> compared(count, options.outputs.empty());
  for (int i : options.outputs) {
    const int at = i < 0 ? count + i : i;
    if (at < 0 || at >= count)
      return ::testing::AssertionFailure() << "kernels_agree: output index " << i
                                           << " does not exist among " << count << " arguments";
    compared[at] = true;
  }
  Args host_args = [&] {
    const UseBackend on(Backend::host);
    return make_args(Backend::host, options.seed);
  }();
  {
    const UseBackend on(Backend::host);
    for (int c = 0; c < options.n_calls; ++c) std::apply(host, host_args);
  }
  Args device_args = [&] {
    const UseBackend on(dev);
    return make_args(dev, options.seed);
  }();
  {
    const UseBackend on(dev);
    for (int c = 0; c < options.n_calls; ++c)
      detail::call_device(device, options.launch, device_args);
    synchronize();
  }
  std::string failure;
  int arrays = 0;
  const std::string device_name(to_string(dev));
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          if (!compared[I] || !failure.empty()) return;
          const std::string name =
              "argument " + std::to_string(I) +
              (I < options.names.size() ? " ('" + options.names[I] + "')" : std::string());
          const auto& h = std::get<I>(host_args);
          const auto& d = std::get<I>(device_args);
          std::vector<std::string> parts;
          detail::for_each_array(h, name, [&](const std::string& n, const auto& ha) {
            ++arrays;
            using A = std::decay_t<decltype(ha)>;
            detail::for_each_array(d, name, [&](const std::string& m, const auto& da) {
              if constexpr (std::is_same_v<std::decay_t<decltype(da)>, A>)
                if (m == n && failure.empty())
                  failure = detail::compare(n, ha, da, options, device_name);
            });
          });
        }(),
        ...);
  }
  (std::make_index_sequence<count>{});
  if (!failure.empty())
    return ::testing::AssertionFailure()
           << "the host and the CUDA kernel (on " << device_name << ") disagree on " << failure;
  if (arrays == 0)
    return ::testing::AssertionFailure()
           << "kernels_agree: no array among the compared arguments; return arrays from make_args "
              "or choose outputs";
  return ::testing::AssertionSuccess();
}

// kernels_agree as a non-fatal GoogleTest failure (the Python assert_kernels_agree).
template <typename Host, typename Device, typename MakeArgs>
requires(std::is_invocable_v<MakeArgs&, Backend, std::uint64_t>) void assert_kernels_agree(
    Host&& host, Device&& device, MakeArgs&& make_args, const AgreeOptions& options = {}) {
  EXPECT_TRUE(kernels_agree(std::forward<Host>(host), std::forward<Device>(device),
                            std::forward<MakeArgs>(make_args), options));
}

// kernels_agree over a Kernel's two sides: its host kernel (host forms of argument objects
// resolved) against its CUDA kernel.  A failure when the Kernel has no CUDA kernel.
template <typename H, typename D, typename MakeArgs>
requires(std::is_invocable_v<MakeArgs&, Backend, std::uint64_t>)::testing::AssertionResult
    kernels_agree(Kernel<H, D>& kernel, MakeArgs&& make_args, const AgreeOptions& options = {}) {
  if (!kernel.has_cuda())
    return ::testing::AssertionFailure()
           << "kernels_agree: Kernel '" << kernel.name() << "' has no CUDA kernel"
           << (kernel.cuda_path().empty() ? std::string()
                                          : " (expected at " + kernel.cuda_path() + ")");
  return kernels_agree(kernel.host(), *kernel.cuda(), std::forward<MakeArgs>(make_args), options);
}

// One parity test of a catalog's kernel: its name and the check (empty: the kernel has no
// parity check yet; the test skips, naming it).
struct ParityCase {
  std::string name;
  std::function<::testing::AssertionResult()> check;
};
inline void PrintTo(const ParityCase& c, std::ostream* os) {
  *os << c.name;
}

// The check of kernel `name` of `catalog` (typed as Kernel<H, D>) with `make_args`.
template <typename H, typename D = CudaKernel, typename MakeArgs>
std::function<::testing::AssertionResult()> parity_check(KernelCatalog& catalog,
                                                         const std::string& name,
                                                         MakeArgs make_args,
                                                         AgreeOptions options = {}) {
  return [&catalog, name, make_args, options]() mutable {
    return kernels_agree(catalog.get<H, D>(name), make_args, options);
  };
}

// One case per kernel of the catalog that has a CUDA kernel (KernelCatalog::parity_cases),
// with its check from `checks` (by name), for INSTANTIATE_TEST_SUITE_P:
//   INSTANTIATE_TEST_SUITE_P(Port, Parity, ::testing::ValuesIn(parity_cases(catalog, checks)),
//                            parity_case_name);
std::vector<ParityCase> parity_cases(
    const KernelCatalog& catalog,
    const std::map<std::string, std::function<::testing::AssertionResult()>>& checks);
inline std::string parity_case_name(const ::testing::TestParamInfo<ParityCase>& info) {
  return info.param.name;
}

// The body of a parity test: skips a case without a check (saying so), else expects it.
#define CUNUMPY_EXPECT_PARITY(parity_case)                                                   \
  do {                                                                                       \
    const ::cunumpy::testing::ParityCase& cunumpy_case_ = (parity_case);                     \
    if (!cunumpy_case_.check)                                                                \
      GTEST_SKIP() << "kernel '" << cunumpy_case_.name                                       \
                   << "' has a CUDA kernel but no parity check: add one (make_args) to the " \
                      "checks given to parity_cases";                                        \
    EXPECT_TRUE(cunumpy_case_.check());                                                      \
  } while (false)

}  // namespace cunumpy::testing

// Skips the test, saying why, when no GPU is present (the Python requires_cupy).
#define CUNUMPY_REQUIRE_GPU()                                             \
  do {                                                                    \
    if (!::cunumpy::cuda_available())                                     \
      GTEST_SKIP() << "no GPU: " << ::cunumpy::cuda_unavailable_reason(); \
  } while (false)

// Instantiates a suite of OnBackend tests on backends(): host, emulated, and cuda with a GPU.
#define CUNUMPY_INSTANTIATE_ON_BACKENDS(suite)                                                   \
  INSTANTIATE_TEST_SUITE_P(Backends, suite, ::testing::ValuesIn(::cunumpy::testing::backends()), \
                           ::cunumpy::testing::backend_test_name)
