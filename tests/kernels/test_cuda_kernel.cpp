// CudaKernel without a GPU: signatures, includes, NVRTC compilation of real kernels, the
// cache (hit, miss, invalidation, corruption), every argument check, launch shapes, debug
// options, structs and their headers.  Compilation tests skip (with the reason) only where
// NVRTC cannot be loaded.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <cunumpy/build_config.hpp>
#include <cunumpy/cuda_check.hpp>
#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>
#include <cunumpy/internal/cuda_api.hpp>

#include "kernel_sources.hpp"
#include "on_backend.hpp"
#include "test_environment.hpp"

namespace cn = cunumpy;
namespace fs = std::filesystem;

using namespace cunumpy_test;

namespace {

// Skips when NVRTC cannot be loaded on this machine (it is part of the CUDA toolkit).
#define REQUIRE_NVRTC()                                               \
  do {                                                                \
    if (!nvrtc_available()) GTEST_SKIP() << "NVRTC is not available"; \
  } while (0)

}  // namespace

// ---- C types and signatures -----------------------------------------------------------------

TEST(CTypes, DTypesAndCTypesMapAsOnLinux) {
  EXPECT_EQ(cn::ctype_of<double>(), "double");
  EXPECT_EQ(cn::ctype_of<float>(), "float");
  EXPECT_EQ(cn::ctype_of<std::int64_t>(), "long long");
  EXPECT_EQ(cn::ctype_of<std::complex<double>>(), "complex<double>");
  EXPECT_EQ(cn::dtype_of_ctype("int"), cn::DType::int32);
  EXPECT_EQ(cn::dtype_of_ctype("long"), cn::DType::int64);
  EXPECT_EQ(cn::dtype_of_ctype("unsigned long long"), cn::DType::uint64);
  EXPECT_EQ(cn::dtype_of_ctype("size_t"), cn::DType::uint64);
  EXPECT_EQ(cn::dtype_of_ctype("std::int16_t"), cn::DType::int16);
  EXPECT_EQ(cn::dtype_of_ctype("cuda::std::complex<float>"), cn::DType::complex64);
  EXPECT_EQ(cn::dtype_of_ctype("bool"), cn::DType::boolean);
  EXPECT_FALSE(cn::dtype_of_ctype("Particles").has_value());
  for (cn::DType d :
       {cn::DType::boolean, cn::DType::int8, cn::DType::uint8, cn::DType::int16, cn::DType::uint16,
        cn::DType::int32, cn::DType::uint32, cn::DType::int64, cn::DType::uint64,
        cn::DType::float32, cn::DType::float64, cn::DType::complex64, cn::DType::complex128})
    EXPECT_EQ(cn::dtype_of_ctype(cn::ctype_of(d)), d) << cn::ctype_of(d);
}

TEST(Signature, EveryParameterKind) {
  const std::string src = R"(
    // void decoy(int x) {}
    /* __global__ void commented(int x) {} */
    extern "C" __global__ void __launch_bounds__(256) k(
        const double* __restrict__ x, float* y, void* any, int n, unsigned long long big, size_t count,
        bool flag, std::int8_t small, cuda::std::complex<double> z, const Array3D<float> grid,
        cunumpy::Array1D<long long> ids, Particles p, const int scale) {}
  )";
  const std::string structs[] = {"Particles"};
  const auto p = cn::parse_cuda_signature(src, "k", structs);
  ASSERT_EQ(p.size(), 13u);
  EXPECT_EQ(p[0].name, "x");
  EXPECT_TRUE(p[0].pointer);
  EXPECT_TRUE(p[0].is_const);
  EXPECT_EQ(p[0].dtype, cn::DType::float64);
  EXPECT_EQ(p[1].dtype, cn::DType::float32);
  EXPECT_TRUE(p[2].pointer);
  EXPECT_EQ(p[2].ctype, "void");
  EXPECT_FALSE(p[2].dtype.has_value());
  EXPECT_EQ(p[3].dtype, cn::DType::int32);
  EXPECT_EQ(p[4].dtype, cn::DType::uint64);
  EXPECT_EQ(p[5].dtype, cn::DType::uint64);
  EXPECT_EQ(p[6].dtype, cn::DType::boolean);
  EXPECT_EQ(p[7].dtype, cn::DType::int8);
  EXPECT_EQ(p[8].dtype, cn::DType::complex128);
  EXPECT_EQ(p[9].view_ndim, 3);
  EXPECT_EQ(p[9].dtype, cn::DType::float32);
  EXPECT_EQ(p[10].view_ndim, 1);
  EXPECT_EQ(p[10].dtype, cn::DType::int64);
  EXPECT_EQ(p[11].struct_name, "Particles");
  EXPECT_TRUE(p[12].is_const);
  EXPECT_FALSE(p[12].pointer);
  EXPECT_TRUE(
      cn::parse_cuda_signature("extern \"C\" __global__ void none(void) {}", "none").empty());
  EXPECT_TRUE(cn::parse_cuda_signature("extern \"C\" __global__ void none() {}", "none").empty());
}

TEST(Signature, TemplatesAreInstantiated) {
  const cn::TemplateArg args[] = {cn::DType::float64, 3};
  const auto p = cn::parse_cuda_signature(kScale, "scale", {}, args);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].ctype, "double");
  EXPECT_TRUE(p[0].pointer);
  EXPECT_EQ(p[1].dtype, cn::DType::float64);
  EXPECT_EQ(cn::template_expression("scale", args), "scale<double, 3>");
  EXPECT_NE(message_of([] {
              (void)cn::parse_cuda_signature(kScale, "scale");
            }).find("template of 2 parameter(s)"),
            std::string::npos);
  const cn::TemplateArg swapped[] = {3, "double"};
  EXPECT_NE(message_of([&] {
              (void)cn::parse_cuda_signature(kScale, "scale", {}, swapped);
            }).find("takes a type"),
            std::string::npos);
}

