// cumsum, exclusive_scan, flatnonzero and stable_partition (algorithms.hpp).  Compiled as CUDA
// when the CUDA backend is built: device arrays are scanned by CUB's DeviceScan.
#include <cunumpy/algorithms.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include <cunumpy/errors.hpp>
#include <cunumpy/parallel.hpp>

#if CUNUMPY_CUDA_COMPILATION()
#include <cub/device/device_scan.cuh>
#include <cunumpy/cuda_check.hpp>
#include <cunumpy/memory_block.hpp>
#endif

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace cunumpy {
namespace detail {

namespace {

// Host work is cut into chunks of this many elements, fixed (not by thread count): a chunk's
// partial sums and the offsets of the chunks are the same on every run.
constexpr long long kChunk = 1 << 16;

long long chunks_of(long long n) {
  return (n + kChunk - 1) / kChunk;
}

// Runs f(c) for every chunk c, in parallel over OpenMP threads when there are several chunks.
template <typename F>
void each_chunk(long long chunks, F&& f) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (chunks > 1)
#endif
  for (long long c = 0; c < chunks; ++c) f(c);
}

void check_scan_input(std::string_view what, const Shape& shape) {
  if (shape.rank() != 1)
    throw ValueError(std::string(what) + ": a 1D array is required, got shape " + shape.str() +
                     " (reshape it to 1D first, as numpy's flattening would)");
}

// Host memory: integers in parallel (chunk sums, their exclusive scan, then each chunk from
// its offset: exact whatever the order), floating values in one pass in index order (numpy's
// sequential additions: the same bits as numpy.cumsum).
// out[i] for i in [begin, end): the running sum from `acc`, after (inclusive) or before in[i].
template <typename T>
void scan_range(const T* in, T* out, long long begin, long long end, T acc, bool inclusive) {
  for (long long i = begin; i < end; ++i) {
    const T v = in[i];
    if (inclusive) {
      acc += v;
      out[i] = acc;
    } else {
      out[i] = acc;
      acc += v;
    }
  }
}

template <typename T>
void host_scan(const T* in, T* out, long long n, bool inclusive) {
  if constexpr (std::is_floating_point_v<T>) {
    scan_range(in, out, 0, n, T(0), inclusive);
  } else {
    const long long chunks = chunks_of(n);
    std::vector<T> offset(static_cast<std::size_t>(chunks));
    each_chunk(chunks, [&](long long c) {
      T s = T(0);
      for (long long i = c * kChunk, e = std::min(n, i + kChunk); i < e; ++i) s += in[i];
      offset[static_cast<std::size_t>(c)] = s;
    });
    T run = T(0);
    for (T& o : offset) {
      const T s = o;
      o = run;
      run += s;
    }
    each_chunk(chunks, [&](long long c) {
      scan_range(in, out, c * kChunk, std::min(n, (c + 1) * kChunk),
                 offset[static_cast<std::size_t>(c)], inclusive);
    });
  }
}

// Host memory: the indices of nonzero elements to out[0, selected) and, when `rest` is set,
// those of zero elements to out[selected, n); each group in increasing order.  Two passes over
// fixed chunks: count, then write from each chunk's offsets.  Returns `selected`.
template <typename T>
long long host_select(const T* a, long long n, bool rest, std::int64_t* out) {
  const long long chunks = chunks_of(n);
  std::vector<long long> first(static_cast<std::size_t>(chunks) + 1, 0);
  each_chunk(chunks, [&](long long c) {
    long long k = 0;
    for (long long i = c * kChunk, e = std::min(n, i + kChunk); i < e; ++i)
      k += a[i] != T(0) ? 1 : 0;
    first[static_cast<std::size_t>(c) + 1] = k;
  });
  for (long long c = 0; c < chunks; ++c)
    first[static_cast<std::size_t>(c) + 1] += first[static_cast<std::size_t>(c)];
  const long long selected = first.back();
  if (out == nullptr) return selected;
  each_chunk(chunks, [&](long long c) {
    const long long begin = c * kChunk, end = std::min(n, begin + kChunk);
    long long s = first[static_cast<std::size_t>(c)];
    long long z = selected + (begin - s);  // the zeros before this chunk come after `selected`
    for (long long i = begin; i < end; ++i) {
      if (a[i] != T(0))
        out[s++] = i;
      else if (rest)
        out[z++] = i;
    }
  });
  return selected;
}

#if CUNUMPY_CUDA_COMPILATION()
template <typename T>
void cuda_scan(const Target& t, const T* in, T* out, long long n, bool inclusive) {
  const StreamScope scope(t.stream);  // the temporary storage in the stream's order
  auto stream = static_cast<cudaStream_t>(t.stream.native_handle());
  std::size_t bytes = 0;
  if (inclusive)
    CUNUMPY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, n, stream));
  else
    CUNUMPY_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n, stream));
  auto temp = allocate_block(MemoryKind::cuda, std::max<std::size_t>(bytes, 1));
  if (inclusive)
    CUNUMPY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp->data(), bytes, in, out, n, stream));
  else
    CUNUMPY_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp->data(), bytes, in, out, n, stream));
}

