// The kernel emulator as a user's program meets it: its cache (damaged entries, an unwritable
// folder, statistics shared with NVRTC's, headers found through include_dirs), the host
// compiler given as a command of several words, compile_for / compile_all readying the
// emulated image, and errors that name the kernel, the launch and the failing thread.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>
#include <cunumpy/kernel_catalog.hpp>

#include "kernel_sources.hpp"
#include "on_backend.hpp"
#include "test_environment.hpp"

namespace cn = cunumpy;
namespace fs = std::filesystem;
using namespace cunumpy_test;

namespace {

class EmulatorCache : public OnEmulatedWithCompiler {};

// axpy on 1000 elements through a fresh CudaKernel (its own compilation or cache look-up);
// whether y is right.
bool axpy_runs(const std::string& source = kAxpy) {
  cn::CudaKernel axpy(source, "axpy");
  auto x = cn::arange<double>(0.0, 1000.0, 1.0);
  auto y = cn::ones<double>({1000});
  axpy(cn::threads(1000), 2.0, x, y, 1000LL);
  const auto h = cn::to_host(y);
  for (long long i = 0; i < 1000; ++i)
    if (h(i) != 2.0 * static_cast<double>(i) + 1.0) return false;
  return true;
}

std::vector<fs::path> libraries(const ScopedCache& cache) {
  std::vector<fs::path> out;
  for (const auto& e : cache.entries())
    if (e.extension() == ".so") out.push_back(e);
  return out;
}

}  // namespace

// A child process for the test below: launches axpy with the cache the parent prepared.
TEST_F(EmulatorCache, ChildLaunch) {
  if (std::getenv("CUNUMPY_TEST_CHILD_LAUNCH") == nullptr)
    GTEST_SKIP() << "run by DamagedEntriesAreCompiledAgainNeverLoaded in a process of its own";
  EXPECT_TRUE(axpy_runs());
}

TEST_F(EmulatorCache, DamagedEntriesAreCompiledAgainNeverLoaded) {
  ScopedCache cache;
  ASSERT_TRUE(axpy_runs());
  ASSERT_EQ(libraries(cache).size(), 1u);
  const fs::path entry = libraries(cache)[0];
  const auto good = fs::file_size(entry);
  // Each damage, then a launch in a new process (a process that had loaded the library keeps
  // its mapping): it must compile again, not crash on the damaged file (SIGBUS, SIGILL).
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string child = "CUNUMPY_TEST_CHILD_LAUNCH=1 '" + self +
                            "' --gtest_filter=EmulatorCache.ChildLaunch > /dev/null 2>&1";
  for (int damage = 0; damage < 3; ++damage) {
    if (damage == 0) fs::resize_file(entry, good / 2);  // truncated by a kill
    if (damage == 1) {                                  // bytes in the code flipped
      std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(good / 3));
      for (int i = 0; i < 64; ++i) f.put('\xff');
    }
    if (damage == 2) std::ofstream(entry, std::ios::trunc) << "garbage";
    EXPECT_EQ(std::system(child.c_str()), 0) << "damage " << damage;
    EXPECT_EQ(fs::file_size(entry), good) << "damage " << damage << ": the entry was rewritten";
  }
  // In this process: a damaged entry is counted as rejected and compiled again.
  fs::resize_file(entry, good / 2);
  const auto before = cn::kernel_cache_stats();
  cn::CudaKernel again(kAxpy, "axpy");
  again.compile_for(cn::Backend::emulated);
  const auto after = cn::kernel_cache_stats();
  EXPECT_FALSE(again.loaded_from_cache());
  EXPECT_EQ(after.rejected, before.rejected + 1);
  EXPECT_EQ(after.host_compiles, before.host_compiles + 1);
  EXPECT_EQ(fs::file_size(entry), good);
}

