// An application's test through the installed cunumpy::testing.
#include <cunumpy/testing.hpp>

namespace cn = cunumpy;

class Ones : public cn::testing::OnBackend {};
TEST_P(Ones, SumToTheirCount) {
  auto x = cn::ones<double>({8});
  EXPECT_EQ(x.backend(), GetParam());
  EXPECT_EQ(cn::to_host(x)(7), 1.0);
}
CUNUMPY_INSTANTIATE_ON_BACKENDS(Ones);
