// The kernel emulator's barrier search, kernel by kernel (kernels/src/emulator/barriers.cpp): a
// kernel runs its threads as fibers when it may reach a barrier or warp operation through its
// body, the functions and macros it names, the headers and the -D options; a kernel that
// cannot reach one runs as a loop, also beside kernels of its module that do.  Wherever the
// search cannot tell, fibers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/barriers.hpp"  // library-internal: tests/CMakeLists.txt adds kernels/src

namespace {

using cunumpy::detail::kernels_with_barriers;

std::vector<bool> search(const std::string& source, const std::vector<std::string>& kernels,
                         const std::vector<std::string>& headers = {},
                         const std::vector<std::string>& options = {}) {
  return kernels_with_barriers(source, headers, options, kernels);
}

TEST(EmulatorBarriers, EachKernelOfAModuleIsSearchedOnItsOwn) {
  const std::string source = R"(
    #define SYNC() __syncthreads()
    __device__ void stage(double* tile, double v) { tile[threadIdx.x] = v; SYNC(); }
    __device__ double rotated(double* tile, const double* x, int i) {
      stage(tile, x[i]);  // two calls and a macro down
      return tile[(threadIdx.x + 1) % blockDim.x];
    }
    __device__ double twice(double v) { return 2 * v; }
    extern "C" __global__ void rotate(const double* x, double* y) {
      __shared__ double tile[64];
      y[threadIdx.x] = rotated(tile, x, threadIdx.x);
    }
    template <typename T, int N>
    __global__ void times(T* y) { y[threadIdx.x] = twice(y[threadIdx.x]) * N; }
    extern "C" { __global__ void shuffle(int* y) { y[0] = __shfl_down_sync(0xffffffffu, y[0], 1); } }
    __global__ void sums(double* y) { y[0] = block_reduce(y[0], Add{}, 0.0); }
  )";
  EXPECT_EQ(search(source, {"rotate", "times<double, 3>", "shuffle", "sums"}),
            (std::vector<bool>{true, false, true, true}));
  // A module without barriers runs every kernel as a loop.
  EXPECT_EQ(search("__global__ void a(int* y) { y[0] = 1; }\n__global__ void b(int* y) { a; }",
                   {"a", "b"}),
            (std::vector<bool>{false, false}));
}

TEST(EmulatorBarriers, HeadersOptionsMembersAndConstructorsCount) {
  const std::string header = R"(
    #pragma once
    struct Tile {
      __device__ Tile(double* t) : data{t}, n(blockDim.x) { __syncthreads(); }
      __device__ void sync() const { __syncwarp(); }
      double* data;
      int n;
    };
    __device__ inline double plain(double v) { return v + 1; }
  )";
  const std::string source = R"(
    #include "tile.cuh"
    __global__ void builds(double* y) { __shared__ double t[64]; Tile tile(t); y[0] = tile.n; }
    __global__ void member(double* y, Tile& tile) { tile.sync(); }
    __global__ void header_plain(double* y) { y[0] = plain(y[0]); }
    __global__ void optioned(double* y) { BARRIER; }
    __global__ void char_brace(char* y) { y[0] = '{'; y[1] = '}'; y[2] = "}{"[0]; }
  )";
  EXPECT_EQ(search(source, {"builds", "member", "header_plain", "optioned", "char_brace"}, {header},
                   {"-DBARRIER=__syncthreads()"}),
            (std::vector<bool>{true, true, false, true, false}));
  // Without the option, BARRIER is nobody's: the kernel runs as a loop (and the engine reports
  // a barrier reached there, should the compiler define it some other way).
  EXPECT_EQ(search(source, {"optioned", "header_plain"}, {header}),
            (std::vector<bool>{false, false}));
  // A name pasted together is not seen (the engine reports it when reached in loop mode), and
  // "__sync", a piece of one, is not a warp operation.
  EXPECT_EQ(search(source, {"optioned"}, {header}, {"-DBARRIER=PASTE(__sync, threads)()"}),
            (std::vector<bool>{false}));
}

// A header that defines functions named for what they do (reduce.cuh's block_reduce and
// warp_reduce) leaves a kernel that calls none of them a loop: the name a definition or
// declaration gives itself is not a barrier outside a function.  cunumpy_block_sum_to needs no
// barrier in the emulator (the engine adds the block's sum at its last thread's call), so a
// kernel whose only synchronisation it is stays a loop; with a barrier of its own, fibers.
TEST(EmulatorBarriers, AReductionHeaderLeavesPlainKernelsLoopsAndBlockSumToNeedsNone) {
  const std::string header = R"(
    template <typename T, typename Op>
    __device__ T warp_reduce(T v, Op op) {
      for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
      return v;
    }
    template <typename T, typename Op>
    __device__ T block_reduce(T v, Op op, T identity);
    template <typename T, typename Op>
    __device__ T block_reduce(T v, Op op, T identity) {
      __syncthreads();
      return warp_reduce(v, op);
    }
    template <typename T> __device__ T cunumpy_block_sum(T v) { return block_reduce(v, 0, T(0)); }
    template <typename T> __device__ void cunumpy_block_sum_to(T* out, T v) {
      const T s = cunumpy_block_sum(v);
      if (threadIdx.x == 0) atomicAdd(out, s);
    }
  )";
  const std::string source = R"(
    #include "reduce.cuh"
    __global__ void plain(double* y) { y[threadIdx.x] *= 2; }
    __global__ void energy(double* e, const double* v) { cunumpy_block_sum_to(e, v[threadIdx.x]); }
    __global__ void partial(double* e, const double* v) { e[0] = cunumpy_block_sum(v[threadIdx.x]); }
    __global__ void both(double* e, const double* v) {
      cunumpy_block_sum_to(e, v[threadIdx.x]);
      __syncthreads();
    }
  )";
  EXPECT_EQ(search(source, {"plain", "energy", "partial", "both"}, {header}),
            (std::vector<bool>{false, false, true, true}));
}

TEST(EmulatorBarriers, WhereTheSearchCannotTellItAnswersFibers) {
  // A kernel made by a macro (no definition of its name in the text): fibers, as the source
  // synchronises somewhere.
  const std::string made = R"(
    #define KERNEL(name) __global__ void name(double* y) { __syncthreads(); }
    KERNEL(generated)
    __global__ void plain(double* y) { y[0] = 1; }
  )";
  EXPECT_EQ(search(made, {"generated", "plain"}), (std::vector<bool>{true, false}));
  // A barrier in a lambda at namespace scope is tied to no function: every kernel, fibers.
  const std::string lambda = R"(
    auto sync = [] __device__ () { __syncthreads(); };
    __global__ void plain(double* y) { y[0] = 1; }
  )";
  EXPECT_EQ(search(lambda, {"plain"}), (std::vector<bool>{true}));
  // Without any synchronisation, nothing needs fibers, known kernel or not.
  EXPECT_EQ(search("#define K(n) __global__ void n() {}\nK(made)", {"made"}),
            (std::vector<bool>{false}));
}

}  // namespace