TEST(Signature, WhatCannotBeParsedSaysWhatAndWhere) {
  struct Case {
    const char* source;
    const char* expected;
  };
  const Case cases[] = {
      {"extern \"C\" __global__ void k(double** x) {}", "pointers to pointers"},
      {"extern \"C\" __global__ void k(REAL* x) {}", "'REAL' looks like a macro"},
      {"extern \"C\" __global__ void k(double& x) {}", "references"},
      {"extern \"C\" __global__ void k(int n = 3) {}", "default arguments"},
      {"extern \"C\" __global__ void k(double x[4]) {}", "arrays are not kernel parameters"},
      {"extern \"C\" __global__ void k(Widget w) {}", "unknown type 'Widget'"},
      {"extern \"C\" __global__ void k(Array5D<double> a) {}",
       "array views have 1 to 4 dimensions"},
      {"extern \"C\" __global__ void k(Array2D<Widget> a) {}", "array views of 'Widget'"},
      {"extern \"C\" __global__ void k(int) {}", "a type and a name"},
      {"extern \"C\" __global__ void other(int n) {}",
       "has no __global__ function 'k' (it has: other)"},
  };
  for (const Case& c : cases) {
    const std::string what = message_of([&] { (void)cn::parse_cuda_signature(c.source, "k"); });
    EXPECT_NE(what.find(c.expected), std::string::npos) << c.source << "\n" << what;
    EXPECT_NE(what.find("parse_cuda_signature"), std::string::npos) << what;
  }
  EXPECT_THROW((void)cn::parse_cuda_signature("extern \"C\" __global__ void k(double** x) {}", "k"),
               cn::ValueError);
}

TEST(Signature, KernelNamesInSourceOrderWithoutComments) {
  const std::string src = R"(
    extern "C" __global__ void scale(double* x) {}
    // extern "C" __global__ void hidden(double* x) {}
    extern "C" __global__ void shift(double* x) {}
    template <typename T> __global__ void generic(T* x) {}
  )";
  EXPECT_EQ(cn::cuda_kernel_names(src), (std::vector<std::string>{"scale", "shift", "generic"}));
}

// Random token soup (a fixed seed, so a failure reproduces): the parser returns or throws
// ValueError, never crashes or hangs.
TEST(Signature, FuzzedInputNeverCrashes) {
  const char* pieces[] = {
      "extern", "\"C\"",   "__global__", "void",     "k",  "(",        ")",
      ",",      "*",       "&",          "<",        ">",  "const",    "double",
      "int",    "Array2D", "template",   "typename", "T",  "{",        "}",
      ";",      "/*",      "*/",         "//",       "\n", "unsigned", "long",
      "::",     "std",     "=",          "[",        "]",  "3",        "__launch_bounds__",
      "\"",     "x"};
  std::mt19937_64 rng(20261201);
  long long parsed = 0, rejected = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string src;
    const int n = static_cast<int>(rng() % 40);
    if (rng() % 2) src = "extern \"C\" __global__ void k(";
    for (int i = 0; i < n; ++i)
      src += std::string(pieces[rng() % std::size(pieces)]) + (rng() % 3 ? " " : "");
    try {
      (void)cn::parse_cuda_signature(src, "k");
      ++parsed;
    } catch (const cn::ValueError&) {
      ++rejected;
    }
    (void)cn::cuda_kernel_names(src);
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

// ---- includes -------------------------------------------------------------------------------

TEST(Includes, ResolvedAsNvrtcDoesEachOnceCyclesEnd) {
  TempDir t;
  t.write("src/kernel_cuda.cu", "#include \"helpers.cuh\"\n#include \"common.cuh\"\n");
  t.write("src/helpers.cuh",
          "#include \"common.cuh\"\n#include \"nested/deep.cuh\"\n#include \"missing.cuh\"\n");
  t.write("src/common.cuh",
          "// found first: next to the including file\n#include \"helpers.cuh\"\n");
  t.write("inc/common.cuh", "// shadowed by src/common.cuh\n");
  t.write("inc/nested/deep.cuh", "#include <cunumpy/index.cuh>\n// #include \"commented.cuh\"\n");
  const fs::path dirs[] = {t.path / "inc"};
  const fs::path shipped[] = {cn::cuda_include_dir()};
  std::ifstream source(t.path / "src/kernel_cuda.cu");
  const std::string text((std::istreambuf_iterator<char>(source)), {});
  const auto got = cn::resolve_includes(text, dirs, t.path / "src", shipped);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0], fs::weakly_canonical(t.path / "src/helpers.cuh"));
  EXPECT_EQ(got[1], fs::weakly_canonical(t.path / "src/common.cuh"))
      << "the including file's folder comes first";
  EXPECT_EQ(got[2], fs::weakly_canonical(t.path / "inc/nested/deep.cuh"));
  EXPECT_EQ(got[3].filename(), "index.cuh") << "shipped headers are tracked in angle brackets too";
  EXPECT_EQ(got[4].filename(), "config.cuh") << "and their own includes";
  EXPECT_TRUE(cn::resolve_includes("#include <vector>\n#include \"nowhere.cuh\"\n").empty());
  const auto h1 = cn::include_hash(got);
  EXPECT_EQ(h1.size(), 16u);
  t.write("src/common.cuh", "// edited\n#include \"helpers.cuh\"\n");
  EXPECT_NE(cn::include_hash(got), h1) << "the hash covers the contents";
}