TEST_F(EmulatorCache, HitsMissesAndCompilationsAreCountedAndSeen) {
  ScopedCache cache;
  const std::string source = std::string(kAxpy) + "\n// counted\n";
  const auto start = cn::kernel_cache_stats();
  cn::CudaKernel first(source, "axpy");
  EXPECT_FALSE(first.is_compiled_for(cn::Backend::emulated));
  first.compile_for(cn::Backend::emulated);
  EXPECT_TRUE(first.is_compiled_for(cn::Backend::emulated));
  EXPECT_FALSE(first.loaded_from_cache());
  const auto mid = cn::kernel_cache_stats();
  EXPECT_EQ(mid.misses, start.misses + 1);
  EXPECT_EQ(mid.host_compiles, start.host_compiles + 1);
  EXPECT_EQ(mid.compiles, start.compiles) << "NVRTC is not involved";
  cn::CudaKernel second(source, "axpy");
  second.compile_for(cn::Backend::emulated);
  EXPECT_TRUE(second.loaded_from_cache());
  const auto end = cn::kernel_cache_stats();
  EXPECT_EQ(end.hits, mid.hits + 1);
  EXPECT_EQ(end.host_compiles, mid.host_compiles);
  EXPECT_EQ(libraries(cache).size(), 1u);
  for (const auto& e : cache.entries())
    EXPECT_EQ(e.filename().string().find(".tmp"), std::string::npos) << "left behind: " << e;
}

// The emulator's key holds the options its compiler takes (-D, -I, -U), not NVRTC's own: a
// kernel that differs only by -lineinfo or the GPU's architecture is the same library.
TEST_F(EmulatorCache, OnlyTheOptionsTheHostCompilerTakesAreInTheKey) {
  ScopedCache cache;
  const std::string source = std::string(kAxpy) + "\n// options\n";
  const auto compiled = [&](std::vector<std::string> options) {
    cn::CudaKernelOptions o;
    o.options = std::move(options);
    cn::CudaKernel k(source, "axpy", o);
    k.compile_for(cn::Backend::emulated);
    return !k.loaded_from_cache();
  };
  EXPECT_TRUE(compiled({}));
  EXPECT_FALSE(compiled({"-lineinfo"})) << "an NVRTC-only option recompiled the library";
  EXPECT_FALSE(compiled({"-lineinfo", "--use_fast_math"}));
  EXPECT_TRUE(compiled({"-DEXTRA=1"})) << "a define the host compiler sees must be keyed";
  EXPECT_FALSE(compiled({"-DEXTRA=1", "-lineinfo"}));
  EXPECT_EQ(libraries(cache).size(), 2u);
}

TEST_F(EmulatorCache, AnUnwritableCacheFolderFallsBackToAPrivateOneWithAWarning) {
  // /proc refuses new folders even to root (permission bits would not: CI runs as root).
  ScopedEnv env("CUNUMPY_KERNEL_CACHE", "/proc/cunumpy-kernel-cache");
  ::testing::internal::CaptureStderr();
  bool ran = false;
  const std::string what = message_of([&] { ran = axpy_runs(std::string(kAxpy) + "// ro\n"); });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(ran) << what;
  EXPECT_NE(err.find("the kernel cache folder /proc/cunumpy-kernel-cache cannot be written"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("for this process only"), std::string::npos) << err;
  // The private folder caches within the process: the same kernel again is a hit.
  cn::CudaKernel again(std::string(kAxpy) + "// ro\n", "axpy");
  again.compile_for(cn::Backend::emulated);
  EXPECT_TRUE(again.loaded_from_cache());
}

TEST_F(EmulatorCache, ACompilerOfSeveralWordsIsSplitAsMakeDoes) {
  ScopedCache cache;  // empty: the kernel is compiled with this CXX
  ScopedEnv cxx("CXX", "env   c++");
  EXPECT_EQ(cn::emulation_compiler(), "env   c++");
  const auto before = cn::kernel_cache_stats();
  EXPECT_TRUE(axpy_runs(std::string(kAxpy) + "// env\n"));
  EXPECT_EQ(cn::kernel_cache_stats().host_compiles, before.host_compiles + 1);
}

TEST_F(EmulatorCache, AHeaderFoundThroughIncludeDirsIsKeyedAndSearchedForBarriers) {
  ScopedCache cache;
  TempDir src;
  // Included as <name> through include_dirs: the key covers it, and its __syncthreads() is
  // seen (the kernel runs its threads as fibers).
  src.write("inc/rotate_step.cuh", R"(
    #define SHIFT 1
    __device__ inline double rotate_step(double* tile, double v) {
      tile[threadIdx.x] = v;
      __syncthreads();
      return tile[(threadIdx.x + SHIFT) % blockDim.x];
    })");
  const std::string source = R"(
    #include <rotate_step.cuh>
    extern "C" __global__ void rotate(const double* x, double* y) {
      __shared__ double tile[64];
      y[threadIdx.x] = rotate_step(tile, x[threadIdx.x]);
    })";
  const cn::CudaKernelOptions options{.block_size = 64, .include_dirs = {src.path / "inc"}};
  auto x = cn::arange<double>(0.0, 64.0, 1.0);
  auto run = [&](int shift) {
    cn::CudaKernel rotate(source, "rotate", options);
    auto y = cn::zeros<double>({64});
    rotate(cn::threads(64), x, y);
    const auto h = cn::to_host(y);
    for (int i = 0; i < 64; ++i)
      if (h(i) != (i + shift) % 64) return false;
    return true;
  };
  EXPECT_TRUE(run(1));
  {
    cn::CudaKernel found(source, "rotate", options);
    const auto headers = found.included_headers();
    ASSERT_EQ(headers.size(), 1u);
    EXPECT_EQ(headers[0].filename(), "rotate_step.cuh");
  }
  src.write("inc/rotate_step.cuh", R"(
    #define SHIFT 3
    __device__ inline double rotate_step(double* tile, double v) {
      tile[threadIdx.x] = v;
      __syncthreads();
      return tile[(threadIdx.x + SHIFT) % blockDim.x];
    })");
  cn::CudaKernel edited(source, "rotate", options);
  edited.compile_for(cn::Backend::emulated);
  EXPECT_FALSE(edited.loaded_from_cache()) << "the edited header makes another key";
  EXPECT_TRUE(run(3)) << "the next launch computes with the edited header";
}

