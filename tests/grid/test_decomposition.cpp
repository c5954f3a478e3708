// The Cartesian decomposition: the rank grid as MPI_Dims_create chooses it, owned ranges that
// tile the box, neighbours (periodic and bounded), owners of cells, index maps, errors.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

TEST(DimsCreate, AsSquareAsPossibleLargerFactorsOnLongerAxes) {
  EXPECT_EQ(cn::dims_create(4, 2, {64, 64, 1}), (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(cn::dims_create(6, 2, {64, 64, 1}), (std::array<int, 3>{3, 2, 1}));
  EXPECT_EQ(cn::dims_create(6, 2, {32, 128, 1}), (std::array<int, 3>{2, 3, 1}))
      << "3 ranks along the longer y";
  EXPECT_EQ(cn::dims_create(8, 3, {16, 16, 16}), (std::array<int, 3>{2, 2, 2}));
  EXPECT_EQ(cn::dims_create(12, 3, {10, 10, 10}), (std::array<int, 3>{3, 2, 2}));
  EXPECT_EQ(cn::dims_create(7, 2, {10, 10, 1}), (std::array<int, 3>{7, 1, 1}));
  EXPECT_EQ(cn::dims_create(1, 3, {4, 4, 4}), (std::array<int, 3>{1, 1, 1}));
  EXPECT_THROW((void)cn::dims_create(0, 2, {4, 4, 1}), cn::ValueError);
  EXPECT_THROW((void)cn::dims_create(4, 4, {4, 4, 4}), cn::ValueError);
}

TEST(Decomposition, OwnedRangesTileTheBoxAndOwnersAgree) {
  for (int ranks : {1, 2, 3, 4, 6, 8}) {
    std::vector<long long> count(10 * 7, 0);
    for (int r = 0; r < ranks; ++r) {
      const cn::CartesianDecomposition d(r, ranks, {10, 7}, {.periodic = {true, false, true}});
      const auto x = d.owned(0), y = d.owned(1);
      EXPECT_EQ(d.local_size(), (x.end - x.begin) * (y.end - y.begin));
      for (long long i = x.begin; i < x.end; ++i)
        for (long long j = y.begin; j < y.end; ++j) {
          ++count[i * 7 + j];
          ASSERT_EQ(d.owner_of({i, j, 0}), r) << ranks << " ranks, cell " << i << "," << j;
        }
      EXPECT_EQ(d.to_global(0, d.to_local(0, x.begin + 1)), x.begin + 1);
      EXPECT_EQ(d.to_local(1, y.begin), 0);
    }
    for (long long c : count) ASSERT_EQ(c, 1) << ranks << " ranks: every cell has one owner";
  }
}

TEST(Decomposition, NeighboursPeriodicAndBounded) {
  // 2 x 2 ranks over 8 x 8, periodic along x, bounded along y; rank = 2 * cx + cy.
  const cn::CartesianDecomposition d(3, 4, {8, 8}, {.periodic = {true, false, true}});
  EXPECT_EQ(d.dims(), (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(d.coords(), (std::array<int, 3>{1, 1, 0}));
  EXPECT_EQ(d.neighbour(0, +1), 1) << "wraps along the periodic x";
  EXPECT_EQ(d.neighbour(0, -1), 1);
  EXPECT_EQ(d.neighbour(1, -1), 2);
  EXPECT_EQ(d.neighbour(1, +1), cn::proc_null) << "past the bounded y";
  EXPECT_EQ(d.owner_of({-1, 0, 0}), 2)
      << "a periodic axis wraps cells: x = 7 is in the second column";
  EXPECT_THROW((void)d.owner_of({0, 8, 0}), cn::ValueError) << "outside the bounded axis";
  const cn::CartesianDecomposition one(0, 1, {16}, {});
  EXPECT_EQ(one.neighbour(0, +1), 0) << "one periodic rank is its own neighbour";
  EXPECT_EQ(
      d.str(),
      "2 x 2 rank(s) over 8 x 8 cells (periodic, bounded); rank 3 at (1, 1) owns [4, 8) x [4, 8)");
}

TEST(Decomposition, BadInputIsAClearError) {
  EXPECT_THROW(cn::CartesianDecomposition(0, 4, {8, 8}, {.dims = std::array<int, 3>{3, 1, 1}}),
               cn::ValueError)
      << "dims that do not make the rank count";
  EXPECT_THROW(cn::CartesianDecomposition(0, 4, {2, 8}, {.dims = std::array<int, 3>{4, 1, 1}}),
               cn::ValueError)
      << "fewer cells than ranks along an axis";
  EXPECT_THROW(cn::CartesianDecomposition(4, 4, {8, 8}), cn::ValueError) << "no rank 4 of 4";
  EXPECT_THROW(cn::CartesianDecomposition(0, 1, {8, 0}), cn::ValueError);
  EXPECT_THROW(cn::CartesianDecomposition(0, 1, {1, 2, 3, 4}), cn::ValueError);
  const cn::CartesianDecomposition d(0, 1, {8, 8});
  EXPECT_THROW((void)d.owned(2), cn::ValueError);
}
