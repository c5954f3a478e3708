// A program that exchanges halos and sorts, linked against cunumpy::mpi alone (not the umbrella
// target, which adds the kernel layer, nor the Runtime and I/O above): it must build, run, and
// name neither Boost.Context nor libcrypto among its libraries (tests/layers/CMakeLists.txt
// checks them).  Without a Runtime it works on the serial stand-in (or on MPI's world, when
// the application starts MPI itself).
#include <cstdint>
#include <cstdio>

#include <cunumpy/algorithms.hpp>
#include <cunumpy/halo.hpp>

namespace cn = cunumpy;

int main() {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {8, 6});
  cn::HaloExchange halo(world, d, {.guard = 1});
  auto field = cn::zeros<double>(halo.field_shape(), cn::Backend::host);
  const auto [i0, i1] = halo.interior(0);
  const auto [j0, j1] = halo.interior(1);
  for (long long i = i0; i < i1; ++i)
    for (long long j = j0; j < j1; ++j) field(i, j) = 1.0;
  halo.fill(field);  // periodic: every guard cell now holds a neighbour's 1
  const auto shape = halo.field_shape();
  double total = 0.0;
  for (long long i = 0; i < shape[0]; ++i)
    for (long long j = 0; j < shape[1]; ++j) total += field(i, j);
  const double expected = static_cast<double>(shape[0] * shape[1]);

  auto keys = cn::empty<std::uint64_t>({5}, cn::Backend::host);
  auto values = cn::empty<double>({5}, cn::Backend::host);
  const std::uint64_t key_list[] = {5, 3, 9, 1, 3};
  const double value_list[] = {50, 30, 90, 10, 31};
  for (int i = 0; i < 5; ++i) {
    keys(i) = key_list[i];
    values(i) = value_list[i];
  }
  auto [sorted, order, moved] = cn::sort_by_key(keys, values);
  const bool sorted_ok = sorted(0) == 1 && sorted(1) == 3 && sorted(2) == 3 && sorted(4) == 9 &&
                         moved(1) == 30 && moved(2) == 31 && order(0) == 3;
  if (total != expected || !sorted_ok) {
    std::fprintf(stderr, "halo_sort_program: field total %g (expected %g), sort %s\n", total,
                 expected, sorted_ok ? "right" : "wrong");
    return 1;
  }
  std::printf("halo_sort_program: halo and sort right on rank %d of %d\n", world.rank(),
              world.size());
  return 0;
}