// A header reached by a computed #include is read by the compiler but named by no #include
// line the key follows: the compiler's own dependency list (-MMD) shows it, so the kernel is
// not cached (said once) and an edit of the header is seen by the next compilation; a kernel
// whose headers the key covers is cached as before.
TEST_F(EmulatorCache, AHeaderTheKeyCannotFollowIsNeverServedStale) {
  ScopedCache cache;
  TempDir src;
  src.write("inc/offset.cuh", "#define OFFSET 1.0\n");
  const std::string source = R"(
    #define OFFSET_HEADER <offset.cuh>
    #include OFFSET_HEADER
    extern "C" __global__ void add_offset(double* x) { x[threadIdx.x] += OFFSET; })";
  const cn::CudaKernelOptions options{.block_size = 8, .include_dirs = {src.path / "inc"}};
  auto run = [&] {
    cn::CudaKernel k(source, "add_offset", options);
    auto x = cn::zeros<double>({8});
    k(cn::threads(8), x);
    return cn::to_host(x)(7);
  };
  const auto before = cn::kernel_cache_stats();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run(), 1.0);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("CudaKernel 'add_offset' is compiled every run, not cached"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("offset.cuh"), std::string::npos) << said;
  EXPECT_TRUE(cache.entries().empty()) << "no entry written";
  src.write("inc/offset.cuh", "#define OFFSET 5.0\n");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run(), 5.0) << "the edited header, not a stale image";
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "said once";
  EXPECT_EQ(cn::kernel_cache_stats().host_compiles, before.host_compiles + 2);
  // Included by name, the same header is keyed and the kernel cached, also from a folder whose
  // name the dependency list escapes ('#' as "\#", '$' as "$$").
  src.write("in#c$/offset.cuh", "#define OFFSET 2.0\n");
  const std::string named = R"(
    #include <offset.cuh>
    extern "C" __global__ void add_offset(double* x) { x[threadIdx.x] += OFFSET; })";
  ::testing::internal::CaptureStderr();
  for (const fs::path& dir : {src.path / "inc", src.path / "in#c$"}) {
    cn::CudaKernel k(named, "add_offset", {.block_size = 8, .include_dirs = {dir}});
    k.compile_for(cn::Backend::emulated);
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(cache.entries().size(), 2u);
}

TEST_F(EmulatorCache, CompileAllReadiesTheEmulatedImageSoTheFirstLaunchCompilesNothing) {
  ScopedCache cache;
  TempDir src;
  src.write("kernels/scale2/scale2_cuda.cu", R"(
    extern "C" __global__ void scale2(double* x, long long n) {
      long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
      if (i < n) x[i] *= 2.0;
    })");
  cn::KernelCatalog catalog({.cuda_folder = src.path / "kernels"});
  auto& scale2 = catalog.add("scale2", [](const cn::Array<double>& x, long long n) {
    for (long long i = 0; i < n; ++i) x(i) *= 2.0;
  });
  ASSERT_TRUE(scale2.has_cuda());
  const auto before = cn::kernel_cache_stats();
  EXPECT_EQ(catalog.compile_all(), std::vector<std::string>{"scale2"});
  const auto ready = cn::kernel_cache_stats();
  EXPECT_EQ(ready.host_compiles, before.host_compiles + 1) << "the emulator's image, now";
  auto x = cn::ones<double>({100});
  scale2(cn::threads(100), x, 100LL);
  EXPECT_EQ(cn::to_host(x)(99), 2.0);
  const auto launched = cn::kernel_cache_stats();
  EXPECT_EQ(launched.host_compiles, ready.host_compiles) << "the first launch compiled again";
  EXPECT_EQ(launched.misses + launched.hits, ready.misses + ready.hits);
}

