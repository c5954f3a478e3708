// Kernel pairs (kernel.hpp): dispatch by backend and by arrays, missing CUDA kernels (raise,
// fallback with its events), host kernels with device data (outputs, aliasing, containers,
// returned arrays), argument objects with two forms, the signature check, as_kernel_array
// and kernel_output.  The CUDA kernels run on the emulator.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/kernel.hpp>

#include "kernel_sources.hpp"
#include "on_backend.hpp"
#include "test_environment.hpp"

namespace cn = cunumpy;
using cunumpy_test::have_host_compiler;

namespace {

int g_host_calls = 0;
void axpy_host(double a, const cn::Array<double>& x, const cn::Array<double>& y, long long n) {
  ++g_host_calls;
  for (long long i = 0; i < n; ++i) y(i) = a * x(i) + y(i);
}

void smooth(const cn::Array<double>& field, const cn::Array<double>& out) {
  const long long n = field.size();
  for (long long i = 1; i + 1 < n; ++i)
    out(i) = 0.25 * field(i - 1) + 0.5 * field(i) + 0.25 * field(i + 1);
  out(0) = field(0);
  out(n - 1) = field(n - 1);
}

class KernelTest : public cn::testing::OnEmulated {
 protected:
  void SetUp() override {
    cn::testing::OnEmulated::SetUp();
    g_host_calls = 0;
  }
};

// A particle species: the host kernel takes the object, the CUDA kernel its arrays and count.
struct Species {
  cn::Array<double> x, v;
  long long n;
};
struct SpeciesArgs {
  Species* s;
  const Species& host_args() const { return *s; }
  auto cuda_args() const { return std::make_tuple(s->x, s->v, s->n); }
};
void drift_host(const Species& s, double dt) {
  for (long long i = 0; i < s.n; ++i) s.x(i) += dt * s.v(i);
}
const char* kDrift = R"(
extern "C" __global__ void drift(double* x, const double* v, long long n, double dt) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] += dt * v[i];
})";

// An object a HostKernel converts (it opts in with for_each_array).
struct Fields {
  cn::Array<double> ex, ey;
  int tag = 7;
  template <typename F>
  void for_each_array(F&& f) {
    f(ex);
    f(ey);
  }
};

}  // namespace

TEST_F(KernelTest, DispatchByBackend) {
  if (!have_host_compiler()) GTEST_SKIP() << "no host compiler for the emulator";
  cn::Kernel axpy("axpy", axpy_host, cn::CudaKernel(cunumpy_test::kAxpy, "axpy"));
  EXPECT_TRUE(axpy.has_cuda());
  EXPECT_EQ(axpy.get_kernel(), "cuda");
  auto x = cn::arange<double>(0.0, 100.0, 1.0);
  auto y = cn::ones<double>({100});
  auto counter = cn::count_transfers();
  axpy(cn::threads(100), 2.0, x, y, 100LL);  // emulated: the CUDA kernel on the emulator
  EXPECT_EQ(g_host_calls, 0);
  EXPECT_EQ(counter.total(), 0) << counter.report();
  EXPECT_EQ(cn::to_host(y)(99), 199.0);
  cn::set_backend(cn::Backend::host);
  EXPECT_EQ(axpy.get_kernel(), "host");
  auto hx = cn::arange<double>(0.0, 10.0, 1.0);
  auto hy = cn::ones<double>({10});
  axpy(cn::threads(10), 2.0, hx, hy, 10LL);  // the launch shape is ignored on the host
  EXPECT_EQ(g_host_calls, 1);
  EXPECT_EQ(hy(9), 19.0);
}

TEST_F(KernelTest, DispatchByArrays) {
  if (!have_host_compiler()) GTEST_SKIP() << "no host compiler for the emulator";
  cn::Kernel axpy("axpy", axpy_host, cn::CudaKernel(cunumpy_test::kAxpy, "axpy"),
                  {.dispatch = cn::Dispatch::arrays});
  // Host arrays while a device backend is active: the host function, directly.
  auto hx = cn::arange<double>(0.0, 10.0, 1.0, cn::Backend::host);
  auto hy = cn::ones<double>({10}, cn::Backend::host);
  auto counter = cn::count_transfers();
  axpy(cn::threads(10), 2.0, hx, hy, 10LL);
  EXPECT_EQ(g_host_calls, 1);
  EXPECT_EQ(counter.total(), 0) << "no conversion: " << counter.report();
  // Device arrays while the host backend is active: the CUDA kernel, on their device.
  cn::set_backend(cn::Backend::host);
  auto dx = cn::arange<double>(0.0, 10.0, 1.0, cn::Backend::emulated);
  auto dy = cn::ones<double>({10}, cn::Backend::emulated);
  axpy(cn::threads(10), 2.0, dx, dy, 10LL);
  EXPECT_EQ(g_host_calls, 1);
  EXPECT_EQ(cn::to_host(dy)(9), 19.0);
}

