// Must not compile: segment_sum refuses bool values at compile time, with a message
// (tests/CMakeLists.txt checks the message).
#include <cunumpy/cunumpy.hpp>

int main() {
  auto keys = cunumpy::zeros<std::int64_t>({4});
  auto values = cunumpy::zeros<bool>({4});
  auto sums = cunumpy::segment_sum(keys, values, 1);
  return static_cast<int>(sums.size());
}
