// The device headers compiled for the host: view layout, bounds checks (this file is built
// with CUNUMPY_BOUNDS_CHECK), index-free helpers and atomics under OpenMP threads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <cunumpy/array_view.cuh>
#include <cunumpy/atomic.cuh>
#include <cunumpy/config.cuh>
#include <cunumpy/index.cuh>

#if defined(_OPENMP)
#include <omp.h>
#endif

#ifndef CUNUMPY_BOUNDS_CHECK
#error "test_device_headers must be compiled with CUNUMPY_BOUNDS_CHECK"
#endif

using cunumpy::Array1D;
using cunumpy::Array2D;
using cunumpy::Array4D;

TEST(ArrayView, LayoutOfTheCStruct) {
  static_assert(sizeof(Array1D<double>) == 24);
  static_assert(sizeof(Array4D<float>) == 72);
  static_assert(offsetof(Array2D<double>, shape) == 8);
  static_assert(offsetof(Array2D<double>, strides) == 24);
  static_assert(!CUNUMPY_CUDA_COMPILATION());
  SUCCEED();
}

TEST(ArrayView, StridedIndexing) {
  std::vector<double> data(12);
  for (int i = 0; i < 12; ++i) data[i] = i;
  // Every other column of a (3, 4) array: shape (3, 2), strides (4, 2).
  Array2D<double> v{data.data(), {3, 2}, {4, 2}};
  EXPECT_EQ(v(0, 0), 0.0);
  EXPECT_EQ(v(1, 1), 6.0);
  EXPECT_EQ(v(2, 1), 10.0);
  EXPECT_EQ(v.size(), 6);
  v(2, 0) = -1.0;
  EXPECT_EQ(data[8], -1.0);
}

TEST(ArrayView, BoundsCheckedOnTheHost) {
  std::vector<double> data(6);
  Array2D<double> v{data.data(), {2, 3}, {3, 1}};
  EXPECT_NO_THROW(v(1, 2));
  try {
    (void)v(1, 3);
    FAIL() << "expected IndexError";
  } catch (const cunumpy::IndexError& e) {
    EXPECT_EQ(std::string(e.what()),
              "Array2D: index 3 is out of bounds for axis 1 with size 3; valid indices are 0..2");
  }
  EXPECT_THROW((void)v(-1, 0), cunumpy::IndexError);
  EXPECT_THROW((void)v(2, 0), cunumpy::IndexError);
  static_assert(std::is_base_of_v<cunumpy::Error, cunumpy::IndexError>);
}

// The index macros read CUDA's built-in variables; here they are stand-ins, so the macros'
// arithmetic and early returns are checked on the host.
namespace fake_cuda {
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
Dim3 blockIdx, blockDim, threadIdx, gridDim;

// Like kernels, these return early (void) when the thread is outside the range; the index
// is passed out, -1 meaning "returned early".
void thread_1d_body(long long n, long long& out) {
  out = -1;
  CUNUMPY_THREAD_1D(i, n);
  out = i;
}
void thread_2d_body(long long ni, long long nj, long long& out) {
  out = -1;
  CUNUMPY_THREAD_2D(i, j, ni, nj);
  out = i * 1000 + j;
}
void thread_3d_body(long long ni, long long nj, long long nk, long long& out) {
  out = -1;
  CUNUMPY_THREAD_3D(i, j, k, ni, nj, nk);
  out = (i * 1000 + j) * 1000 + k;
}
long long thread_1d(long long n) {
  long long out;
  thread_1d_body(n, out);
  return out;
}
long long thread_2d(long long ni, long long nj) {
  long long out;
  thread_2d_body(ni, nj, out);
  return out;
}
long long thread_3d(long long ni, long long nj, long long nk) {
  long long out;
  thread_3d_body(ni, nj, nk, out);
  return out;
}
std::vector<long long> grid_stride(long long n) {
  std::vector<long long> visited;
  CUNUMPY_GRID_STRIDE_1D(i, n) {
    visited.push_back(i);
  }
  return visited;
}
}  // namespace fake_cuda

TEST(IndexMacros, ThreadIndicesAndEarlyReturn) {
  using namespace fake_cuda;
  blockDim = {128, 4, 2};
  blockIdx = {3, 1, 2};
  threadIdx = {5, 2, 1};
  gridDim = {4, 1, 1};
  EXPECT_EQ(thread_1d(1000), 3 * 128 + 5);
  EXPECT_EQ(thread_1d(3 * 128 + 5), -1) << "i == n returns early";
  EXPECT_EQ(thread_2d(1000, 10), (3 * 128 + 5) * 1000 + (1 * 4 + 2));
  EXPECT_EQ(thread_2d(1000, 6), -1) << "j == nj returns early";
  EXPECT_EQ(thread_3d(1000, 10, 10), ((3 * 128 + 5) * 1000 + 6) * 1000 + (2 * 2 + 1));
  EXPECT_EQ(thread_3d(1000, 10, 5), -1) << "k == nk returns early";
  blockIdx = {1, 0, 0};
  threadIdx = {7, 0, 0};
  // Thread 135 of a 512-thread grid visits 135, 647, 1159 below 1200.
  EXPECT_EQ(grid_stride(1200), (std::vector<long long>{135, 647, 1159}));
}

TEST(Atomic, ReturnsTheOldValue) {
  double d = 1.5;
  EXPECT_EQ(cunumpy_atomic_add(&d, 2.0), 1.5);
  EXPECT_EQ(d, 3.5);
  float f = 1.0f;
  EXPECT_EQ(cunumpy_atomic_add(&f, 0.5f), 1.0f);
  EXPECT_EQ(f, 1.5f);
  std::vector<double> grid(2 * 3 * 4, 0.0);
  cunumpy_atomic_add_2d(grid.data(), 3, 1, 2, 5.0);
  EXPECT_EQ(grid[1 * 3 + 2], 5.0);
  cunumpy_atomic_add_3d(grid.data(), 3, 4, 1, 2, 3, 7.0);
  EXPECT_EQ(grid[(1 * 3 + 2) * 4 + 3], 7.0);
  std::vector<float> fg(6, 0.0f);
  cunumpy_atomic_add_2d(fg.data(), 3, 1, 1, 2.0f);
  cunumpy_atomic_add_3d(fg.data(), 1, 3, 1, 0, 2, 1.0f);
  EXPECT_EQ(fg[4], 2.0f);
  EXPECT_EQ(fg[5], 1.0f);
}

TEST(Atomic, CorrectUnderOpenMPThreads) {
#if !defined(_OPENMP)
  GTEST_SKIP() << "built without OpenMP (CUNUMPY_ENABLE_OPENMP=OFF)";
#else
  const int threads = std::max(4, omp_get_max_threads());
  const long long per_thread = 200000;
  double cell = 0.0;
  float fcell = 0.0f;
  std::vector<double> grid(3 * 2, 0.0);
#pragma omp parallel num_threads(threads)
  {
    for (long long i = 0; i < per_thread; ++i) {
      cunumpy_atomic_add(&cell, 1.0);
      cunumpy_atomic_add_2d(grid.data(), 2, i % 3, i % 2, 0.5);
      if (i < 1000) cunumpy_atomic_add(&fcell, 1.0f);
    }
  }
  // Every add was applied: a lost update would leave the sums short.
  EXPECT_EQ(cell, static_cast<double>(threads * per_thread));
  EXPECT_EQ(fcell, static_cast<float>(threads * 1000));
  double total = 0.0;
  for (double g : grid) total += g;
  EXPECT_EQ(total, 0.5 * static_cast<double>(threads * per_thread));
#endif
}
