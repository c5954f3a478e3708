// A legacy code's C routines, taken as they are: a host kernel may be a function of raw
// pointers and scalars, and the call passes Arrays (the host side receives their host data; on
// a device backend a host copy, with the outputs copied back).  deposit has its CUDA twin in
// kernels/deposit/, push is not ported yet and runs on host copies on a device backend.  The
// catalog says what is ported and checks that the twin takes what the C routine takes.
#include <cmath>
#include <cstdio>
#include <vector>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/kernel_catalog.hpp>

#include "legacy.h"

namespace cn = cunumpy;

int main(int argc, char** argv) {
  cn::Runtime runtime(argc, argv);
  cn::KernelCatalog catalog(
      {.cuda_folder = KERNELS_DIR, .missing_cuda = cn::MissingCuda::fallback});
  auto& deposit_kernel = catalog.add("deposit", &deposit);
  // push writes part (argument 0) and ek (4): only those come back from a host copy.
  auto& push_kernel = catalog.add("push", &push, {.outputs = std::vector{0, 4}});
  std::printf("%s\n", catalog.summary().c_str());
  catalog.check_signatures();  // deposit_cuda.cu takes (const float*, float*, float, int, int, int)

  const int nx = 64, idimp = 2, nop = 4096;
  const float qm = 1.0f / 64, qbm = -1.0f, dt = 0.1f;
  std::vector<float> start(static_cast<std::size_t>(idimp * nop));
  for (int j = 0; j < nop; ++j) {
    start[static_cast<std::size_t>(idimp * j)] = nx * (j + 0.5f) / nop;
    start[static_cast<std::size_t>(idimp * j + 1)] = 0.5f * std::sin(0.37f * j);
  }
  // The legacy code on its own, for reference.
  std::vector<float> ref_part = start, ref_q(nx), ref_fx(nx), ref_ek(1);
  // The port: the same routines through the catalog, on the arrays of the active backend.
  auto part = cn::from_host<float>(start);
  auto q = cn::zeros<float>({nx});
  auto fx = cn::zeros<float>({nx});
  auto ek = cn::zeros<float>({1});
  const auto qv = q.view<1>();  // views: what a loop body reads on any backend
  const auto fxv = fx.view<1>();

  for (int step = 0; step < 5; ++step) {
    std::fill(ref_q.begin(), ref_q.end(), 0.0f);
    deposit(ref_part.data(), ref_q.data(), qm, nop, idimp, nx);
    for (int i = 0; i < nx; ++i) ref_fx[static_cast<std::size_t>(i)] = ref_q[i] - 1.0f;
    push(ref_part.data(), ref_fx.data(), qbm, dt, ref_ek.data(), nop, idimp, nx);

    q.fill(0.0f);
    deposit_kernel(cn::threads(nop), part, q, qm, nop, idimp, nx);
    cn::parallel_for(
        "field", nx, CUNUMPY_LAMBDA(long long i) { fxv(i) = qv(i) - 1.0f; });
    push_kernel(cn::threads(nop), part, fx, qbm, dt, ek, nop, idimp, nx);
  }
  const auto h = cn::to_host(part);
  const auto e = cn::to_host(ek);
  double worst = 0.0;
  for (int i = 0; i < idimp * nop; ++i)
    worst = std::max(worst,
                     static_cast<double>(std::fabs(h(i) - ref_part[static_cast<std::size_t>(i)])));
  // The CUDA twin sums the grid in another order: the same result to float rounding.
  const bool ok = worst < 1e-3 && std::fabs(e(0) - ref_ek[0]) < 1e-3 * std::fabs(ref_ek[0]) &&
                  deposit_kernel.has_cuda() && !push_kernel.has_cuda();
  std::printf(
      "backend %s: deposit runs %s, push runs %s; kinetic energy %.6f (legacy %.6f), "
      "largest particle difference %.2e\n%s\n",
      cn::to_string(cn::get_backend()).data(), catalog["deposit"].get_kernel().c_str(),
      catalog["push"].get_kernel().c_str(), static_cast<double>(e(0)),
      static_cast<double>(ref_ek[0]), worst, ok ? "legacy_port: ok" : "legacy_port: WRONG");
  return ok ? 0 : 1;
}
