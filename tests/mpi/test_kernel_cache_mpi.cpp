// Every rank of a node compiling the same kernel at once into one cache folder: all succeed
// and leave one valid entry (written under a name of its own, then renamed into place).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;
namespace fs = std::filesystem;

TEST(KernelCacheMpi, RanksCompilingTogetherLeaveOneValidEntry) {
  const cn::Comm world = cn::Comm::world();
  ::setenv("CUNUMPY_KERNEL_CACHE", "off", 1);
  try {
    cn::CudaKernel probe("extern \"C\" __global__ void probe() {}", "probe");
    probe.compile();
  } catch (const cn::BackendError& e) {
    GTEST_SKIP() << "NVRTC is not available: " << e.what();
  }
  // One fresh folder and one fresh kernel for the whole run, chosen by rank 0.
  unsigned long long nonce = 0;
  if (world.rank() == 0) nonce = std::random_device{}() * 4294967296ULL + std::random_device{}();
  nonce = world.bcast(nonce, 0);
  const fs::path dir = fs::temp_directory_path() / ("cunumpy-cache-mpi-" + std::to_string(nonce));
  ::setenv("CUNUMPY_KERNEL_CACHE", dir.c_str(), 1);
  const std::string source =
      "extern \"C\" __global__ void scale(double* x, double s, long long n) {\n"
      "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
      "  if (i < n) x[i] *= s; }\n// " +
      std::to_string(nonce) + "\n";
  cn::CudaKernel k(source, "scale");
  world.barrier();
  int ok = 1;
  try {
    k.compile();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "rank " << world.rank() << ": " << e.what();
    ok = 0;
  }
  EXPECT_EQ(world.allreduce(ok, cn::Op::logical_and), 1) << "every rank compiled";
  world.barrier();
  // One entry, no temporary files, and every rank got the same image.
  const auto size = static_cast<long long>(k.cubin().size());
  const auto sizes = world.allgather(size);
  for (long long s : sizes) EXPECT_EQ(s, size);
  if (world.rank() == 0) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))  // (the headers' folder aside)
      if (e.is_regular_file()) files.push_back(e.path());
    EXPECT_EQ(files.size(), 1u) << "one entry and no temporary files";
    for (const auto& f : files) EXPECT_EQ(f.extension(), ".cubin") << f;
  }
  world.barrier();
  cn::CudaKernel again(source, "scale");
  again.compile();
  EXPECT_TRUE(again.loaded_from_cache()) << "the entry is valid: every rank loads it";
  EXPECT_EQ(again.cubin(), k.cubin());
  world.barrier();
  if (world.rank() == 0) fs::remove_all(dir);
}
