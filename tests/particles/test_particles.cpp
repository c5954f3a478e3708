// ParticleSet (cunumpy/particles.hpp) on host and emulated arrays: the columns a layout gives,
// named columns and their errors, the fixed column order, growth that keeps the particles, and a
// permutation that moves every column's rows together (the spare rows untouched in number).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {

template <typename T>
std::vector<T> rows(const cn::Array<T>& a, long long n) {
  const auto h = cn::to_host(a.leading(n));
  return {h.host_span().begin(), h.host_span().end()};
}

template <typename T>
void fill(cn::Array<T>& a, long long n, T (*f)(long long)) {
  std::vector<T> v(static_cast<std::size_t>(a.shape(0)), T(0));
  for (long long i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = f(i);
  cn::copy(a, cn::from_host<T>(std::span<const T>(v), {a.shape(0)}, cn::Backend::host));
}

float fx(long long i) {
  return 0.25f * static_cast<float>(i);
}
float fy(long long i) {
  return 1.0f + 0.5f * static_cast<float>(i);
}
float fv(long long i) {
  return -2.0f * static_cast<float>(i);
}
std::int64_t fid(long long i) {
  return 1000 + i;
}
std::int32_t fcell(long long i) {
  return static_cast<std::int32_t>(7 * i);
}
double fw(long long i) {
  return 0.125 * static_cast<double>(i * i);
}

}  // namespace

class ParticleSetTest : public ::testing::TestWithParam<cn::Backend> {};

TEST_P(ParticleSetTest, ALayoutGivesItsColumnsInAFixedOrder) {
  cn::ParticleSet<float> p({.dim = 2, .cells = true}, 10, GetParam());
  EXPECT_EQ(p.capacity(), 10);
  EXPECT_EQ(p.backend(), GetParam());
  EXPECT_EQ(p.z.size(), 0);
  EXPECT_EQ(p.vz.size(), 0);
  EXPECT_EQ(p.cy.size(), 10);
  p.add_column<double>("weight");
  p.add_column<std::int32_t>("species");
  std::vector<std::string> names;
  p.for_each_column([&](const std::string& name, cn::AnyParticleColumn) { names.push_back(name); });
  EXPECT_EQ(names, (std::vector<std::string>{"x", "y", "cx", "cy", "vx", "vy", "id", "species",
                                             "weight"}));
  EXPECT_EQ(cn::ParticleSet<float>::bytes_per_particle({.dim = 2, .cells = true}),
            2 * 2 * 4 + 8 + 2 * 4);
  cn::ParticleSet<double> q({.dim = 3, .ids = false}, 4, GetParam());
  names.clear();
  q.for_each_column([&](const std::string& name, cn::AnyParticleColumn) { names.push_back(name); });
  EXPECT_EQ(names, (std::vector<std::string>{"x", "y", "z", "vx", "vy", "vz"}));
}

TEST_P(ParticleSetTest, NamedColumnsAndTheirErrors) {
  cn::ParticleSet<double> p({.dim = 1}, 5, GetParam());
  auto& w = p.add_column<double>("weight");
  EXPECT_EQ(w.shape(0), 5);
  EXPECT_EQ(w.backend(), GetParam());
  EXPECT_EQ(rows(w, 5), std::vector<double>(5, 0.0));  // zeros
  EXPECT_TRUE(p.has_column("weight"));
  EXPECT_EQ(&p.column<double>("weight"), &w);
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const cn::ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { p.add_column<float>("weight"); }).find("taken: 'weight'"),
            std::string::npos);
  EXPECT_NE(message([&] { p.add_column<float>("vx"); }).find("taken: 'vx'"), std::string::npos);
  const std::string missing = message([&] { p.column<double>("charge"); });
  EXPECT_NE(missing.find("no such column: 'charge'"), std::string::npos) << missing;
  EXPECT_NE(missing.find("x, vx, id, weight"), std::string::npos) << missing;
  EXPECT_NE(message([&] { p.column<float>("weight"); }).find("not of element type float32"),
            std::string::npos);
  EXPECT_NE(message([] {
              cn::ParticleSet<double>({.dim = 4}, 1, cn::Backend::host);
            }).find("dim must be 1, 2 or 3, got 4"),
            std::string::npos);
  p.remove_column("weight");
  EXPECT_FALSE(p.has_column("weight"));
  EXPECT_NE(message([&] { p.remove_column("weight"); }).find("no such column"), std::string::npos);
}

