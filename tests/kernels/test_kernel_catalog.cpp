// KernelCatalog (a folder of CUDA sources found at run time, summary, with/without CUDA,
// compile_all with a failing kernel, check_signatures, typed access), HostImplementations
// and the process-wide implementation choice, host functions from a shared library.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/kernel_catalog.hpp>

#include "kernel_sources.hpp"
#include "test_environment.hpp"

namespace cn = cunumpy;
namespace fs = std::filesystem;
using cunumpy_test::have_host_compiler;
using cunumpy_test::nvrtc_available;
using cunumpy_test::TempDir;

namespace {

void scale_host(const cn::Array<double>& x, double a, long long n) {
  for (long long i = 0; i < n; ++i) x(i) *= a;
}
void shift_host(const cn::Array<double>& x, double b, long long n) {
  for (long long i = 0; i < n; ++i) x(i) += b;
}
void wrong_host(const cn::Array<int>& x, long long n) {
  (void)x, (void)n;
}

const char* kScaleSource = R"(
extern "C" __global__ void scale(double* x, double a, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
})";
const char* kBrokenSource = R"(
extern "C" __global__ void broken(double* x, long long n) { x[0] = undefined_name; }
)";
const char* kWrongSource = R"(
extern "C" __global__ void wrong(double* x, long long n) {}
)";

}  // namespace

TEST(KernelCatalog, FindsCudaSourcesInItsFolderAndSummarisesThePort) {
  TempDir dir;
  dir.write("scale/scale_cuda.cu", kScaleSource);
  cn::KernelCatalog catalog({.cuda_folder = dir.path});
  auto& scale = catalog.add("scale", scale_host);
  catalog.add("shift", shift_host);
  EXPECT_TRUE(scale.has_cuda());
  EXPECT_FALSE(catalog["shift"].has_cuda());
  EXPECT_EQ(catalog["shift"].cuda_path(), (dir.path / "shift" / "shift_cuda.cu").string());
  EXPECT_EQ(catalog.summary(), "CUDA kernels: 1 of 2 (missing: shift)");
  EXPECT_EQ(catalog.with_cuda(), std::vector<std::string>{"scale"});
  EXPECT_EQ(catalog.without_cuda(), std::vector<std::string>{"shift"});
  EXPECT_EQ(catalog.parity_cases(), std::vector<std::string>{"scale"});
  EXPECT_NO_THROW(catalog.check_signatures());
  // Typed access to call it; wrong types and unknown names are errors.
  auto& typed = catalog.get<decltype(&scale_host)>("scale");
  EXPECT_EQ(&typed, &scale);
  EXPECT_THROW((void)catalog.get<decltype(&wrong_host)>("scale"), cn::TypeError);
  try {
    (void)catalog["push"];
    FAIL();
  } catch (const cn::LookupError& e) {
    EXPECT_NE(std::string(e.what()).find("no kernel named 'push'; the catalog has scale, shift"),
              std::string::npos);
  }
  EXPECT_THROW(catalog.add("scale", scale_host), cn::ValueError);
  // The call runs the emulator's CUDA kernel on the emulated backend, the host one on host.
  if (have_host_compiler()) {
    auto on = cn::use_backend(cn::Backend::emulated);
    auto x = cn::full<double>({10}, 2.0);
    typed(cn::threads(10), x, 3.0, 10LL);
    EXPECT_EQ(cn::to_host(x)(9), 6.0);
  }
  auto hx = cn::full<double>({3}, 1.0, cn::Backend::host);
  catalog.get<decltype(&shift_host)>("shift")(cn::threads(3), hx, 0.5, 3LL);
  EXPECT_EQ(hx(2), 1.5);
}

TEST(KernelCatalog, SummaryListsAtMostTenMissing) {
  cn::KernelCatalog catalog;
  for (int i = 0; i < 12; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "k%02d", i);
    catalog.add(name, shift_host);
  }
  EXPECT_EQ(
      catalog.summary(),
      "CUDA kernels: 0 of 12 (missing: k00, k01, k02, k03, k04, k05, k06, k07, k08, k09, ...)");
  EXPECT_EQ(catalog.summary(2), "CUDA kernels: 0 of 12 (missing: k00, k01, ...)");
  EXPECT_EQ(catalog.compile_all(), std::vector<std::string>{}) << "nothing to compile";
}