TEST_F(KernelTest, MissingCudaRaisesNamingWhereItIsExpected) {
  cn::Kernel smooth_k("smooth", smooth, std::nullopt,
                      {.cuda_path = "kernels/smooth/smooth_cuda.cu"});
  EXPECT_FALSE(smooth_k.has_cuda());
  auto f = cn::ones<double>({8});
  auto out = cn::zeros<double>({8});
  try {
    smooth_k(cn::threads(8), f, out);
    FAIL() << "a missing CUDA kernel must raise";
  } catch (const cn::BackendError& e) {
    const std::string m = e.what();
    EXPECT_NE(
        m.find("Kernel 'smooth' has no CUDA kernel (expected at kernels/smooth/smooth_cuda.cu)"),
        std::string::npos)
        << m;
    EXPECT_NE(m.find("MissingCuda::fallback"), std::string::npos) << m;
  }
  EXPECT_THROW((void)smooth_k.get_kernel(), cn::BackendError);
}

TEST_F(KernelTest, FallbackRunsTheHostKernelOnHostCopiesAndCountsIt) {
  cn::Kernel smooth_k(
      "smooth", smooth, std::nullopt,
      {.missing_cuda = cn::MissingCuda::fallback, .host = {.outputs = std::vector{1}}});
  auto h = cn::Array<double>({6}, cn::Backend::host);
  for (int i = 0; i < 6; ++i) h(i) = i * i;
  auto f = cn::to_device(h);
  auto out = cn::zeros<double>({6});
  auto counter = cn::count_transfers();
  smooth_k(cn::threads(6), f, out);
  smooth_k(cn::threads(6), f, out);
  EXPECT_EQ(counter.fallbacks(), 2) << counter.report();
  EXPECT_EQ(counter.kernel_conversions(), 2) << counter.report();
  EXPECT_EQ(counter.to_host() + counter.to_device(), 0) << "the conversion's copies are its events";
  const auto events = counter.kernel_conversion_calls();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].description, "HostKernel 'smooth': 2 array(s) converted");
  const auto r = cn::to_host(out);
  EXPECT_EQ(r(0), 0.0);
  EXPECT_EQ(r(2), 0.25 * 1 + 0.5 * 4 + 0.25 * 9);
  EXPECT_EQ(r(5), 25.0);
  std::printf("%s\n", counter.report().c_str());
}

// outputs past the call's arguments raise IndexError naming the kernel, on every backend (a
// host run catches what a device run would have silently skipped).
TEST_F(KernelTest, OutputsOutOfRangeRaiseIndexError) {
  for (const int bad : {2, -3}) {
    cn::HostKernel k("two_args", [](const cn::Array<double>&, const cn::Array<double>&) {},
                     {.outputs = std::vector{0, bad}});
    auto a = cn::zeros<double>({2});
    for (const cn::Backend b : {cn::Backend::host, cn::Backend::emulated}) {
      const auto on = cn::use_backend(b);
      try {
        k(a, a);
        FAIL() << "outputs index " << bad << " with 2 arguments must raise";
      } catch (const cn::IndexError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("HostKernel 'two_args': outputs index " + std::to_string(bad) +
                         " is out of range for a call with 2 argument(s)"),
                  std::string::npos)
            << m;
      }
    }
  }
}

// std::array and std::map holding device arrays are converted like std::vector: the function
// sees host arrays, the declared outputs come back, the caller's containers keep device arrays.
TEST_F(KernelTest, StdArrayAndMapOfDeviceArraysAreConverted) {
  cn::HostKernel k("containers", [](std::array<cn::Array<double>, 2>& pair,
                                    std::map<std::string, cn::Array<double>>& named) {
    for (auto& a : pair) {
      EXPECT_TRUE(a.is_host());
      a(0) += 1.0;
    }
    for (auto& [name, a] : named) {
      EXPECT_TRUE(a.is_host()) << name;
      a(1) = 7.0;
    }
  });
  std::array<cn::Array<double>, 2> pair{cn::zeros<double>({2}), cn::ones<double>({2})};
  std::map<std::string, cn::Array<double>> named{{"rho", cn::zeros<double>({2})}};
  ASSERT_TRUE(pair[0].is_device());
  auto counter = cn::count_transfers();
  k(pair, named);
  EXPECT_EQ(counter.kernel_conversion_calls().at(0).description,
            "HostKernel 'containers': 3 array(s) converted");
  EXPECT_TRUE(pair[1].is_device());
  EXPECT_TRUE(named.at("rho").is_device());
  EXPECT_EQ(cn::to_host(pair[0])(0), 1.0);
  EXPECT_EQ(cn::to_host(pair[1])(0), 2.0);
  EXPECT_EQ(cn::to_host(named.at("rho"))(1), 7.0);
}