TEST_P(ParticleSetTest, ReserveKeepsTheParticlesInEveryColumn) {
  cn::ParticleSet<float> p({.dim = 2, .cells = true}, 6, GetParam());
  p.n = 4;
  fill(p.x, p.n, fx);
  fill(p.cy, p.n, fcell);
  fill(p.id, p.n, fid);
  auto& w = p.add_column<double>("weight");
  fill(w, p.n, fw);
  p.reserve(3);  // large enough: nothing changes
  EXPECT_EQ(p.capacity(), 6);
  p.reserve(50);
  EXPECT_EQ(p.capacity(), 50);
  p.for_each_column([&](const std::string& name, cn::AnyParticleColumn c) {
    std::visit([&](auto* a) { EXPECT_EQ(a->shape(0), 50) << name; }, c);
  });
  EXPECT_EQ(rows(p.x, 4), (std::vector<float>{fx(0), fx(1), fx(2), fx(3)}));
  EXPECT_EQ(rows(p.cy, 4), (std::vector<std::int32_t>{fcell(0), fcell(1), fcell(2), fcell(3)}));
  EXPECT_EQ(rows(p.id, 4), (std::vector<std::int64_t>{fid(0), fid(1), fid(2), fid(3)}));
  EXPECT_EQ(rows(p.column<double>("weight"), 4), (std::vector<double>{fw(0), fw(1), fw(2), fw(3)}));
}

TEST_P(ParticleSetTest, PermuteMovesEveryColumnsRowsTogether) {
  const long long n = 1000;
  cn::ParticleSet<float> p({.dim = 2, .cells = true}, n + 24, GetParam());
  p.n = n;
  fill(p.x, n, fx);
  fill(p.y, n, fy);
  fill(p.vx, n, fv);
  fill(p.vy, n, fx);
  fill(p.cx, n, fcell);
  fill(p.cy, n, fcell);
  fill(p.id, n, fid);
  fill(p.add_column<double>("weight"), n, fw);
  fill(p.add_column<std::int32_t>("species"), n, fcell);
  std::vector<std::int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::reverse(order.begin(), order.end());
  std::rotate(order.begin(), order.begin() + 17, order.end());
  p.permute(cn::from_host<std::int64_t>(std::span<const std::int64_t>(order), {n}, GetParam()));
  EXPECT_EQ(p.capacity(), n + 24);
  const auto x = rows(p.x, n), y = rows(p.y, n), vx = rows(p.vx, n);
  const auto cx = rows(p.cx, n);
  const auto id = rows(p.id, n);
  const auto w = rows(p.column<double>("weight"), n);
  const auto s = rows(p.column<std::int32_t>("species"), n);
  for (long long i = 0; i < n; ++i) {
    const long long from = order[static_cast<std::size_t>(i)];
    const auto k = static_cast<std::size_t>(i);
    ASSERT_EQ(x[k], fx(from)) << i;
    ASSERT_EQ(y[k], fy(from)) << i;
    ASSERT_EQ(vx[k], fv(from)) << i;
    ASSERT_EQ(cx[k], fcell(from)) << i;
    ASSERT_EQ(id[k], fid(from)) << i;
    ASSERT_EQ(w[k], fw(from)) << i;
    ASSERT_EQ(s[k], fcell(from)) << i;
  }
  const auto short_order = cn::zeros<std::int64_t>({n - 1}, GetParam());
  EXPECT_THROW(p.permute(short_order), cn::ValueError);
  if (GetParam() != cn::Backend::host) {
    EXPECT_THROW(p.permute(cn::zeros<std::int64_t>({n}, cn::Backend::host)), cn::ValueError);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ParticleSetTest,
                         ::testing::Values(cn::Backend::host, cn::Backend::emulated),
                         [](const auto& info) { return std::string(cn::to_string(info.param)); });
