// Must not compile: a legacy routine of double* called with an Array<float>.  The one error is
// HostKernel's static_assert naming the parameters it accepts (tests/CMakeLists.txt checks it).
#include <cunumpy/cunumpy.hpp>
#include <cunumpy/kernel.hpp>

extern "C" void scale_c(double* x, double a, int n) {
  for (int i = 0; i < n; ++i) x[i] *= a;
}

int main() {
  cunumpy::HostKernel scale("scale", &scale_c);
  auto x = cunumpy::ones<float>({4});
  scale(x, 2.0, 4);
  return 0;
}