// ---- compilation and the cache ---------------------------------------------------------------

TEST(Compile, RealKernelsCompileToCubin) {
  REQUIRE_NVRTC();
  ScopedCache cache;
  cn::CudaKernel block_sum(kBlockSum, "block_sum", {.block_size = 128});
  block_sum.compile();
  EXPECT_TRUE(block_sum.is_compiled());
  EXPECT_EQ(block_sum.cubin().substr(0, 4), std::string("\x7f"
                                                        "ELF"));
  cn::CudaKernel scale_column(kScaleColumn, "scale_column");
  scale_column.compile();
  EXPECT_GT(scale_column.cubin().size(), 100u);
  EXPECT_EQ(scale_column.included_headers().size(), 4u)
      << "array_view, index and their config/error headers";
  cn::CudaKernel scale(kScale, "scale", {.template_args = {cn::DType::float64, 3}});
  EXPECT_EQ(scale.expression(), "scale<double, 3>");
  scale.compile();
  EXPECT_GT(scale.cubin().size(), 100u);
  const auto& particles = cn::cuda_struct<Particles>();
  cn::CudaKernel push(particles.declaration() + kPush, "push", {.structs = {&particles}});
  push.compile();
  EXPECT_GT(push.cubin().size(), 100u);
  const auto opts = block_sum.compile_options();
  EXPECT_EQ(std::count(opts.begin(), opts.end(), "-I" + cn::cuda_include_dir().string()), 1)
      << "the shipped headers are on the include path once";
  EXPECT_NE(std::find(opts.begin(), opts.end(), "--gpu-architecture=" + block_sum.architecture()),
            opts.end());
}

// Registered with CUNUMPY_NVRTC pointing nowhere: creating kernels and parsing signatures
// works, the first compilation says what is missing and how to get it.
TEST(Compile, WithoutNvrtcTheFirstCompilationSaysWhy) {
  if (std::getenv("CUNUMPY_TEST_NO_NVRTC") == nullptr)
    GTEST_SKIP() << "run by test_cuda_kernel_without_nvrtc";
  cn::CudaKernel k(kBlockSum, "block_sum");
  EXPECT_EQ(k.signature().size(), 3u);
  const std::string what = message_of([&] { k.compile(); });
  EXPECT_NE(what.find("NVRTC (the CUDA run-time compiler) cannot be loaded; tried:"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("/nonexistent/libnvrtc.so.13"), std::string::npos) << what;
  EXPECT_NE(what.find("set CUNUMPY_NVRTC"), std::string::npos) << what;
  EXPECT_THROW(k.compile(), cn::BackendError) << "and again on the next try";
}

TEST(Compile, ErrorsShowNvrtcsLog) {
  REQUIRE_NVRTC();
  ScopedCache cache;
  cn::CudaKernel broken(
      R"(extern "C" __global__ void broken(double* x) { x[0] = undefined_name; })", "broken");
  try {
    broken.compile();
    FAIL() << "expected CompileError";
  } catch (const cn::CompileError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("CudaKernel 'broken': NVRTC could not compile broken.cu"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("undefined_name"), std::string::npos) << what;
    EXPECT_NE(what.find("options:"), std::string::npos) << what;
    std::printf("%s\n", what.c_str());
  }
}

TEST(Cache, HitMissAndHeaderInvalidation) {
  REQUIRE_NVRTC();
  ScopedCache cache;
  TempDir src;
  src.write("k/helper.cuh", "#define HELPER_VALUE 1.0\n");
  src.write("k/unrelated.cuh", "#define UNRELATED 1\n");
  src.write("k/scale_cuda.cu",
            "#include \"helper.cuh\"\nextern \"C\" __global__ void scale(double* x) { x[0] *= "
            "HELPER_VALUE; }\n");
  const auto start = cn::kernel_cache_stats();
  auto first = cn::CudaKernel::from_file(src.path / "k/scale_cuda.cu");
  EXPECT_EQ(first.name(), "scale") << "the name is the file name without _cuda.cu";
  first.compile();
  EXPECT_FALSE(first.loaded_from_cache());
  auto again = cn::CudaKernel::from_file(src.path / "k/scale_cuda.cu");
  again.compile();
  EXPECT_TRUE(again.loaded_from_cache()) << "same source, options and headers: a hit";
  EXPECT_EQ(again.cubin(), first.cubin());
  src.write("k/unrelated.cuh", "#define UNRELATED 2\n");  // not included: still a hit
  auto unrelated = cn::CudaKernel::from_file(src.path / "k/scale_cuda.cu");
  unrelated.compile();
  EXPECT_TRUE(unrelated.loaded_from_cache())
      << "a header the kernel does not include changes nothing";
  src.write("k/helper.cuh", "#define HELPER_VALUE 2.0\n");  // included: a miss
  auto edited = cn::CudaKernel::from_file(src.path / "k/scale_cuda.cu");
  edited.compile();
  EXPECT_FALSE(edited.loaded_from_cache())
      << "an edited header recompiles the kernels that include it";
  const auto end = cn::kernel_cache_stats();
  EXPECT_EQ(end.hits - start.hits, 2);
  EXPECT_EQ(end.compiles - start.compiles, 2);
  EXPECT_EQ(cache.entries().size(), 2u)
      << "one entry per distinct compilation, no temporary files left";
}

TEST(Cache, CorruptedOrTruncatedEntriesAreRecompiledNeverLoaded) {
  REQUIRE_NVRTC();
  ScopedCache cache;
  cn::CudaKernel k(kBlockSum, "block_sum");
  k.compile();
  ASSERT_EQ(cache.entries().size(), 1u);
  const fs::path entry = cache.entries()[0];
  const auto good = fs::file_size(entry);
  for (int damage = 0; damage < 3; ++damage) {
    if (damage == 0) fs::resize_file(entry, good / 2);  // truncated by a kill
    if (damage == 1) {                                  // one byte flipped
      std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(good - 10));
      f.put('\x55');
    }
    if (damage == 2) std::ofstream(entry, std::ios::trunc) << "garbage";
    const auto before = cn::kernel_cache_stats();
    cn::CudaKernel again(kBlockSum, "block_sum");
    again.compile();
    EXPECT_FALSE(again.loaded_from_cache()) << "damage " << damage;
    EXPECT_EQ(again.cubin(), k.cubin());
    EXPECT_EQ(cn::kernel_cache_stats().rejected, before.rejected + 1);
    EXPECT_EQ(fs::file_size(entry), good) << "the entry was rewritten whole";
    cn::CudaKernel hit(kBlockSum, "block_sum");
    hit.compile();
    EXPECT_TRUE(hit.loaded_from_cache());
  }
}

