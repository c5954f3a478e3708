// Runs kernels/push_cuda.cu on the device arrays of the active backend: on a GPU through NVRTC,
// on the emulated device (CUNUMPY_BACKEND=emulated) through the kernel emulator.  Every argument
// is checked against the kernel's signature; the result is compared with the host's formula.
#include <cmath>
#include <cstdio>
#include <string>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>

int main(int argc, char** argv) {
  namespace cn = cunumpy;
  cn::Runtime runtime(argc, argv);
  if (cn::get_backend() == cn::Backend::host) {
    std::printf(
        "cuda_kernel: the host backend runs no CUDA kernel; set CUNUMPY_BACKEND=emulated "
        "(or run on a GPU)\n");
    return 0;
  }
  const std::string kernels = KERNELS_DIR;
  auto push = cn::CudaKernel::from_file(kernels + "/push_cuda.cu", std::nullopt,
                                        {.include_dirs = {kernels}});
  const long long n = 4096;
  auto x = cn::arange<double>(0.0, static_cast<double>(n), 1.0);
  auto v = cn::zeros<double>({n});
  auto e = cn::full<double>({n}, 0.5);
  const double q_over_m = -1.0, dt = 0.1;
  for (int step = 0; step < 10; ++step) push(cn::threads(n), x, v, e, q_over_m, dt);
  const auto hx = cn::to_host(x), hv = cn::to_host(v);
  // v after k steps: -0.05 k; x = x0 + dt * sum_k v_k = x0 - 0.005 * 55.
  const bool ok = std::abs(hv(7) + 0.5) < 1e-12 && std::abs(hx(7) - (7.0 - 0.275)) < 1e-12;
  std::printf("push on %s: x(7) %.6f, v(7) %.6f (compiled %s)\n%s\n",
              cn::to_string(cn::get_backend()).data(), hx(7), hv(7),
              push.loaded_from_cache() ? "earlier, from the cache" : "now",
              ok ? "cuda_kernel: ok" : "cuda_kernel: WRONG");
  return ok ? 0 : 1;
}