TEST(KernelCatalog, CompileAllCompilesEveryKernelThenRaisesTheFirstFailure) {
  if (!nvrtc_available()) GTEST_SKIP() << "NVRTC is not available";
  TempDir dir;
  dir.write("scale/scale_cuda.cu", kScaleSource);
  dir.write("broken/broken_cuda.cu", kBrokenSource);
  cn::KernelCatalog catalog({.cuda_folder = dir.path});
  auto& scale = catalog.add("scale", scale_host);
  catalog.add("broken", [](const cn::Array<double>&, long long) {});
  try {
    catalog.compile_all(2);
    FAIL() << "a kernel that does not compile must raise";
  } catch (const cn::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("undefined_name"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(scale.cuda()->is_compiled()) << "the others are compiled all the same";
  // Two failures: one CompileError naming both.
  TempDir two;
  two.write("broken/broken_cuda.cu", kBrokenSource);
  two.write(
      "broken2/broken2_cuda.cu",
      std::string(kBrokenSource).replace(std::string(kBrokenSource).find("broken"), 6, "broken2"));
  cn::KernelCatalog both({.cuda_folder = two.path});
  both.add("broken", [](const cn::Array<double>&, long long) {});
  both.add("broken2", [](const cn::Array<double>&, long long) {});
  try {
    both.compile_all(2);
    FAIL() << "two kernels that do not compile must raise";
  } catch (const cn::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("2 kernels did not compile: broken, broken2;"),
              std::string::npos)
        << e.what();
  }
  TempDir good;
  good.write("scale/scale_cuda.cu", kScaleSource);
  cn::KernelCatalog ok({.cuda_folder = good.path});
  ok.add("scale", scale_host);
  EXPECT_EQ(ok.compile_all(0), std::vector<std::string>{"scale"});
}

// A catalog kernel's conversion and fallback events name the line that added it (not a line
// of the standard library inside make_shared).
TEST(KernelCatalog, EventsOfACatalogKernelNameTheLineThatAddedIt) {
  cn::KernelCatalog catalog({.missing_cuda = cn::MissingCuda::fallback});
  const int line = __LINE__ + 1;
  auto& scale = catalog.add("scale", scale_host);
  const auto on = cn::use_backend(cn::Backend::emulated);
  auto x = cn::ones<double>({4});
  auto counter = cn::count_transfers();
  scale(cn::threads(4), x, 2.0, 4LL);
  const auto events = counter.kernel_conversion_calls();
  ASSERT_EQ(events.size(), 1u) << counter.report();
  const std::string where = "test_kernel_catalog.cpp:" + std::to_string(line);
  EXPECT_NE(events[0].where.find(where), std::string::npos)
      << events[0].where << " should name " << where;
  EXPECT_EQ(cn::to_host(x)(3), 2.0);
}

TEST(KernelCatalog, CheckSignaturesListsEveryKernelThatDiffers) {
  TempDir dir;
  dir.write("scale/scale_cuda.cu", kScaleSource);
  dir.write("wrong/wrong_cuda.cu", kWrongSource);
  dir.write("shift/shift_cuda.cu",
            R"(extern "C" __global__ void shift(float* x, double b, long long n) {})");
  cn::KernelCatalog catalog({.cuda_folder = dir.path});
  catalog.add("scale", scale_host);
  catalog.add("wrong", wrong_host);
  catalog.add("shift", shift_host);
  try {
    catalog.check_signatures();
    FAIL();
  } catch (const cn::ValueError& e) {
    const std::string m = e.what();
    std::printf("%s\n", m.c_str());
    EXPECT_NE(m.find("KernelCatalog: 2 kernel(s) whose host and CUDA parameters differ"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("Kernel 'wrong'"), std::string::npos) << m;
    EXPECT_NE(m.find("Kernel 'shift'"), std::string::npos) << m;
    EXPECT_EQ(m.find("Kernel 'scale'"), std::string::npos) << m;
  }
}

// Scalars the launch would refuse, or fail for some values, are refused by the check: a host
// double for a CUDA float (the launch's words), a wider integer, another signedness.  A float
// for a double and an int for a long long (widening) pass.
namespace {
void scale_f_host(const cn::Array<float>&, double, long long) {}
void widen_host(const cn::Array<float>&, float, int) {}
void sign_host(const cn::Array<float>&, float, unsigned) {}
}  // namespace

TEST(KernelCatalog, CheckSignaturesRefusesWhatTheLaunchWouldRefuse) {
  TempDir dir;
  dir.write("scale_f/scale_f_cuda.cu",
            R"(extern "C" __global__ void scale_f(float* x, float a, int n) {})");
  dir.write("widen/widen_cuda.cu",
            R"(extern "C" __global__ void widen(float* x, double a, long long n) {})");
  dir.write("sign/sign_cuda.cu", R"(extern "C" __global__ void sign(float* x, float a, int n) {})");
  cn::KernelCatalog catalog({.cuda_folder = dir.path});
  catalog.add("scale_f", scale_f_host);
  catalog.add("widen", widen_host);
  catalog.add("sign", sign_host);
  try {
    catalog.check_signatures();
    FAIL() << "double for float, long long for int and unsigned for int must be refused";
  } catch (const cn::ValueError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("KernelCatalog: 2 kernel(s) whose host and CUDA parameters differ"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("expected a value of at most single precision for 'float'"), std::string::npos)
        << m;
    EXPECT_NE(m.find("a wider integer"), std::string::npos) << m;
    EXPECT_NE(m.find("another signedness"), std::string::npos) << m;
    EXPECT_EQ(m.find("Kernel 'widen'"), std::string::npos) << "widening passes: " << m;
  }
}

// ---- a legacy routine of raw pointers ------------------------------------------------------

namespace {
// A C routine as a legacy code has it: linear-weighting charge deposit on a periodic 1D grid.
extern "C" void deposit_c(const float* x, float* q, float qm, int nop, int nx) {
  for (int j = 0; j < nop; ++j) {
    const int n = static_cast<int>(x[j]);
    const float dx = x[j] - static_cast<float>(n);
    q[n] += qm * (1.0f - dx);
    q[(n + 1) % nx] += qm * dx;
  }
}
const char* kDepositSource = R"(
extern "C" __global__ void deposit(const float* x, float* q, float qm, int nop, int nx) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= nop) return;
  int n = (int)x[j];
  float dx = x[j] - (float)n;
  atomicAdd(&q[n], qm * (1.0f - dx));
  atomicAdd(&q[(n + 1) % nx], qm * dx);
})";