TEST(Cache, OffMeansNoDiskCache) {
  REQUIRE_NVRTC();
  ScopedCache cache;
  ::setenv("CUNUMPY_KERNEL_CACHE", "off", 1);
  cn::CudaKernel k(kBlockSum, "block_sum");
  k.compile();
  EXPECT_FALSE(k.loaded_from_cache());
  EXPECT_TRUE(cache.entries().empty());
}

// ---- arguments ------------------------------------------------------------------------------

class Arguments : public cn::testing::OnEmulated {};

TEST_F(Arguments, EveryCheckSaysWhatWasExpected) {
  cn::CudaKernel k(R"(
    extern "C" __global__ void k(const double* x, float* y, void* any, int n, float f, double d,
                                 bool b, unsigned char u, Array2D<double> a, complex<float> z) {})",
                   "k");
  auto x = cn::zeros<double>({8});
  auto y = cn::zeros<float>({8});
  auto ints = cn::zeros<int>({8});
  auto grid = cn::zeros<double>({4, 6});
  const std::complex<float> z(1, 2);
  // A correct call packs every parameter with its C size.
  const auto packed = k.prepare_args(x, y, ints, 7, 1.5f, 2.5, true, 200, grid, z);
  ASSERT_EQ(packed.size(), 10u);
  EXPECT_EQ(packed.bytes(3).size(), 4u);
  EXPECT_EQ(packed.bytes(4).size(), 4u);
  EXPECT_EQ(packed.bytes(7).size(), 1u);
  EXPECT_EQ(packed.bytes(8).size(), 40u) << "Array2D: pointer, 2 extents, 2 strides";
  long long view[5];
  std::memcpy(view, packed.bytes(8).data(), 40);
  EXPECT_EQ(view[1], 4);
  EXPECT_EQ(view[2], 6);
  EXPECT_EQ(view[3], 6) << "strides in elements";
  EXPECT_EQ(view[4], 1);
  EXPECT_EQ(k.prepare_args(x, y, ints, 7, 1, 2, true, 200, grid, 1.5f).size(), 10u)
      << "integers into floating-point parameters, reals into complex ones";

  struct Bad {
    std::function<void()> call;
    const char* expected;
  };
  auto host_x = cn::zeros<double>({8}, cn::Backend::host);
  const Bad bad[] = {
      {[&] { (void)k.prepare_args(host_x, y, ints, 7, 1.5f, 2.5, true, 200, grid, z); },
       "argument 0 ('const double* x'): expected a contiguous device array of float64, got a host "
       "array of float64 "
       "with 1 dimension(s); host data is never copied to the device implicitly"},
      {[&] { (void)k.prepare_args(y, y, ints, 7, 1.5f, 2.5, true, 200, grid, z); },
       "got a device array of float32 with 1 dimension(s); convert the data to float64"},
      {[&] { (void)k.prepare_args(x, y, ints, 3000000000LL, 1.5f, 2.5, true, 200, grid, z); },
       "3000000000 does not fit the parameter type 'int'"},
      {[&] { (void)k.prepare_args(x, y, ints, 7.0, 1.5f, 2.5, true, 200, grid, z); },
       "convert it to an integer type first"},
      {[&] { (void)k.prepare_args(x, y, ints, 7, 1.5, 2.5, true, 200, grid, z); },
       "a value of at most single precision for 'float', got a floating-point value (float64); "
       "convert it"},
      {[&] { (void)k.prepare_args(x, y, ints, 7, 1.5f, 2.5, 1, 200, grid, z); }, "expected a bool"},
      {[&] { (void)k.prepare_args(x, y, ints, 7, 1.5f, 2.5, true, 256, grid, z); },
       "256 does not fit the parameter type 'unsigned char'"},
      {[&] { (void)k.prepare_args(x, y, ints, 7, 1.5f, 2.5, true, -1, grid, z); },
       "-1 does not fit"},
      {[&] { (void)k.prepare_args(x, y, ints, 7, 1.5f, 2.5, true, 200, x, z); },
       "expected a device array of float64 with 2 dimension(s), got a device array of float64 with "
       "1 dimension(s)"},
      {[&] {
         (void)k.prepare_args(x, y, ints, 7, 1.5f, 2.5, true, 200, grid,
                              std::complex<double>(1, 2));
       },
       "convert it to std::complex<float>"},
      {[&] { (void)k.prepare_args(x, y, ints, 7, 1.5f, 2.5, true, 200, grid); },
       "9 argument(s) given, the signature has 10"},
      {[&] { (void)k.prepare_args(7, y, ints, 7, 1.5f, 2.5, true, 200, grid, z); },
       "got an integer (int32); pass an Array"},
      {[&] { (void)k.prepare_args(x, y, ints, x, 1.5f, 2.5, true, 200, grid, z); },
       "expected a scalar 'int'"},
  };
  for (const Bad& b : bad) {
    const std::string what = message_of(b.call);
    EXPECT_NE(what.find(b.expected), std::string::npos)
        << "expected: " << b.expected << "\ngot: " << what;
  }
  EXPECT_THROW((void)k.prepare_args(x, y, ints, 7, 1.5, 2.5, true, 200, grid, z), cn::TypeError);
  EXPECT_THROW((void)k.prepare_args(x, y, ints, 3000000000LL, 1.5f, 2.5, true, 200, grid, z),
               cn::ValueError);
}

