// A ParticleSet as openPMD particle records at 1, 2 and 4 ranks, on host and emulated arrays:
// every column (positions, cells, velocities, ids, the application's named columns, the
// weighting) written by every rank and read back with the same bits, by the same rows or by
// another split of them, in the set's precision or the other; and the errors a user meets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/particle_io.hpp>

namespace cn = cunumpy;

namespace {

constexpr long long kPerRank = 300;

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

// Values that are functions of the global id g (rank r's share: g = kPerRank r + i, fewer on
// the last rank to make the counts unequal).
long long count_of(int rank, int ranks) {
  return rank == ranks - 1 ? kPerRank - 7 : kPerRank;
}
long long first_of(int rank) {
  return kPerRank * rank;
}
double value(long long g, int column) {
  return std::sin(0.37 * static_cast<double>(g) + column) * (1.0 + column);
}

template <typename Real>
cn::ParticleSet<Real> make(const cn::Comm& world, cn::Backend b, int dim, bool cells) {
  const long long n = count_of(world.rank(), world.size());
  cn::ParticleSet<Real> p({.dim = dim, .cells = cells}, n + 5, b);
  cn::Array<Real>* xs[] = {&p.x, &p.y, &p.z, &p.vx, &p.vy, &p.vz};
  cn::Array<std::int32_t>* cs[] = {&p.cx, &p.cy, &p.cz};
  std::vector<std::int64_t> id;
  std::vector<double> w;
  std::vector<std::int32_t> tag;
  std::vector<float> charge;
  for (long long i = 0; i < n; ++i) {
    const long long g = first_of(world.rank()) + i;
    id.push_back(1000 + g);
    w.push_back(1.0 + value(g, 9));
    tag.push_back(static_cast<std::int32_t>(g % 5 - 2));
    charge.push_back(static_cast<float>(value(g, 10)));
  }
  for (int a = 0; a < dim; ++a) {
    for (int k : {a, a + 3}) {
      std::vector<Real> v;
      for (long long i = 0; i < n; ++i)
        v.push_back(static_cast<Real>(cells && k < 3
                                          ? std::abs(value(first_of(world.rank()) + i, k)) * 0.999
                                          : value(first_of(world.rank()) + i, k)));
      put(*xs[k], v);
    }
    if (cells) {
      std::vector<std::int32_t> c;
      for (long long i = 0; i < n; ++i)
        c.push_back(static_cast<std::int32_t>((first_of(world.rank()) + i) % (7 + a)));
      put(*cs[a], c);
    }
  }
  put(p.id, id);
  put(p.template add_column<double>("w"), w);
  put(p.template add_column<std::int32_t>("tag"), tag);
  put(p.template add_column<float>("charge_fraction"), charge);
  put(p.template add_column<std::int64_t>("birth"), id);
  p.n = n;
  return p;
}

// Every column of b equals a's rows [from, from + b.n), bit for bit (after a conversion to the
// set's precision).
template <typename RealA, typename RealB>
void expect_rows(cn::ParticleSet<RealA>& a, long long from, cn::ParticleSet<RealB>& b) {
  ASSERT_EQ(a.dim, b.dim);
  ASSERT_EQ(a.cells, b.cells);
  const cn::Array<RealA>* xa[] = {&a.x, &a.y, &a.z, &a.vx, &a.vy, &a.vz};
  const cn::Array<RealB>* xb[] = {&b.x, &b.y, &b.z, &b.vx, &b.vy, &b.vz};
  for (int k = 0; k < 6; ++k) {
    if (k % 3 >= a.dim) continue;
    const auto va = rows(*xa[k], from + b.n), vb = rows(*xb[k], b.n);
    for (long long i = 0; i < b.n; ++i)
      ASSERT_EQ(vb[i], static_cast<RealB>(va[from + i])) << "column " << k << " row " << i;
  }
  auto same = [&]<typename T>(const cn::Array<T>& ca, const cn::Array<T>& cb, const char* what) {
    const auto va = rows(ca, from + b.n), vb = rows(cb, b.n);
    for (long long i = 0; i < b.n; ++i) ASSERT_EQ(vb[i], va[from + i]) << what << " row " << i;
  };
  if (a.cells) {
    same(a.cx, b.cx, "cx");
    if (a.dim >= 2) same(a.cy, b.cy, "cy");
    if (a.dim == 3) same(a.cz, b.cz, "cz");
  }
  same(a.id, b.id, "id");
  same(a.template column<double>("w"), b.template column<double>("w"), "w");
  same(a.template column<std::int32_t>("tag"), b.template column<std::int32_t>("tag"), "tag");
  same(a.template column<float>("charge_fraction"), b.template column<float>("charge_fraction"),
       "charge_fraction");
  same(a.template column<std::int64_t>("birth"), b.template column<std::int64_t>("birth"), "birth");
}

std::string folder_for(const cn::Comm& world, const std::string& name) {
  const std::string f = "particle_io_" + name + "_np" + std::to_string(world.size());
  if (world.rank() == 0) std::filesystem::remove_all(f);
  world.barrier();
  return f;
}

}  // namespace

class ParticleIo : public ::testing::TestWithParam<std::tuple<cn::Backend, int, bool>> {};

