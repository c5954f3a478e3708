// cunumpy/shape.hpp: the shape of an array of rank 1 to 4.
//
// Shape{n}, Shape{n0, n1}, ...; printed as a Python tuple ("(100000,)", "(64, 64)") in
// reports and error messages.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>

namespace cunumpy {

// The extents of an array: 1 to 4 axes, each non-negative.
class Shape {
 public:
  static constexpr int max_rank = 4;

  Shape() = default;
  // Throws ValueError for a rank outside 1..4 or a negative extent.
  Shape(std::initializer_list<long long> extents);
  // The same from extents known at run time.
  explicit Shape(std::span<const long long> extents);
  template <std::size_t N>
  explicit Shape(const std::array<long long, N>& extents) : Shape() {
    static_assert(N >= 1 && N <= max_rank, "arrays have rank 1 to 4");
    for (std::size_t d = 0; d < N; ++d) extents_[d] = extents[d];
    rank_ = static_cast<int>(N);
    validate();
  }

  int rank() const noexcept { return rank_; }
  long long operator[](int axis) const noexcept { return extents_[axis]; }
  // Checked access: ValueError naming the rank for an axis outside 0..rank-1.
  long long at(int axis) const;
  long long size() const noexcept {
    long long n = rank_ == 0 ? 0 : 1;
    for (int d = 0; d < rank_; ++d) n *= extents_[d];
    return n;
  }
  const long long* data() const noexcept { return extents_.data(); }

  // "(3,)", "(2, 5)"
  std::string str() const;

  friend bool operator==(const Shape& a, const Shape& b) noexcept {
    if (a.rank_ != b.rank_) return false;
    for (int d = 0; d < a.rank_; ++d)
      if (a.extents_[d] != b.extents_[d]) return false;
    return true;
  }

 private:
  void validate() const;

  std::array<long long, max_rank> extents_{};
  int rank_ = 0;
};

}  // namespace cunumpy