TEST_F(Arguments, StridedViewsGoToViewParametersNotPointers) {
  cn::CudaKernel view_kernel(kScaleColumn, "scale_column");
  cn::CudaKernel pointer_kernel(
      "extern \"C\" __global__ void p(double* x, long long c, double f) {}", "p");
  auto markers = cn::zeros<double>({10, 6});
  const auto v = cn::strided<2>(markers, {cn::Slice{0, 10, 2}, cn::Slice{1, 5}});
  EXPECT_EQ(v.view.shape[0], 5);
  EXPECT_EQ(v.view.shape[1], 4);
  const auto packed = view_kernel.prepare_args(v, 1LL, 10.0);
  long long view[5];
  std::memcpy(view, packed.bytes(0).data(), 40);
  EXPECT_EQ(reinterpret_cast<double*>(view[0]), markers.data() + 1);
  EXPECT_EQ(view[1], 5);
  EXPECT_EQ(view[2], 4);
  EXPECT_EQ(view[3], 12) << "every second row: a stride of 2 rows";
  EXPECT_EQ(view[4], 1);
  EXPECT_NE(message_of([&] {
              (void)pointer_kernel.prepare_args(v, 1LL, 10.0);
            }).find("would be read as a flat buffer"),
            std::string::npos);
  EXPECT_THROW((void)cn::strided<2>(markers, {cn::Slice{0, 10, 0}, cn::Slice{}}), cn::ValueError);
}

TEST_F(Arguments, StructsArgumentObjectsAndUncheckedLaunches) {
  const auto& particles = cn::cuda_struct<Particles>();
  const std::string source = particles.declaration() + R"(
    extern "C" __global__ void push(Particles p, double dt) {})";
  cn::CudaKernel push(source, "push", {.structs = {&particles}});
  auto x = cn::zeros<double>({16});
  auto v = cn::ones<double>({16});
  auto value = cn::struct_value<Particles>(x, v, 16, -1.0);
  EXPECT_EQ(value.packed().x, x.data());
  EXPECT_EQ(value.packed().n, 16);
  EXPECT_EQ(value.packed().charge, -1.0);
  const auto packed = push.prepare_args(value, 0.1);
  EXPECT_EQ(packed.bytes(0).size(), sizeof(Particles));
  EXPECT_NE(message_of([&] {
              (void)cn::struct_value<Particles>(x, v, 16);
            }).find("3 value(s) given for the 4 fields"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              (void)cn::struct_value<Particles>(x, cn::zeros<float>({16}), 16, -1.0);
            }).find("struct Particles field 'v'"),
            std::string::npos);
  auto markers = cn::zeros<double>({4, 3});
  auto valid = cn::zeros<bool>({4});
  const auto m = cn::struct_value<MarkerArgs>(markers, 4, valid);
  EXPECT_NE(message_of([&] {
              (void)push.prepare_args(m, 0.1);
            }).find("expected a struct Particles, got a struct MarkerArgs"),
            std::string::npos);

  // An argument object stands for several parameters.
  struct Pair {
    cn::Array<double> a;
    long long n;
    auto cuda_args() const { return std::make_tuple(a, n); }
  };
  cn::CudaKernel two("extern \"C\" __global__ void two(double* a, long long n, double s) {}",
                     "two");
  EXPECT_EQ(two.prepare_args(Pair{x, 16}, 2.0).size(), 3u);

  // check_signature = false: the arguments as given, arrays as pointers.
  cn::CudaKernel raw("extern \"C\" __global__ void raw(REAL* a) {}", "raw",
                     {.check_signature = false});
  const auto r = raw.prepare_args(x, 1.5f, 3);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r.bytes(1).size(), 4u);
  EXPECT_THROW(cn::CudaKernel("extern \"C\" __global__ void raw(REAL* a) {}", "raw"),
               cn::ValueError);
}

namespace {
struct MarkerArguments : cn::CudaStructArguments<MarkerArguments, MarkerArgs> {
  cn::Array<double> markers;
  cn::Array<bool> valid;
  auto fields() const { return std::make_tuple(markers, markers.shape(0), valid); }
};
}  // namespace

TEST_F(Arguments, StructArgumentObjectsRepackWhenAFieldChanged) {
  const auto& m = cn::cuda_struct<MarkerArgs>();
  cn::CudaKernel push(
      m.declaration() + "extern \"C\" __global__ void push(MarkerArgs m, double dt) {}", "push",
      {.structs = {&m}});
  MarkerArguments args;
  args.markers = cn::zeros<double>({8, 3});
  args.valid = cn::zeros<bool>({8});
  (void)push.prepare_args(args, 0.1);
  (void)push.prepare_args(args, 0.1);
  EXPECT_EQ(args.packs(), 1) << "nothing changed: packed once";
  EXPECT_EQ(args.packed().packed().n_markers, 8);
  args.markers = cn::zeros<double>({20, 3});  // the owner resized its markers
  const auto packed = push.prepare_args(args, 0.1);
  EXPECT_EQ(args.packs(), 2) << "a replaced array repacks at the next use";
  MarkerArgs seen;
  std::memcpy(&seen, packed.bytes(0).data(), sizeof seen);
  EXPECT_EQ(seen.n_markers, 20);
  EXPECT_EQ(seen.markers.data, args.markers.data());
  EXPECT_EQ(seen.markers.shape[0], 20);
  EXPECT_EQ(seen.valid, args.valid.data());
}

