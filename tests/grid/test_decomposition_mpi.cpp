// The decomposition on a real communicator (1, 2 and 4 ranks): the ranks' owned ranges tile
// the box, and every neighbour relation is mutual.
#include <gtest/gtest.h>

#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

TEST(DecompositionMpi, RangesTileTheBoxAndNeighboursAreMutual) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {40, 24, 6}, {.periodic = {true, true, false}});
  const long long mine[6] = {d.owned(0).begin, d.owned(0).end,   d.owned(1).begin,
                             d.owned(1).end,   d.owned(2).begin, d.owned(2).end};
  std::vector<long long> all(6 * static_cast<std::size_t>(world.size()));
  world.allgather<long long>(mine, std::span<long long>(all));
  long long cells = 0;
  for (int r = 0; r < world.size(); ++r)
    cells += (all[6 * r + 1] - all[6 * r]) * (all[6 * r + 3] - all[6 * r + 2]) *
             (all[6 * r + 5] - all[6 * r + 4]);
  EXPECT_EQ(cells, 40LL * 24 * 6);
  // Send my rank to my +1 neighbour along each axis; what arrives from -1 must be that rank.
  for (int axis = 0; axis < 3; ++axis) {
    const int right = d.neighbour(axis, +1), left = d.neighbour(axis, -1);
    int got = -7;
    std::vector<int> out{world.rank()}, in{-7};
    world.sendrecv<int>(out, right, std::span<int>(in), left, 20 + axis);
    got = in[0];
    if (left != cn::proc_null) {
      EXPECT_EQ(got, left) << "axis " << axis;
    }
  }
  if (world.rank() == 0) std::printf("%s\n", d.str().c_str());
}
