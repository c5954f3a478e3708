// The kernel emulator's engine on AArch64, where the fibers switch with a plain call of
// Boost.Context's jump_fcontext (kernels/src/emulator/engine.cpp): barriers, warp shuffles and
// votes, the block loop with its tail, a divergent barrier reported, reduce.cuh's reductions. Built
// and run by scripts/arm_check.sh under qemu-user; the kernels are compiled at run time by the
// cross compiler (CXX=tests/arm/cross_cxx.sh).
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <cunumpy/cuda_signature.hpp>

#include "cuda_emulator.hpp"
#include "kernel_sources.hpp"

// The engine asks core's emulated arena for debug mode's guard pages; this check allocates
// none (its arrays are host vectors).
namespace cunumpy::detail::emulated_arena {
bool any_guarded() noexcept {
  return false;
}
bool guarded_by(const void*, const void*&, std::size_t&) noexcept {
  return false;
}
}  // namespace cunumpy::detail::emulated_arena
namespace cunumpy::detail {
bool emulated_arena_contains(const void*) noexcept {  // atomic counting: none here
  return false;
}
}  // namespace cunumpy::detail

namespace {

using cunumpy::detail::emulate_compile;
using cunumpy::detail::emulate_launch;
using cunumpy_test::kAxpy;
using cunumpy_test::message_of;

int failures = 0;
void check(bool ok, const std::string& what) {
  std::printf("%s: %s\n", what.c_str(), ok ? "ok" : "WRONG");
  failures += ok ? 0 : 1;
}

// `headers`: the files the source includes (CudaKernel resolves them; here they are named),
// whose text the search for barriers reads.
// `fibers`: with -DCUNUMPY_EMULATOR_FIBERS, a kernel that synchronises runs as fibers instead
// of split into regions; the checks that synchronise run both ways.
auto compile(const char* source, const char* name, std::vector<std::filesystem::path> headers = {},
             bool fibers = false) {
  std::vector<std::string> options;
  if (fibers) options.push_back("-DCUNUMPY_EMULATOR_FIBERS");
  return emulate_compile({.source = source,
                          .expressions = {name},
                          .owner = std::string("CudaKernel '") + name + "'",
                          .options = options,
                          .headers = std::move(headers)})
      .front();
}
const char* mode_name(bool fibers) {
  return fibers ? "fibers" : "regions";
}

}  // namespace