std::vector<float> deposit_expected(const std::vector<float>& x, float qm, int nx) {
  std::vector<float> q(static_cast<std::size_t>(nx), 0.0f);
  deposit_c(x.data(), q.data(), qm, static_cast<int>(x.size()), nx);
  return q;
}
}  // namespace

// A C function of float* and int is a host kernel as it is: the call passes Arrays, the host
// side receives their host data (a copy on a device backend, the outputs copied back).
TEST(KernelCatalog, ALegacyRoutineOfRawPointersIsAHostKernel) {
  const std::vector<float> xs = {0.25f, 1.5f, 3.75f, 7.5f, 2.0f};
  const int nx = 8;
  const auto expected = deposit_expected(xs, 0.5f, nx);
  auto check = [&](const cn::Array<float>& q) {
    const auto h = cn::to_host(q);
    for (int i = 0; i < nx; ++i) EXPECT_FLOAT_EQ(h(i), expected[static_cast<std::size_t>(i)]) << i;
  };
  cn::KernelCatalog catalog({.missing_cuda = cn::MissingCuda::fallback});
  auto& deposit = catalog.add("deposit", &deposit_c, {.outputs = std::vector{1}});
  const auto params = deposit.host_parameters();
  ASSERT_TRUE(params.has_value());
  EXPECT_EQ(*params, (std::vector<std::string>{"const float*", "float*", "float", "int", "int"}));
  {  // host: called directly on the arrays' data
    auto x = cn::from_host<float>(xs, cn::Shape{5}, cn::Backend::host);
    auto q = cn::zeros<float>({nx}, cn::Backend::host);
    deposit(cn::threads(5), x, q, 0.5f, 5, nx);
    check(q);
  }
  {  // emulated, no CUDA twin: host copies; only q (output 1) is copied back
    const auto on = cn::use_backend(cn::Backend::emulated);
    EXPECT_EQ(catalog.at("deposit").get_kernel(), "host (fallback)");
    auto x = cn::from_host<float>(xs);
    auto q = cn::zeros<float>({nx});
    auto counter = cn::count_transfers();
    deposit(cn::threads(5), x, q, 0.5f, 5, nx);
    check(q);
    const auto events = counter.kernel_conversion_calls();
    ASSERT_EQ(events.size(), 1u) << counter.report();
    EXPECT_NE(events[0].description.find("2 array(s)"), std::string::npos) << counter.report();
  }
  // Through HostKernel alone, with a const pointer given a device array on the host backend.
  {
    cn::HostKernel k("deposit", &deposit_c, {.outputs = std::vector{-4}});
    auto x = cn::from_host<float>(xs, cn::Shape{5}, cn::Backend::emulated);
    auto q = cn::zeros<float>({nx}, cn::Backend::emulated);
    k(x, q, 0.5f, 5, nx);
    check(q);
  }
}

