// ParticleSet's migration at 1, 2 and 4 ranks, on host and emulated arrays: every column of the
// set (the built-in ones and the application's named ones) reaches the rank that owns the
// particle's cell, whole coordinates and cells with offsets (mixed precision) alike.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {

constexpr long long kPerRank = 400;
constexpr long long kCells[2] = {24, 16};
const double kL[2] = {3.0, 2.0};

double coordinate(long long id, int axis) {
  const double a = axis == 0 ? 0.618034 * 7.1 : 0.414214 * 5.3;
  return std::fmod(a * static_cast<double>(id), kL[axis]);
}

template <typename T>
std::vector<T> rows(const cn::Array<T>& a, long long n) {
  const auto h = cn::to_host(a.leading(n));
  return {h.host_span().begin(), h.host_span().end()};
}

template <typename T>
void put(cn::Array<T>& a, const std::vector<T>& v) {
  std::vector<T> all(static_cast<std::size_t>(a.shape(0)), T(0));
  std::copy(v.begin(), v.end(), all.begin());
  cn::copy(a, cn::from_host<T>(std::span<const T>(all), {a.shape(0)}, cn::Backend::host));
}

// This rank's share of the ids, anywhere in the box: most are another rank's.
cn::ParticleSet<float> make(const cn::Comm& world, cn::Backend b, bool cells) {
  cn::ParticleSet<float> p({.dim = 2, .cells = cells}, 2 * kPerRank, b);
  std::vector<float> x, y, vx, vy;
  std::vector<std::int32_t> cx, cy, species;
  std::vector<std::int64_t> id;
  std::vector<double> weight;
  for (long long i = 0; i < kPerRank; ++i) {
    const long long g = kPerRank * world.rank() + i;
    const double px = coordinate(g, 0), py = coordinate(g, 1);
    if (cells) {  // the cell and the offset within it, in cell units
      const double sx = px / kL[0] * kCells[0], sy = py / kL[1] * kCells[1];
      cx.push_back(static_cast<std::int32_t>(std::floor(sx)));
      cy.push_back(static_cast<std::int32_t>(std::floor(sy)));
      x.push_back(static_cast<float>(sx - std::floor(sx)));
      y.push_back(static_cast<float>(sy - std::floor(sy)));
    } else {
      x.push_back(static_cast<float>(px));
      y.push_back(static_cast<float>(py));
    }
    vx.push_back(static_cast<float>(g));
    vy.push_back(-static_cast<float>(g));
    id.push_back(g);
    weight.push_back(0.5 * static_cast<double>(g));
    species.push_back(static_cast<std::int32_t>(g % 3));
  }
  put(p.x, x);
  put(p.y, y);
  put(p.vx, vx);
  put(p.vy, vy);
  put(p.id, id);
  if (cells) {
    put(p.cx, cx);
    put(p.cy, cy);
  }
  put(p.add_column<double>("weight"), weight);
  put(p.add_column<std::int32_t>("species"), species);
  p.n = kPerRank;
  return p;
}

}  // namespace

class ParticleSetMpi : public ::testing::TestWithParam<std::tuple<cn::Backend, bool>> {};

TEST_P(ParticleSetMpi, EveryColumnReachesTheOwner) {
  const auto [backend, cells] = GetParam();
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {kCells[0], kCells[1]});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kL[0], kL[1], 0.0});
  cn::ParticleSet<float> p = make(world, backend, cells);
  cn::migrate(m, p);
  EXPECT_EQ(world.allreduce(p.n, cn::Op::sum), kPerRank * world.size());
  const auto id = rows(p.id, p.n);
  const auto x = rows(p.x, p.n), y = rows(p.y, p.n), vx = rows(p.vx, p.n), vy = rows(p.vy, p.n);
  const auto cx = cells ? rows(p.cx, p.n) : std::vector<std::int32_t>();
  const auto cy = cells ? rows(p.cy, p.n) : std::vector<std::int32_t>();
  const auto weight = rows(p.column<double>("weight"), p.n);
  const auto species = rows(p.column<std::int32_t>("species"), p.n);
  for (long long i = 0; i < p.n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const long long g = id[k];
    ASSERT_EQ(vx[k], static_cast<float>(g));
    ASSERT_EQ(vy[k], -static_cast<float>(g));
    ASSERT_EQ(weight[k], 0.5 * static_cast<double>(g));
    ASSERT_EQ(species[k], static_cast<std::int32_t>(g % 3));
    // Owned here, by its cell or its coordinates; the coordinates kept bit for bit.
    if (cells) {
      ASSERT_EQ(d.owner_of({cx[k], cy[k], 0}), world.rank()) << g;
    } else {
      ASSERT_EQ(m.owner_of({x[k], y[k], 0.0}), world.rank()) << g;
      ASSERT_EQ(x[k], static_cast<float>(coordinate(g, 0))) << g;
    }
  }
  EXPECT_EQ(world.allreduce(m.stats().sent, cn::Op::sum),
            world.allreduce(m.stats().received, cn::Op::sum));
  // The candidates form (host arrays): none left, nothing moves.
  if (backend == cn::Backend::host) {
    const long long before = p.n;
    EXPECT_EQ(cn::migrate(m, p, std::span<const std::int64_t>()), before);
    EXPECT_EQ(p.n, before);
  }
}

INSTANTIATE_TEST_SUITE_P(BackendsAndPositions, ParticleSetMpi,
                         ::testing::Combine(::testing::Values(cn::Backend::host,
                                                              cn::Backend::emulated),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(cn::to_string(std::get<0>(info.param))) +
                                  (std::get<1>(info.param) ? "_cells" : "_coordinates");
                         });