TEST_F(KernelTest, HostKernelOutputsAliasingContainersAndReturns) {
  // Outputs: only argument 1 is copied back.
  cn::HostKernel writes_both("writes_both",
                             [](const cn::Array<double>& a, const cn::Array<double>& b) {
                               a(0) = 100.0;
                               b(0) = 200.0;
                             },
                             {.outputs = std::vector{-1}});
  auto a = cn::zeros<double>({2});
  auto b = cn::zeros<double>({2});
  writes_both(a, b);
  EXPECT_EQ(cn::to_host(a)(0), 0.0) << "not declared: the device array keeps its values";
  EXPECT_EQ(cn::to_host(b)(0), 200.0);
  // Aliasing: one device array passed twice is one host array.
  cn::HostKernel same("same", [](const cn::Array<double>& p, const cn::Array<double>& q) {
    EXPECT_EQ(p.data(), q.data());
    p(1) = 5.0;
  });
  auto counter = cn::count_transfers();
  same(a, a);
  EXPECT_EQ(counter.kernel_conversion_calls().at(0).description,
            "HostKernel 'same': 1 array(s) converted");
  EXPECT_EQ(cn::to_host(a)(1), 5.0);
  // Containers and ArrayHolder objects; the caller's objects keep their device arrays.
  cn::HostKernel scale_all("scale_all", [](std::vector<cn::Array<double>>& list, Fields& fields) {
    for (auto& l : list) l(0) *= 3.0;
    EXPECT_TRUE(fields.ex.is_host());
    EXPECT_EQ(fields.tag, 7);
    fields.ex(0) = -1.0;
    fields.ey(0) = -2.0;
  });
  std::vector<cn::Array<double>> list{cn::ones<double>({3}), cn::full<double>({3}, 2.0)};
  Fields fields{cn::zeros<double>({3}), cn::zeros<double>({3})};
  scale_all(list, fields);
  EXPECT_TRUE(list[0].is_device());
  EXPECT_TRUE(fields.ex.is_device());
  EXPECT_EQ(cn::to_host(list[1])(0), 6.0);
  EXPECT_EQ(cn::to_host(fields.ey)(0), -2.0);
  // Returned arrays go to the device.
  cn::HostKernel doubled("doubled", [](const cn::Array<double>& v) {
    cn::Array<double> r({v.size()}, cn::Backend::host);
    for (long long i = 0; i < v.size(); ++i) r(i) = 2 * v(i);
    return std::make_tuple(r, v.size());
  });
  auto [r, n] = doubled(cn::full<double>({4}, 1.5));
  EXPECT_TRUE(r.is_device());
  EXPECT_EQ(n, 4);
  EXPECT_EQ(cn::to_host(r)(3), 3.0);
  // Host data on the host backend: the function directly (the same objects, no event).
  cn::set_backend(cn::Backend::host);
  auto host_counter = cn::count_transfers();
  auto hv = cn::full<double>({2}, 1.0);
  cn::HostKernel identity("identity", [](const cn::Array<double>& v) { return v; });
  EXPECT_EQ(identity(hv).data(), hv.data());
  EXPECT_EQ(host_counter.total(), 0);
  // Exceptions pass through unchanged.
  cn::HostKernel fails("fails", [](const cn::Array<double>&) { throw cn::ValueError("planted"); });
  EXPECT_THROW(fails(hv), cn::ValueError);
}

TEST_F(KernelTest, ArgumentObjectsWithTwoForms) {
  if (!have_host_compiler()) GTEST_SKIP() << "no host compiler for the emulator";
  Species s{cn::zeros<double>({50}), cn::ones<double>({50}), 50};
  SpeciesArgs args{&s};
  // The CUDA kernel's parameters are (x, v, n, dt): the object stands for the first three.
  cn::Kernel drift("drift", drift_host, cn::CudaKernel(kDrift, "drift"));
  EXPECT_NO_THROW(drift.check_signature());
  drift(cn::threads(50), args, 0.5);
  EXPECT_EQ(cn::to_host(s.x)(49), 0.5);
  cn::set_backend(cn::Backend::host);
  Species h{cn::zeros<double>({50}), cn::ones<double>({50}), 50};
  SpeciesArgs hargs{&h};
  drift(cn::threads(50), hargs, 0.25);  // the host kernel gets host_args()
  EXPECT_EQ(h.x(0), 0.25);
  // resolve_host_args for code that calls host kernels by other means.
  auto resolved = cn::resolve_host_args(hargs, 0.25);
  EXPECT_EQ(&std::get<0>(resolved), &h);
}