// With its CUDA twin in the catalog's folder: the check sees float* as an array of float32, the
// emulated backend runs the twin, and both agree.
TEST(KernelCatalog, ALegacyRoutineBesideItsCudaTwin) {
  TempDir dir;
  dir.write("deposit/deposit_cuda.cu", kDepositSource);
  cn::KernelCatalog catalog({.cuda_folder = dir.path});
  auto& deposit = catalog.add("deposit", &deposit_c);
  EXPECT_NO_THROW(catalog.check_signatures());
  const std::vector<float> xs = {0.25f, 1.5f, 3.75f, 7.5f, 2.0f, 6.125f};
  const auto expected = deposit_expected(xs, 0.5f, 8);
  if (!have_host_compiler()) GTEST_SKIP() << "no host compiler for the emulator";
  const auto on = cn::use_backend(cn::Backend::emulated);
  EXPECT_EQ(catalog.at("deposit").get_kernel(), "cuda");
  auto x = cn::from_host<float>(xs);
  auto q = cn::zeros<float>({8});
  auto counter = cn::count_transfers();
  deposit(cn::threads(6), x, q, 0.5f, 6, 8);
  EXPECT_TRUE(counter.kernel_conversion_calls().empty()) << counter.report();
  const auto h = cn::to_host(q);
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(h(i), expected[static_cast<std::size_t>(i)], 1e-6f) << i;
  // A twin whose pointer has another element type is refused by the check.
  TempDir other;
  other.write("deposit/deposit_cuda.cu",
              R"(extern "C" __global__ void deposit(const double* x, float* q, float qm, int nop,
                                                     int nx) {})");
  cn::KernelCatalog wrong({.cuda_folder = other.path});
  wrong.add("deposit", &deposit_c);
  try {
    wrong.check_signatures();
    FAIL() << "const float* on the host, const double* on CUDA must be refused";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("elements of float32 on the host, float64 on CUDA"),
              std::string::npos)
        << e.what();
  }
}

// Options given to add are merged with the catalog's; typed access by the function's type;
// get_kernel on every entry.
TEST(KernelCatalog, KernelOptionsAddToTheCatalogsAndEveryEntryTellsItsKernel) {
  cn::KernelCatalog catalog(
      {.dispatch = cn::Dispatch::arrays, .missing_cuda = cn::MissingCuda::fallback});
  auto& scale = catalog.add("scale", scale_host, {.outputs = std::vector<int>{}});
  catalog.add("shift", shift_host, {.missing_cuda = cn::MissingCuda::raise});
  EXPECT_EQ(scale.dispatch(), cn::Dispatch::arrays);                   // the catalog's
  EXPECT_EQ(scale.missing_cuda(), cn::MissingCuda::fallback);          // the catalog's
  EXPECT_EQ(scale.options().host.outputs, std::vector<int>{});         // its own
  EXPECT_EQ(catalog["shift"].dispatch(), cn::Dispatch::arrays);        // the catalog's
  EXPECT_EQ(catalog["shift"].missing_cuda(), cn::MissingCuda::raise);  // its own
  EXPECT_EQ(&catalog.get<decltype(scale_host)>("scale"), &scale);
  EXPECT_EQ(&catalog.get<decltype(&scale_host)>("scale"), &scale);
  EXPECT_EQ(catalog["scale"].get_kernel(), "host");
  const auto on = cn::use_backend(cn::Backend::emulated);
  EXPECT_EQ(catalog["scale"].get_kernel(), "host (fallback)");
  EXPECT_THROW((void)catalog["shift"].get_kernel(), cn::BackendError);
}

// ---- host implementations ------------------------------------------------------------------

namespace {
int twice_fast(int x) {
  return 2 * x + 1000;
}  // "fast": marked so the test sees which ran
int twice_reference(int x) {
  return 2 * x;
}
using Twice = int (*)(int);
}  // namespace

