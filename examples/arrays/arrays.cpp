// Arrays on the backend chosen at run time (CUNUMPY_BACKEND=host|emulated|cuda), a loop and a
// reduction that run where the array lives, and the transfers the program makes, counted and
// reported with the line that made them.
#include <cstdio>

#include <cunumpy/cunumpy.hpp>

int main(int argc, char** argv) {
  namespace cn = cunumpy;
  cn::Runtime runtime(argc, argv);  // binds the GPU (if any), starts MPI when launched by one
  auto transfers = cn::count_transfers();

  auto x = cn::arange<double>(0.0, 1000.0, 1.0);  // on the active backend
  auto v = x.view<1>();
  cn::parallel_for(
      "square", x.size(), CUNUMPY_LAMBDA(long long i) { v(i) = v(i) * v(i); });
  const double sum = cn::parallel_reduce(
      "sum", x.size(), cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long i) { return v(i); });
  const auto h = cn::to_host(x);  // the one transfer (none on the host backend)

  std::printf("backend %s: sum of squares %.0f, x(10) = %.0f\n",
              cn::to_string(cn::get_backend()).data(), sum, h(10));
  std::printf("%s\n", transfers.report().c_str());
  const bool ok =
      sum == 332833500.0 && h(10) == 100.0 && transfers.to_host() == (x.is_device() ? 1 : 0);
  std::printf("%s\n", ok ? "arrays: ok" : "arrays: WRONG");
  return ok ? 0 : 1;
}
