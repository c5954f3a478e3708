// Messages and collectives of more than INT_MAX elements (2^31 + 9 bytes) at 2 ranks: the
// counts are 64-bit end to end, so nothing is truncated or wraps.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {
constexpr long long kCount = (1LL << 31) + 9;

std::uint8_t pattern(long long i, int rank) {
  return static_cast<std::uint8_t>((i * 131 + rank * 7) & 0xff);
}
}  // namespace

TEST(LargeCounts, SendRecvBcastAndAllreduceAboveIntMax) {
  const cn::Comm world = cn::Comm::world();
  if (world.size() != 2) GTEST_SKIP() << "registered at 2 ranks";
  const int rank = world.rank(), peer = 1 - rank;
  std::vector<std::uint8_t> out(static_cast<std::size_t>(kCount)),
      in(static_cast<std::size_t>(kCount), 0);
  for (long long i = 0; i < kCount; ++i) out[static_cast<std::size_t>(i)] = pattern(i, rank);

  world.sendrecv<std::uint8_t>(out, peer, std::span(in), peer, 3);
  for (long long i : {0LL, 1LL, (1LL << 31) - 1, 1LL << 31, kCount - 1})
    EXPECT_EQ(in[static_cast<std::size_t>(i)], pattern(i, peer)) << "element " << i;

  // bcast from rank 0: rank 1's buffer becomes rank 0's pattern, the last bytes included.
  world.bcast(std::span(out), 0);
  EXPECT_EQ(out[static_cast<std::size_t>(kCount - 1)], pattern(kCount - 1, 0));

  // allreduce (bit_or of rank 0's pattern with rank 1's received copy of it): runs in pieces.
  world.allreduce(std::span(in), cn::Op::bit_or);
  const long long last = kCount - 1;
  EXPECT_EQ(in[static_cast<std::size_t>(last)], pattern(last, 0) | pattern(last, 1));
  EXPECT_EQ(in[0], pattern(0, 0) | pattern(0, 1));
}