TEST(HostImplementations, DefaultOrderSelectionAndErrors) {
  cn::set_kernel_implementation(std::nullopt);
  cn::HostImplementations<Twice> twice(
      "twice", {{"openmp", [] { return &twice_fast; }},
                {"ispc", []() -> Twice { throw cn::Error("libtwice_ispc.so not built"); }},
                {"reference", [] { return &twice_reference; }}});
  EXPECT_EQ(twice.names(), (std::vector<std::string>{"openmp", "ispc", "reference"}));
  EXPECT_EQ(twice.selected(), "openmp") << "the first that loads, in the order given";
  EXPECT_EQ(twice(3), 1006);
  EXPECT_FALSE(twice.available("ispc"));
  EXPECT_EQ(twice.errors().at("ispc"), "libtwice_ispc.so not built");
  try {
    (void)twice.get("ispc");
    FAIL();
  } catch (const cn::LookupError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "implementation 'ispc' failed to load: libtwice_ispc.so not built"),
              std::string::npos);
  }
  {
    auto scope = cn::use_kernel_implementation("reference");
    EXPECT_EQ(twice.selected(), "reference");
    EXPECT_EQ(twice(3), 6);
  }
  EXPECT_EQ(twice(3), 1006) << "the scope ended";
  cn::set_kernel_implementation("numba");
  try {
    (void)twice(3);
    FAIL() << "a chosen implementation the kernel lacks is an error";
  } catch (const cn::LookupError& e) {
    EXPECT_NE(
        std::string(e.what()).find("has no implementation 'numba'; it has openmp, ispc, reference"),
        std::string::npos)
        << e.what();
  }
  cn::set_kernel_implementation(std::nullopt);
  EXPECT_THROW(cn::HostImplementations<Twice>("x", {{"openmp", [] { return &twice_fast; }}}),
               cn::ValueError)
      << "reference is required";
  // Only the reference loads: it runs, with a warning once.
  cn::HostImplementations<Twice> only("only",
                                      {{"openmp", []() -> Twice { throw cn::Error("missing"); }},
                                       {"reference", [] { return &twice_reference; }}});
  EXPECT_EQ(only.selected(), "reference");
  // A Kernel's host side may be a HostImplementations (its parameters come from F).
  using Shift = void (*)(const cn::Array<double>&, double, long long);
  cn::HostImplementations<Shift> shifts("shift", {{"reference", [] { return &shift_host; }}});
  cn::Kernel<cn::HostImplementations<Shift>> k("shift", shifts);
  EXPECT_EQ(k.host_parameters().value(),
            (std::vector<std::string>{"Array<float64>", "double", "long long"}));
  auto x = cn::zeros<double>({2}, cn::Backend::host);
  k(cn::threads(2), x, 1.0, 2LL);
  EXPECT_EQ(x(1), 1.0);
}

TEST(HostImplementations, TheEnvironmentChoosesForEveryKernel) {
  if (const char* expect = std::getenv("CUNUMPY_TEST_EXPECT_IMPLEMENTATION")) {
    EXPECT_EQ(cn::get_kernel_implementation().value_or(""), expect);
  } else {
    GTEST_SKIP() << "run by the ctest registration that sets CUNUMPY_KERNEL_IMPLEMENTATION";
  }
}

TEST(HostImplementations, ALoaderOpensASharedLibraryOnFirstUse) {
  if (!have_host_compiler()) GTEST_SKIP() << "no host compiler to build the library";
  TempDir dir;
  dir.write("twice.c", "int twice(int x) { return 2 * x + 7; }\n");
  const fs::path lib = dir.path / "libtwice.so";
  const std::string cmd = cn::emulation_compiler() + " -x c -shared -fPIC " +
                          (dir.path / "twice.c").string() + " -o " + lib.string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  cn::HostImplementations<Twice> twice(
      "twice", {{"library", [&] { return cn::load_host_function<Twice>(lib, "twice"); }},
                {"reference", [] { return &twice_reference; }}});
  EXPECT_EQ(twice(5), 17);
  EXPECT_THROW((void)cn::load_host_function<Twice>(lib, "thrice"), cn::Error);
  EXPECT_THROW((void)cn::load_host_function<Twice>(dir.path / "missing.so", "twice"), cn::Error);
}
