// A user's program built against the installed cunumpy package.
#include <cstdio>
#include <optional>
#include <string>

#include <cunumpy/atomic_counter.hpp>
#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/cunumpy.hpp>

int main() {
  namespace cn = cunumpy;
  cn::require_version("0.1.0");
  auto counter = cn::count_transfers();
  auto x = cn::arange<double>(0.0, 10.0, 1.0);
  auto v = x.view<1>();
  cn::parallel_for(
      "square", x.size(), CUNUMPY_LAMBDA(long long i) { v(i) = v(i) * v(i); });
  const double sum = cn::parallel_reduce(
      "sum", x.size(), cn::ReduceOp::sum, CUNUMPY_LAMBDA(long long i) { return v(i); });
  auto h = cn::to_host(x);
  std::printf("backend %s, sum %.0f, h(3) %.0f\n%s\n", cn::to_string(cn::get_backend()).data(), sum,
              h(3), counter.report().c_str());
  bool ok = sum == 285.0 && h(3) == 9.0 && counter.to_host() == (x.is_device() ? 1 : 0);
  if (x.is_device()) {
    // A kernel of the program's own, with its own header, compiled at run time against the
    // headers the installed (and moved) library carries.
    const std::string kernels = CONSUMER_KERNELS_DIR;
    auto module = cn::CudaModule::from_file(kernels + "/shift_cuda.cu", {},
                                            {.include_dirs = {kernels + "/include"}});
    auto shift = module.kernel("shift");
    shift.set_global("shifted", 0);
    auto atomics = cn::count_atomics();  // counted by the kernel emulator
    shift(cn::threads(x.size()), x);
    const int shifted = shift.get_global<int>("shifted");
    if (cn::get_backend() == cn::Backend::emulated) {
      ok = ok && atomics.global() == x.size() && atomics.shared() == 0;
      std::printf("atomics: %lld global, %lld shared\n", atomics.global(), atomics.shared());
    }
    auto seen = cn::zeros<int>({1});  // the module's other kernel reads the same variable
    module.kernel("report")(cn::threads(1), seen);
    ok = ok && cn::to_host(seen)(0) == shifted;
    const auto s = cn::to_host(x);
    ok = ok && s(3) == 9.0 + 1.5 && s(9) == 81.0 + 4.5 && shifted == x.size();
    // A block reduction: one block's partial sum, the host's (a few exact values).
    auto total = module.kernel("total");
    auto partial = cn::zeros<double>({1});
    total(cn::Launch{.grid = 1, .block = 32}, x, partial, x.size());
    double want = 0.0;
    for (long long i = 0; i < x.size(); ++i) want += s(i);
    ok = ok && cn::to_host(partial)(0) == want;
    if (cn::get_backend() == cn::Backend::emulated) ok = ok && total.emulated_as() == "regions";
    std::printf("block sum: %.1f (%.1f)\n", cn::to_host(partial)(0), want);
    std::printf("module data: shifted %d\n", shifted);
    std::printf("kernel shift: s(3) %.1f, s(9) %.1f\ninclude dir: %s\n", s(3), s(9),
                cn::cuda_include_dir().c_str());
  }
  std::printf(ok ? "consumer: ok\n" : "consumer: FAILED\n");
  return ok ? 0 : 1;
}
