// backend_report: shows which backend cunumpy chose and why, then makes a few counted
// transfers and prints the transfer report with their call sites.
//
//   CUNUMPY_BACKEND=emulated ./backend_report     # the device paths without a GPU
//   CUNUMPY_BACKEND=cuda ./backend_report         # a GPU, or host and the reason why not
#include <cstdio>
#include <vector>

#include <cunumpy/cunumpy.hpp>

int main() {
  namespace cn = cunumpy;
  std::printf("cunumpy %s\n", cn::version().data());
  std::printf("backend: %s\n", cn::to_string(cn::get_backend()).data());
  std::printf("reason:  %s\n", cn::backend_reason().c_str());
  std::printf("cuda:    %s\n",
              cn::cuda_available() ? "available" : cn::cuda_unavailable_reason().c_str());
  std::printf("devices: %d\n", cn::device_count());
  std::printf("host vector loops: %s\n\n", cn::host_simd().c_str());

  const long long n = 100000;
  std::vector<double> initial(n, 1.0);

  auto counter = cn::count_transfers();
  auto x = cn::from_host<double>(initial);  // to the active backend: counted on a device
  auto v = x.view<1>();
  cn::parallel_for(
      "scale", n, CUNUMPY_LAMBDA(long long i) { v(i) = 2.0 * v(i) + static_cast<double>(i); });
  const double sum = cn::parallel_reduce(
      "sum", n, cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long i) { return v(i); });
  for (int step = 0; step < 3; ++step) {
    auto snapshot = cn::to_host(x);  // a diagnostic copy each step: three to_host events
    (void)snapshot;
  }
  cn::synchronize();
  counter.stop();

  std::printf("sum of x = %.1f (expected %.1f)\n\n", sum, 2.0 * n + 0.5 * n * (n - 1.0));
  std::printf("%s\n", counter.report().c_str());
  return 0;
}
