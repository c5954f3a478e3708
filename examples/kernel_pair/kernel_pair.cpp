// A port in progress: two host kernels, one of which has its CUDA twin (kernels/scale/).  One
// call runs the active backend's version: the host function on the host backend, the CUDA
// kernel on cuda (NVRTC) and on the emulated device (the kernel emulator).  The catalog says
// what is ported, compiles the CUDA kernels up front and checks that both sides take the same
// parameters.
#include <cstdio>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/kernel_catalog.hpp>

namespace cn = cunumpy;

void scale_host(const cn::Array<double>& x, double a, long long n) {
  for (long long i = 0; i < n; ++i) x(i) *= a;
}
void shift_host(const cn::Array<double>& x, double b, long long n) {
  for (long long i = 0; i < n; ++i) x(i) += b;
}

int main(int argc, char** argv) {
  cn::Runtime runtime(argc, argv);
  cn::KernelCatalog catalog(
      {.cuda_folder = KERNELS_DIR, .missing_cuda = cn::MissingCuda::fallback});
  auto& scale = catalog.add("scale", &scale_host);
  auto& shift = catalog.add("shift", &shift_host);  // not ported yet: host copies on a device
  std::printf("%s\n", catalog.summary().c_str());
  catalog.check_signatures();    // host and CUDA parameter lists agree
  (void)catalog.compile_all(2);  // the active backend's images, now rather than at first call

  const long long n = 1000;
  auto x = cn::ones<double>({n});
  scale(cn::threads(n), x, 3.0, n);
  shift(cn::threads(n), x, 1.0, n);
  const auto h = cn::to_host(x);
  const bool ok = h(0) == 4.0 && h(n - 1) == 4.0 && scale.has_cuda() && !shift.has_cuda();
  std::printf("backend %s: x(0) = %.1f\n%s\n", cn::to_string(cn::get_backend()).data(), h(0),
              ok ? "kernel_pair: ok" : "kernel_pair: WRONG");
  return ok ? 0 : 1;
}