TEST(Launch, ShapesFromThreadsGridOrBlock) {
  cn::CudaKernel k(kBlockSum, "block_sum", {.block_size = 128});
  auto [g, b] = k.launch_shape(1000);
  EXPECT_EQ(g, cn::Dim3(8, 1, 1));
  EXPECT_EQ(b, cn::Dim3(128, 1, 1));
  std::tie(g, b) = k.launch_shape(cn::Dim3(100, 30));
  EXPECT_EQ(g, cn::Dim3(1, 30, 1)) << "a 1D block with 2D threads is (block, 1, 1)";
  std::tie(g, b) = k.launch_shape(cn::Dim3(100, 30), std::nullopt, cn::Dim3(16, 16));
  EXPECT_EQ(g, cn::Dim3(7, 2, 1));
  std::tie(g, b) = k.launch_shape(std::nullopt, cn::Dim3(5, 2), cn::Dim3(32));
  EXPECT_EQ(g, cn::Dim3(5, 2, 1));
  EXPECT_EQ(b, cn::Dim3(32, 1, 1));
  std::tie(g, b) = k.launch_shape(0);
  EXPECT_EQ(g.product(), 0) << "nothing to launch";
  EXPECT_THROW((void)k.launch_shape(10, std::nullopt, cn::Dim3(2048)), cn::ValueError);
  EXPECT_THROW((void)k.launch_shape(std::nullopt), cn::ValueError);
  EXPECT_THROW((void)k.launch_shape(-1), cn::ValueError);
  EXPECT_THROW(cn::CudaKernel(kBlockSum, "block_sum", {.block_size = cn::Dim3(64, 32)}),
               cn::ValueError);
}

TEST(Launch, NeedsADeviceBackendAndChecksSharedMemoryFirst) {
  cn::CudaKernel k(kBlockSum, "block_sum");
  auto e = cn::use_backend(cn::Backend::emulated);
  auto x = cn::zeros<double>({256});
  auto out = cn::zeros<double>({2});
  {
    // On host: host arrays are refused, and a kernel without arrays has no device to run on.
    auto h = cn::use_backend(cn::Backend::host);
    auto hx = cn::zeros<double>({256});
    EXPECT_NE(message_of([&] {
                k(cn::threads(256), hx, out, 256);
              }).find("host data is never copied to the device implicitly"),
              std::string::npos);
    cn::CudaKernel scalars("extern \"C\" __global__ void nothing(int n) {}", "nothing");
    EXPECT_NE(
        message_of([&] { scalars(cn::threads(32), 1); }).find("a launch needs a device backend"),
        std::string::npos);
  }
  cn::Launch big = cn::threads(256);
  big.shared_mem = static_cast<std::size_t>(cn::max_shared_memory_per_block(true)) + 1;
  EXPECT_NE(
      message_of([&] { k(big, x, out, 256); }).find("bytes of dynamic shared memory requested"),
      std::string::npos);
  EXPECT_NO_THROW(k(cn::threads(0), x, out, 0)) << "a zero-size grid launches nothing";
  EXPECT_THROW(k(cn::threads(256), x, out), cn::TypeError)
      << "arguments are checked before anything else";
  if (!have_host_compiler()) GTEST_SKIP() << "no host compiler for the emulator";
  EXPECT_NO_THROW(k({.n_threads = 256, .shared_mem = 128 * 8}, x, out, 256))
      << "the Launch of a call written with designated initialisers, run by the emulator";
  cn::CudaKernel from_first(kBlockSum, "block_sum",
                            {.n_threads_from = cn::NThreadsFrom::first_array});
  cn::Launch sized;
  sized.shared_mem = 128 * 8;
  EXPECT_NO_THROW(from_first(sized, x, out, 256)) << "n_threads from the first array's length";
  // Emulated arrays launch on the emulated device whatever the calling thread has active.
  auto h = cn::use_backend(cn::Backend::host);
  auto ones = cn::ones<double>({256}, cn::Backend::emulated);
  k({.n_threads = 256, .shared_mem = 128 * 8}, ones, out, 256);
  const auto sums = cn::to_host(out);
  EXPECT_EQ(sums.data()[0], 128.0);
  EXPECT_EQ(sums.data()[1], 128.0);
}

TEST(Debug, OptionsSwitchesAndPerKernelOverride) {
  cn::set_cuda_debug(false);
  cn::CudaKernel follows(kBlockSum, "block_sum");
  cn::CudaKernel never(kBlockSum, "block_sum", {.debug = false});
  cn::CudaKernel always(kBlockSum, "block_sum", {.options = {"-lineinfo"}, .debug = true});
  auto has = [](const cn::CudaKernel& k, std::string_view o) {
    const auto opts = k.compile_options();
    return std::count(opts.begin(), opts.end(), o);
  };
  EXPECT_EQ(has(follows, "-lineinfo"), 0);
  {
    auto scope = cn::cuda_debug();
    EXPECT_TRUE(cn::get_cuda_debug());
    EXPECT_TRUE(follows.debug_active());
    EXPECT_EQ(has(follows, "-lineinfo"), 1);
    EXPECT_EQ(has(follows, "-DCUNUMPY_BOUNDS_CHECK"), 1);
    EXPECT_FALSE(never.debug_active());
    EXPECT_EQ(has(never, "-lineinfo"), 0);
  }
  EXPECT_FALSE(cn::get_cuda_debug());
  EXPECT_TRUE(always.debug_active());
  EXPECT_EQ(has(always, "-lineinfo"), 1) << "not added twice";
  EXPECT_EQ(has(always, "-DCUNUMPY_BOUNDS_CHECK"), 1);
}