TEST_F(EmulatorCache, ErrorsNameTheKernelTheLaunchAndTheThread) {
  // A trap in a kernel run as a loop (no barrier) and in one run as fibers (a barrier).
  cn::CudaKernel loop(R"(extern "C" __global__ void loop_trap(int* x) {
      if (blockIdx.x == 2 && threadIdx.x == 5) __trap();
      x[0] = 1; })",
                      "loop_trap", {.block_size = 32});
  auto x = cn::zeros<int>({1});
  std::string what = message_of([&] { loop(cn::threads(128), x); });
  EXPECT_NE(what.find("CUDA kernel 'loop_trap' launched with grid (4, 1, 1) and block (32, 1, 1), "
                      "in block (2, 0, 0), thread (5, 0, 0): CUDA kernel trapped: __trap() called"),
            std::string::npos)
      << what;
  cn::CudaKernel fibers(R"(extern "C" __global__ void fiber_trap(int* x) {
      __syncthreads();
      if (threadIdx.x == 7) __trap();
      x[0] = 1; })",
                        "fiber_trap", {.block_size = 16});
  what = message_of([&] { fibers(cn::threads(16), x); });
  EXPECT_NE(what.find("CUDA kernel 'fiber_trap' launched with grid (1, 1, 1) and block (16, 1, "
                      "1), in block (0, 0, 0), thread (7, 0, 0)"),
            std::string::npos)
      << what;
  // A bounds check keeps its type (IndexError) and gains the launch.
  cn::CudaKernel bounds(R"(
    #include <cunumpy/array_view.cuh>
    extern "C" __global__ void bounds(Array1D<double> a) { __syncthreads(); a(threadIdx.x + 5) = 1.0; })",
                        "bounds", {.options = {"-DCUNUMPY_BOUNDS_CHECK"}});
  auto a = cn::zeros<double>({8});
  try {
    bounds(cn::threads(8), a);
    ADD_FAILURE() << "no IndexError";
  } catch (const cn::IndexError& e) {
    what = e.what();
    EXPECT_NE(what.find("CUDA kernel 'bounds' launched with grid (1, 1, 1) and block (128, 1, 1), "
                        "in block (0, 0, 0), thread (3, 0, 0): Array1D: index 8 is out of bounds"),
              std::string::npos)
        << what;
  }
  // Queued on a stream: the error surfaces at synchronize(), still naming the launch.
  cn::Stream s(cn::Backend::emulated);
  std::string later;
  try {
    loop({.n_threads = 128, .stream = s}, x);
    s.synchronize();
  } catch (const std::exception& e) {
    later = e.what();
  }
  EXPECT_NE(later.find("CUDA kernel 'loop_trap' launched with grid (4, 1, 1)"), std::string::npos)
      << later;
}

TEST_F(EmulatorCache, MessagesNameTheRealFileAndAnUnallocatedArray) {
  TempDir src;
  src.write("broken_cuda.cu",
            "extern \"C\" __global__ void broken(double* x) {\n  x[0] = nowhere;\n}\n");
  auto broken = cn::CudaKernel::from_file(src.path / "broken_cuda.cu");
  EXPECT_EQ(broken.program_name(), (src.path / "broken_cuda.cu").string());
  auto a = cn::zeros<double>({4});
  const std::string what = message_of([&] { broken(cn::threads(1), a); });
  EXPECT_NE(what.find((src.path / "broken_cuda.cu").string() + ":2:"), std::string::npos) << what;
  EXPECT_NE(what.find("nowhere"), std::string::npos) << what;

  cn::CudaKernel axpy(kAxpy, "axpy");
  cn::Array<double> unallocated;
  const std::string empty = message_of([&] { axpy(cn::threads(4), 2.0, unallocated, a, 4LL); });
  EXPECT_NE(empty.find("argument 1 ('const double* x'): expected a contiguous device array of "
                       "float64, got an unallocated Array (default-constructed: it has no memory); "
                       "give it memory first"),
            std::string::npos)
      << empty;
  EXPECT_EQ(empty.find("to_device(array) (or"), std::string::npos) << empty;
}