TEST_F(KernelTest, SignatureMismatchShowsBothLists) {
  auto wrong_host = [](const cn::Array<float>& x, double a, long long n) {
    (void)x, (void)a, (void)n;
  };
  cn::Kernel k("axpy", +wrong_host, cn::CudaKernel(cunumpy_test::kAxpy, "axpy"));
  const std::string d = k.signature_difference();
  std::printf("%s\n", d.c_str());
  EXPECT_NE(d.find("Kernel 'axpy': the host and CUDA kernels take different parameters"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("host: (Array<float32>, double, long long)"), std::string::npos) << d;
  EXPECT_NE(d.find("cuda: (double a, const double* x, double* y, long long n)"), std::string::npos)
      << d;
  EXPECT_NE(d.find("3 parameter(s) on the host, 4 on CUDA"), std::string::npos) << d;
  EXPECT_THROW(k.check_signature(), cn::ValueError);
  auto types_differ = [](double a, const cn::Array<float>& x, const cn::Array<double>& y,
                         double n) { (void)a, (void)x, (void)y, (void)n; };
  cn::Kernel k2("axpy", +types_differ, cn::CudaKernel(cunumpy_test::kAxpy, "axpy"),
                {.host_parameters = {"a", "x", "why", "n"}});
  const std::string d2 = k2.signature_difference();
  EXPECT_NE(d2.find("parameter 1 ('x'): elements of float32 on the host, float64 on CUDA"),
            std::string::npos)
      << d2;
  EXPECT_NE(d2.find("parameter 2 is 'why' on the host, 'y' on CUDA"), std::string::npos) << d2;
  EXPECT_NE(d2.find("parameter 3 ('n'): a double on the host, a long long on CUDA"),
            std::string::npos)
      << d2;
  cn::Kernel ok("axpy", axpy_host, cn::CudaKernel(cunumpy_test::kAxpy, "axpy"));
  EXPECT_EQ(ok.signature_difference(), "");
  EXPECT_EQ(ok.host_parameters().value(),
            (std::vector<std::string>{"double", "Array<float64>", "Array<float64>", "long long"}));
  auto generic = [](auto&&...) {};
  cn::Kernel unknown("axpy", generic, cn::CudaKernel(cunumpy_test::kAxpy, "axpy"));
  EXPECT_FALSE(unknown.host_parameters().has_value()) << "a generic lambda has no fixed parameters";
  EXPECT_NO_THROW(unknown.check_signature());
}

TEST_F(KernelTest, AsKernelArrayAndKernelOutput) {
  auto field = cn::zeros<double>({4});  // on the emulated device
  auto on_device = cn::full<double>({4}, 2.0);
  auto counter = cn::count_transfers();
  EXPECT_EQ(cn::as_kernel_array<double>(on_device, field).data(), on_device.data()) << "itself";
  EXPECT_EQ(counter.total(), 0);
  auto host_ints = cn::full<int>({4}, 3, cn::Backend::host);
  auto converted = cn::as_kernel_array<double>(host_ints, field);
  EXPECT_TRUE(converted.is_device());
  EXPECT_EQ(counter.to_device(), 1);
  EXPECT_EQ(cn::to_host(converted)(2), 3.0);
  // On the host's side: a device array comes back (counted), a host one is itself.
  auto host_like = cn::zeros<double>({4}, cn::Backend::host);
  auto back = cn::as_kernel_array<double>(on_device, host_like);
  EXPECT_TRUE(back.is_host());
  EXPECT_EQ(counter.to_host(), 2) << "the check's to_host above, and this one";
  EXPECT_EQ(back(0), 2.0);
  EXPECT_EQ(cn::as_kernel_array<double>(host_like, host_like).data(), host_like.data());
  // kernel_output: a float output written through a double buffer on the device.
  auto result = cn::zeros<float>({4}, cn::Backend::host);
  {
    auto out = cn::kernel_output<double>(result, field);
    EXPECT_TRUE(out.buffer().is_device());
    out.buffer().fill(1.5);
  }
  EXPECT_EQ(result(3), 1.5f);
  // Nothing written back on an error.
  auto untouched = cn::zeros<float>({4}, cn::Backend::host);
  try {
    auto out = cn::kernel_output<double>(untouched, field);
    out.buffer().fill(9.0);
    throw cn::ValueError("the kernel failed");
  } catch (const cn::ValueError&) {
  }
  EXPECT_EQ(untouched(0), 0.0f);
  // Unchanged: the buffer is the output itself.
  auto same = cn::zeros<double>({4});
  auto out = cn::kernel_output<double>(same, field);
  EXPECT_EQ(out.buffer().data(), same.data());
}