TEST(Debug, EnvironmentSwitchesItOn) {
  const char* expect = std::getenv("CUNUMPY_TEST_EXPECT_DEBUG");
  if (expect == nullptr)
    GTEST_SKIP() << "run by the ctest registration that sets CUNUMPY_CUDA_DEBUG";
  EXPECT_EQ(cn::get_cuda_debug(), std::string(expect) == "1");
}

TEST(Variants, OneKernelPerKeyCompiledInThreads) {
  int made = 0;
  cn::CudaKernelVariants<std::string, int> variants([&](const std::string& type, const int& n) {
    ++made;
    return cn::CudaKernel(kScale, "scale", {.template_args = {type, n}});
  });
  auto& a = variants.get("double", 2);
  auto& b = variants.get("double", 2);
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(a.expression(), "scale<double, 2>");
  (void)variants.get("float", 3);
  EXPECT_EQ(variants.size(), 2u);
  try {
    cn::CudaKernel probe("extern \"C\" __global__ void probe() {}", "probe");
    probe.compile();
  } catch (const cn::BackendError& e) {
    GTEST_SKIP() << "NVRTC is not available: " << e.what();
  }
  ScopedCache cache;
  const std::tuple<std::string, int> more[] = {{"int", 4}, {"double", 5}};
  variants.compile_all(more, 2);
  EXPECT_EQ(variants.size(), 4u);
  EXPECT_EQ(made, 4);
  for (const auto& key : variants.keys())
    EXPECT_TRUE(std::apply([&](auto... k) { return variants.get(k...); }, key).is_compiled());
}

// compile_all compiles every variant even when some fail, then names each failure.
TEST(Variants, CompileAllCompilesEveryVariantThenNamesEveryFailure) {
  static const char* kEven = R"(
template <int N>
__global__ void even(double* x, int n) {
  static_assert(N % 2 == 0, "an odd N does not compile");
  if ((int)threadIdx.x < n) x[threadIdx.x] = N;
}
)";
  cn::CudaKernelVariants<int> variants(
      [](const int& n) { return cn::CudaKernel(kEven, "even", {.template_args = {n}}); });
  if (!nvrtc_available()) GTEST_SKIP() << "NVRTC is not available";
  ScopedCache cache;
  const std::tuple<int> keys[] = {{3}, {2}, {5}};
  try {
    variants.compile_all(keys, 2);
    FAIL() << "two variants that do not compile must raise";
  } catch (const cn::CompileError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("2 kernels did not compile: even<3>, even<5>;"), std::string::npos) << m;
    EXPECT_NE(m.find("an odd N"), m.rfind("an odd N")) << "each with its log: " << m;
  }
  EXPECT_TRUE(variants.get(2).is_compiled()) << "the good variant is compiled all the same";
}

TEST(Files, FromFileAndAllFromFile) {
  TempDir t;
  t.write("small_kernels.cu", R"(
    extern "C" __global__ void scale(double* x, double s, long long n) {}
    extern "C" __global__ void shift(double* x, double s, long long n) {})");
  auto all = cn::CudaKernel::all_from_file(t.path / "small_kernels.cu", {.block_size = 64});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].first, "scale");
  EXPECT_EQ(all[1].second.name(), "shift");
  EXPECT_EQ(all[1].second.block_size().x, 64);
  EXPECT_EQ(all[0].second.source_dir(), t.path);
  EXPECT_EQ(all[0].second.include_dirs().front(), t.path);
  EXPECT_THROW((void)cn::CudaKernel::from_file(t.path / "missing_cuda.cu"), cn::ValueError);
}

// A module is one NVRTC program: one compilation, one cache entry, one CUBIN holding every
// kernel (a template instantiation included); a second module of the same source is a hit; a
// file's kernels (all_from_file) are one module.
TEST(Modules, SeveralKernelsAreOneNvrtcProgram) {
  REQUIRE_NVRTC();
  ScopedCache cache;
  const auto before = cn::kernel_cache_stats();
  cn::CudaModule m(kModule, {"fill", {"times", {"double", 3}}, "block_total"});
  m.compile();
  EXPECT_EQ(cn::kernel_cache_stats().compiles, before.compiles + 1);
  EXPECT_EQ(cache.entries().size(), 1u);
  for (const cn::CudaKernel& k : m.kernels()) {
    EXPECT_TRUE(k.is_compiled()) << k.expression();
    EXPECT_EQ(&k.cubin(), &m.kernels().front().cubin()) << "one image";
  }
  const std::string& cubin = m.kernels().front().cubin();
  for (const char* symbol : {"fill", "block_total", "_Z5timesIdLi3EEvPT_x"})
    EXPECT_NE(cubin.find(symbol), std::string::npos) << symbol;
  cn::CudaModule again(kModule, {"fill", {"times", {"double", 3}}, "block_total"});
  again.compile();
  EXPECT_TRUE(again.loaded_from_cache());
  EXPECT_EQ(cn::kernel_cache_stats().compiles, before.compiles + 1);
  // A kernel the module does not list is not in its image.
  cn::CudaModule one(kModule, {"fill"});
  one.compile();
  EXPECT_EQ(one.kernels().front().cubin().find("_Z5timesIdLi3EEvPT_x"), std::string::npos);

  TempDir t;
  t.write("two_cuda.cu", R"(
    extern "C" __global__ void up(double* x) { x[0] += 1; }
    extern "C" __global__ void down(double* x) { x[0] -= 1; })");
  auto all = cn::CudaKernel::all_from_file(t.path / "two_cuda.cu");
  all[0].second.compile();
  EXPECT_TRUE(all[1].second.is_compiled()) << "compiled with the first";
  EXPECT_EQ(cn::kernel_cache_stats().compiles, before.compiles + 3);
  // NVRTC's errors name the module.
  cn::CudaModule broken(
      "extern \"C\" __global__ void a(int* x) { x[0] = y; }\n"
      "extern \"C\" __global__ void b(int* x) {}",
      {"a", "b"});
  EXPECT_NE(message_of([&] { broken.compile(); }).find("CudaModule 'a.cu' (kernels a, b)"),
            std::string::npos);
}