int main() {
  // Every thread reads its right neighbour's value after each of 9 barriers: 2 blocks of 256.
  for (const bool fibers : {false, true}) {
    auto k = compile(R"(
      extern "C" __global__ void rotate(double* x) {
        __shared__ double s[256];
        const int i = blockIdx.x * 256 + threadIdx.x;
        s[threadIdx.x] = x[i];
        for (int r = 0; r < 9; ++r) {
          __syncthreads();
          const double right = s[(threadIdx.x + 1) % 256];
          __syncthreads();
          s[threadIdx.x] = right;
        }
        x[i] = s[threadIdx.x];
      })",
                     "rotate", {}, fibers);
    check(cunumpy::detail::emulated_as(*k) == mode_name(fibers), "rotate runs as its mode");
    std::vector<double> x(512);
    for (int i = 0; i < 512; ++i) x[static_cast<std::size_t>(i)] = i;
    double* p = x.data();
    void* args[] = {&p};
    emulate_launch(*k, {2, 1, 1}, {256, 1, 1}, args, 0);
    bool ok = true;
    for (int i = 0; i < 512; ++i)
      ok = ok && x[static_cast<std::size_t>(i)] == i / 256 * 256 + (i % 256 + 9) % 256;
    check(ok, std::string("barriers (2 blocks of 256 threads, 18 barriers), ") + mode_name(fibers));
  }
  // A butterfly sum with __shfl_xor_sync, a __ballot_sync and an __all_sync per warp; 3 warps,
  // the last one partial (80 threads).
  for (const bool fibers : {false, true}) {
    auto k = compile(R"(
      extern "C" __global__ void warps(const int* x, int* sum, unsigned* ballot, int* all) {
        const int t = threadIdx.x;
        int v = x[t];
        for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
        sum[t] = v;
        ballot[t] = __ballot_sync(0xffffffffu, x[t] % 3 == 0);
        all[t] = __all_sync(0xffffffffu, x[t] >= 0);
      })",
                     "warps", {}, fibers);
    check(cunumpy::detail::emulated_as(*k) == mode_name(fibers), "warps runs as its mode");
    const int n = 80;
    std::vector<int> x(n), sum(n), all(n);
    std::vector<unsigned> ballot(n);
    for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = i;
    int* px = x.data();
    int* ps = sum.data();
    unsigned* pb = ballot.data();
    int* pa = all.data();
    void* args[] = {&px, &ps, &pb, &pa};
    emulate_launch(*k, {1, 1, 1}, {n, 1, 1}, args, 0);
    bool ok = true;
    for (int w = 0; w * 32 < n; ++w) {
      const int first = w * 32, last = std::min(n, first + 32);
      int want = 0;
      unsigned bits = 0;
      for (int i = first; i < last; ++i) {
        want += i;
        if (i % 3 == 0) bits |= 1u << (i - first);
      }
      for (int i = first; i < last; ++i) {
        const auto u = static_cast<std::size_t>(i);
        // A partial warp's shuffles from exited or missing lanes give the lane's own value,
        // so only full warps have the plain sum.
        if (last - first == 32) ok = ok && sum[u] == want;
        ok = ok && ballot[u] == bits && all[u] == 1;
      }
    }
    check(ok, std::string("warp shuffles and votes (80 threads), ") + mode_name(fibers));
  }
  // The block loop (no barrier), vectorised by the compiler: 1000 elements in blocks of 128.
  {
    auto k = compile(kAxpy, "axpy");
    long long n = 1000;
    std::vector<double> x(1000), y(1000, 1.0);
    for (int i = 0; i < 1000; ++i) x[static_cast<std::size_t>(i)] = i;
    double a = 2.0;
    const double* px = x.data();
    double* py = y.data();
    void* args[] = {&a, &px, &py, &n};
    emulate_launch(*k, {8, 1, 1}, {128, 1, 1}, args, 0);
    bool ok = true;
    for (int i = 0; i < 1000; ++i) ok = ok && y[static_cast<std::size_t>(i)] == 2.0 * i + 1.0;
    check(ok, "block loop (1000 elements, blocks of 128)");
  }
  // A barrier that half the block never reaches.
  {
    auto k = compile(R"(
      extern "C" __global__ void divergent(double* x) {
        if (threadIdx.x < 32) __syncthreads();
        x[threadIdx.x] = 1.0;
      })",
                     "divergent");
    std::vector<double> x(64);
    double* p = x.data();
    void* args[] = {&p};
    const std::string what = message_of([&] {
      emulate_launch(*k, {1, 1, 1}, {64, 1, 1}, args, 0);
    });
    check(what.find("threads 0-31 wait at __syncthreads(), threads 32-63 returned") !=
              std::string::npos,
          "divergent barrier reported");
  }
  // reduce.cuh's reductions: a warp exchange, a block exchange, and cunumpy_block_sum_to
  // without a barrier, each in the GPU's order (integers here: exact in any order).
  for (const bool fibers : {false, true}) {
    const std::vector<std::filesystem::path> reduce_headers = {
        cunumpy::cuda_include_dir() / "cunumpy" / "reduce.cuh",
        cunumpy::cuda_include_dir() / "cunumpy" / "config.cuh"};
    auto k = compile(R"(
      #include <cunumpy/reduce.cuh>
      extern "C" __global__ void sums(long long* warp, long long* block, long long* to) {
        const long long v = threadIdx.x + 1;
        warp[threadIdx.x] = cunumpy_warp_sum(v);
        const long long s = cunumpy_block_sum(v);
        if (threadIdx.x == 0) block[0] = s;
        cunumpy_block_sum_to(to, v);
      })",
                     "sums", reduce_headers, fibers);
    check(cunumpy::detail::emulated_as(*k) == mode_name(fibers), "sums runs as its mode");
    auto to = compile(R"(
      #include <cunumpy/reduce.cuh>
      extern "C" __global__ void to(long long* out) { cunumpy_block_sum_to(out, 1LL); })",
                      "to", reduce_headers);
    std::vector<long long> warp(128), block(1), total(1), loop(1);
    long long *pw = warp.data(), *pb = block.data(), *pt = total.data(), *pl = loop.data();
    void* args[] = {&pw, &pb, &pt};
    emulate_launch(*k, {1, 1, 1}, {128, 1, 1}, args, 0);
    void* args_to[] = {&pl};
    emulate_launch(*to, {7, 1, 1}, {128, 1, 1}, args_to, 0);
    bool ok = block[0] == 128 * 129 / 2 && total[0] == block[0] && loop[0] == 7 * 128;
    for (int w = 0; w < 4; ++w)
      for (int l = 0; l < 32; ++l) ok = ok && warp[32 * w + l] == 32 * (32 * w) + 32 * 33 / 2;
    check(ok, std::string("warp and block reductions, block_sum_to without a barrier, ") +
                  mode_name(fibers));
  }
  std::printf("%s\n", failures == 0 ? "emulator all equal" : "emulator DIFFERENT");
  return failures == 0 ? 0 : 1;
}