// Device: flags (0/1), their exclusive scan, the count (a reduction read back), then each
// element writes its index at its rank within its group.
template <typename T>
long long cuda_select(const Target& t, const T* a, long long n, bool rest, std::int64_t* out) {
  Array<std::int64_t> flags(Shape{n}, Backend::cuda), rank(Shape{n}, Backend::cuda);
  std::int64_t* f = flags.data();
  std::int64_t* r = rank.data();
  parallel_for(
      t, "select flags", n, CUNUMPY_LAMBDA(long long i) { f[i] = a[i] != T(0) ? 1 : 0; });
  cuda_scan<std::int64_t>(t, f, r, n, false);
  const long long selected = parallel_reduce(
      t, "select count", n, ReduceOp::sum,
      CUNUMPY_LAMBDA(long long i) { return static_cast<long long>(f[i]); });
  if (out == nullptr) return selected;
  parallel_for(
      t, "select scatter", n, CUNUMPY_LAMBDA(long long i) {
        if (f[i] != 0)
          out[r[i]] = i;
        else if (rest)
          out[selected + (i - r[i])] = i;
      });
  return selected;
}
#endif

template <typename T>
long long select_on(const Array<T>& a, bool rest, std::int64_t* out) {
  const long long n = a.size();
  if (n == 0) return 0;
  const Target t = on(a);
  if (a.backend() == Backend::cuda) {
#if CUNUMPY_CUDA_COMPILATION()
    return cuda_select(t, a.data(), n, rest, out);
#else
    throw BackendError("flatnonzero/stable_partition on cuda needs cunumpy built with CUDA");
#endif
  }
  emulated_order(t);  // host memory (host, or the emulated device's arena), after its stream
  return host_select(a.data(), n, rest, out);
}

}  // namespace

template <ScanValue T>
Array<T> scan_impl(const Array<T>& a, bool inclusive) {
  check_scan_input(inclusive ? "cumsum" : "exclusive_scan", a.shape());
  const long long n = a.size();
  Array<T> out(a.shape(), a.backend());
  if (n == 0) return out;
  const Target t = on(a);
  if (a.backend() == Backend::cuda) {
#if CUNUMPY_CUDA_COMPILATION()
    cuda_scan<T>(t, a.data(), out.data(), n, inclusive);
    return out;
#else
    throw BackendError("cumsum/exclusive_scan on cuda needs cunumpy built with CUDA");
#endif
  }
  emulated_order(t);
  host_scan(a.data(), out.data(), n, inclusive);
  return out;
}

template <Element T>
Array<std::int64_t> flatnonzero_impl(const Array<T>& a) {
  const long long selected = select_on(a, false, nullptr);
  Array<std::int64_t> out(Shape{selected}, a.backend());
  if (selected > 0) select_on(a, false, out.data());
  return out;
}

template <Element T>
Partition stable_partition_impl(const Array<T>& flags) {
  check_scan_input("stable_partition", flags.shape());
  Partition p{Array<std::int64_t>(Shape{flags.size()}, flags.backend()), 0};
  p.selected = select_on(flags, true, p.order.data());
  return p;
}

#define CUNUMPY_SCAN(T) template Array<T> scan_impl<T>(const Array<T>&, bool);
CUNUMPY_SCAN(std::int32_t)
CUNUMPY_SCAN(std::int64_t)
CUNUMPY_SCAN(std::uint32_t)
CUNUMPY_SCAN(std::uint64_t)
CUNUMPY_SCAN(float)
CUNUMPY_SCAN(double)
#undef CUNUMPY_SCAN

#define CUNUMPY_SELECT(T)                                            \
  template Array<std::int64_t> flatnonzero_impl<T>(const Array<T>&); \
  template Partition stable_partition_impl<T>(const Array<T>&);
CUNUMPY_SELECT(bool)
CUNUMPY_SELECT(std::uint8_t)
CUNUMPY_SELECT(std::int8_t)
CUNUMPY_SELECT(std::int32_t)
CUNUMPY_SELECT(std::int64_t)
CUNUMPY_SELECT(std::uint32_t)
CUNUMPY_SELECT(std::uint64_t)
CUNUMPY_SELECT(float)
CUNUMPY_SELECT(double)
#undef CUNUMPY_SELECT

}  // namespace detail
}  // namespace cunumpy