TEST_P(ParticleIo, EveryColumnComesBackWithItsBits) {
  const auto [backend, dim, cells] = GetParam();
  const cn::Comm world = cn::Comm::world();
  const std::string name =
      std::string(cn::to_string(backend)) + std::to_string(dim) + (cells ? "c" : "x");
  cn::ParticleSet<float> p = make<float>(world, backend, dim, cells);
  std::vector<double> sizes{0.5, 0.25, 0.125};
  sizes.resize(static_cast<std::size_t>(dim));
  cn::OpenPmdSeries series(folder_for(world, name), world);
  auto it = series.iteration(4, 0.4, 0.1);
  cn::write_particles(it, "tracers", p,
                      {.charge = 2.0,
                       .mass = 4.0,
                       .weighting = "w",
                       .cell_size = cells ? sizes : std::vector<double>{}});
  it.close();

  const cn::OpenPmdParticleReader r(it.path(), "tracers", world);
  EXPECT_EQ(r.step(), 4);
  EXPECT_EQ(r.count(), world.allreduce(p.n, cn::Op::sum));
  EXPECT_EQ(r.in_cells(), cells);
  EXPECT_EQ(r.axes().size(), static_cast<std::size_t>(dim));
  EXPECT_EQ(r.constant("charge"), 2.0);
  EXPECT_EQ(r.constant("mass"), 4.0);
  EXPECT_EQ(r.dtype("position/x"), cn::DType::float32);
  EXPECT_EQ(r.dtype("tag"), cn::DType::int32);
  EXPECT_EQ(r.dtype("id"), cn::DType::uint64);
  EXPECT_TRUE(r.has("weighting"));
  EXPECT_FALSE(r.has("w"));
  if (cells) {
    EXPECT_EQ(r.cell_size(), sizes);
  }

  // The same rows (this rank's block), with spare rows, on the same backend: the same bits.
  const long long first = first_of(world.rank());
  cn::ParticleSet<float> back = cn::read_particles<float>(r, first, p.n, backend, p.n + 3);
  EXPECT_EQ(back.capacity(), p.n + 3);
  EXPECT_EQ(back.backend(), backend);
  EXPECT_TRUE(back.has_column("w"));  // the weighting keeps its column's name
  expect_rows(p, 0, back);

  // Another split: this rank reads the next rank's rows (the last reads rank 0's), in double.
  const int next = (world.rank() + 1) % world.size();
  const long long n_next = count_of(next, world.size());
  cn::ParticleSet<double> wide =
      cn::read_particles<double>(r, first_of(next), n_next, cn::Backend::host);
  EXPECT_EQ(wide.n, n_next);
  const auto ids = rows(wide.id, wide.n);
  const auto tags = rows(wide.column<std::int32_t>("tag"), wide.n);
  const auto vx = rows(wide.vx, wide.n);
  for (long long i = 0; i < wide.n; ++i) {
    const long long g = first_of(next) + i;
    ASSERT_EQ(ids[i], 1000 + g);
    ASSERT_EQ(tags[i], static_cast<std::int32_t>(g % 5 - 2));
    ASSERT_EQ(vx[i], static_cast<double>(static_cast<float>(value(g, 3))));
  }
}

TEST(ParticleIoErrors, SayWhatIsWrongAndHowToMendIt) {
  const cn::Comm world = cn::Comm::world();
  cn::ParticleSet<double> p = make<double>(world, cn::Backend::host, 2, false);
  cn::OpenPmdSeries series(folder_for(world, "errors"), world);
  auto it = series.iteration(0, 0.0, 0.1);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  EXPECT_NE(message([&] {
              cn::write_particles(it, "s", p, {.weighting = "missing"});
            }).find("the set's columns are"),
            std::string::npos);
  cn::ParticleSet<double> c = make<double>(world, cn::Backend::host, 2, true);
  EXPECT_NE(message([&] { cn::write_particles(it, "s", c); }).find("cell_size"), std::string::npos);
  p.add_column<double>("momentum");
  EXPECT_NE(message([&] { cn::write_particles(it, "s", p); }).find("taken by openPMD"),
            std::string::npos);
  p.remove_column("momentum");
  cn::write_particles(it, "electrons", p);
  it.close();
  EXPECT_NE(message([&] {
              cn::OpenPmdParticleReader(it.path(), "ions", world);
            }).find("has no particle species 'ions' (it has electrons)"),
            std::string::npos);
  const cn::OpenPmdParticleReader r(it.path(), "electrons", world);
  EXPECT_NE(message([&] {
              (void)cn::read_particles<double>(r, r.count() - 1, 2, cn::Backend::host);
            }).find("which holds"),
            std::string::npos);
  EXPECT_NE(message([&] {
              (void)cn::read_particles<double>(r, 0, 4, cn::Backend::host, 2);
            }).find("at least n"),
            std::string::npos);
  EXPECT_EQ(r.constant("weighting"), 1.0);
}

INSTANTIATE_TEST_SUITE_P(BackendsDimensionsAndPositions, ParticleIo,
                         ::testing::Combine(::testing::Values(cn::Backend::host,
                                                              cn::Backend::emulated),
                                            ::testing::Values(1, 2, 3), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(cn::to_string(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "d" +
                                  (std::get<2>(info.param) ? "_cells" : "_coordinates");
                         });