// A sticky CUDA error (a kernel's illegal address or trap) surfaces at a later call, a
// synchronize; its message lists the most recent kernel launches, newest first: the suspects.
// Without a GPU: what launches record, then the abort such an error leads to (a GPU launches a
// faulting kernel in test_cuda_kernel_gpu).
TEST(CudaErrors, AStickyErrorListsTheMostRecentLaunches) {
  if (!CUNUMPY_HAS_CUDA()) GTEST_SKIP() << "a build without CUDA raises no CUDA errors";
  namespace api = cn::detail::cuda_api;
  for (unsigned i = 0; i < 6; ++i)
    api::note_launch(("kernel_" + std::to_string(i)).c_str(), {{i + 1, 1, 1}, {128, 1, 1}},
                     nullptr);
  const std::string recent = api::recent_launches();
  EXPECT_EQ(recent.find("'kernel_5' with grid (6, 1, 1) and block (128, 1, 1) on stream 0 "
                        "(default); 'kernel_4'"),
            0u)
      << recent;
  EXPECT_NE(recent.find("'kernel_2'"), std::string::npos) << recent;
  EXPECT_EQ(recent.find("'kernel_1'"), std::string::npos) << "four kept: " << recent;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(cn::detail::cuda_check(700, "cudaStreamSynchronize(stream)", "here.cpp", 1),
               "cudaErrorIllegalAddress.*most recent kernel launches, newest first: 'kernel_5'");
}

// ---- structs --------------------------------------------------------------------------------

TEST(Structs, DeclarationHeadersAndSourceChecks) {
  const auto& m = cn::cuda_struct<MarkerArgs>();
  EXPECT_EQ(m.declaration(),
            "struct MarkerArgs {\n  Array2D<double> markers;\n  long long n_markers;\n  bool* "
            "valid;\n};\n");
  EXPECT_TRUE(m.has_views());
  EXPECT_EQ(m.size(), sizeof(MarkerArgs));
  EXPECT_EQ(m.fields()[1].offset, offsetof(MarkerArgs, n_markers));
  const std::string header = m.to_header();
  EXPECT_NE(header.find("#ifndef MARKERARGS_CUH"), std::string::npos);
  EXPECT_NE(header.find("#include \"cunumpy/array_view.cuh\""), std::string::npos);
  // The committed header next to the kernels stays in sync with the definitions.
  TempDir t;
  const cn::CudaStruct* both[] = {&cn::cuda_struct<Particles>(), &m};
  const std::string generated = cn::write_cuda_header(t.path / "pusher_args.cuh", both);
  std::ifstream committed(CUNUMPY_TEST_SOURCE_DIR "/kernels/data/pusher_args.cuh");
  ASSERT_TRUE(committed) << "tests/kernels/data/pusher_args.cuh is missing";
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(committed), {}), generated)
      << "regenerate tests/kernels/data/pusher_args.cuh with write_cuda_header";
  EXPECT_NE(generated.find("#ifndef PUSHER_ARGS_CUH"), std::string::npos);
  // A source with another definition of the struct is refused.
  const auto& p = cn::cuda_struct<Particles>();
  const std::string wrong =
      "struct Particles { double* x; double* v; long long n; double charge; };\n"
      "extern \"C\" __global__ void push(Particles p, double dt) {}";
  EXPECT_NE(message_of([&] { cn::CudaKernel(wrong, "push", {.structs = {&p}}); })
                .find("defines struct Particles as { double* x; double* v; long long n; double "
                      "charge; }, but its "
                      "definition (CUNUMPY_CUDA_STRUCT) is { double* x; double* v; int n; double "
                      "charge; }"),
            std::string::npos);
  EXPECT_NO_THROW(cn::CudaKernel(
      p.declaration() + "extern \"C\" __global__ void push(Particles p, double dt) {}", "push",
      {.structs = {&p}}));
}

TEST(Structs, LayoutCheckNeedsTheCudaBackend) {
  // On a GPU, test_cuda runs verify_layout; without one the nvcc build checks it at compile time.
  const std::string what = message_of([] { (void)cn::cuda_struct<Particles>().verify_layout(); });
  EXPECT_NE(
      what.find("verify_layout(Particles): it runs a one-thread kernel and needs a device backend"),
      std::string::npos)
      << what;
  const std::string src = cn::cuda_struct<Particles>().layout_source();
  EXPECT_NE(src.find("out[4] = (unsigned long long)((char*)&s->n - (char*)s);"), std::string::npos)
      << src;
  EXPECT_NE(src.find("struct Particles {"), std::string::npos);
  EXPECT_NE(cn::cuda_struct<Particles>()
                .layout_source("pusher_args.cuh")
                .find("#include \"pusher_args.cuh\""),
            std::string::npos);
}
