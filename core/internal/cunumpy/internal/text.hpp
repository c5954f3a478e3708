// cunumpy/internal/text.hpp: small text pieces the library's messages share.
#pragma once

#include <string>

namespace cunumpy::detail {

// "(x, y, z)": a launch's grid or block, a block's or thread's index, as messages print them.
// Built piece by piece (GCC 12 warns, falsely, on "(" + std::string).
inline std::string dims_text(long long x, long long y, long long z) {
  std::string s(1, '(');
  s += std::to_string(x);
  s += ", ";
  s += std::to_string(y);
  s += ", ";
  s += std::to_string(z);
  s += ')';
  return s;
}

}  // namespace cunumpy::detail
