// Particle migration at 1, 2 and 4 ranks, on host and emulated arrays: particles reach the
// rank that owns their cell with every column (of any type and width) intact, from any start
// (a far jump is one hop), across one or several ranks, wrapped on periodic axes; arrays grow
// when a rank receives more than it holds and keep their capacity afterwards; errors for a
// particle outside a bounded axis and for ranks with different columns, on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {

constexpr long long kPerRank = 500;
const double kLx = 3.0, kLy = 2.0;

struct Particles {
  cn::Array<double> x, y, vx;
  cn::Array<std::int64_t> id;
  cn::Array<std::int32_t> tag3;  // width 3: id * 3 + k
  cn::ParticleColumns columns;
  long long n = 0;
};

// Particle `id` of the global set: positions spread over the whole box (and beyond it, for
// the periodic wrap) by a low-discrepancy rule.
double x_of(long long id) {
  return std::fmod(0.618034 * static_cast<double>(id) * 7.1, kLx);
}
double y_of(long long id) {
  return std::fmod(0.414214 * static_cast<double>(id) * 5.3, kLy);
}

void make(Particles& p, const cn::Comm& world, cn::Backend b, long long capacity) {
  const long long first = kPerRank * world.rank();
  std::vector<double> x(capacity, 0.0), y(capacity, 0.0), vx(capacity, 0.0);
  std::vector<std::int64_t> id(capacity, -1);
  std::vector<std::int32_t> tag(3 * capacity, -1);
  for (long long i = 0; i < kPerRank; ++i) {
    const long long g = first + i;
    x[i] = x_of(g);
    y[i] = y_of(g);
    vx[i] = 0.5 * static_cast<double>(g);
    id[i] = g;
    for (int k = 0; k < 3; ++k) tag[3 * i + k] = static_cast<std::int32_t>(g * 3 + k);
  }
  p.x = cn::from_host<double>(std::span<const double>(x), {capacity}, b);
  p.y = cn::from_host<double>(std::span<const double>(y), {capacity}, b);
  p.vx = cn::from_host<double>(std::span<const double>(vx), {capacity}, b);
  p.id = cn::from_host<std::int64_t>(std::span<const std::int64_t>(id), {capacity}, b);
  p.tag3 = cn::from_host<std::int32_t>(std::span<const std::int32_t>(tag), {capacity, 3}, b);
  p.columns = cn::ParticleColumns();
  p.columns.position(p.x).position(p.y).column(p.vx).column(p.id).column(p.tag3);
  p.n = kPerRank;
}

// The ids held over all ranks (each rank's `mine`) are 0 .. total - 1, each once.
void expect_each_id_once(const cn::Comm& world, const std::vector<long long>& mine, long long total,
                         const char* when) {
  const auto counts = world.allgather(static_cast<long long>(mine.size()));
  std::vector<long long> displs(counts.size(), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<long long> all(static_cast<std::size_t>(displs.back() + counts.back()));
  world.allgatherv<long long>(mine, std::span<long long>(all), counts, displs);
  std::sort(all.begin(), all.end());
  ASSERT_EQ(static_cast<long long>(all.size()), total) << when;
  for (std::size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<long long>(i)) << when;
}

// Migrates rows [0, n): host arrays with every row a candidate (the listed leavers' path),
// device arrays by the search.
long long migrate_every_row_a_candidate(cn::ParticleMigration& m, cn::ParticleColumns& columns,
                                        long long n, cn::Backend b) {
  if (b != cn::Backend::host) return m.migrate(columns, n);
  std::vector<std::int64_t> rows(static_cast<std::size_t>(n));
  std::iota(rows.begin(), rows.end(), 0);
  return m.migrate(columns, n, std::span<const std::int64_t>(rows));
}

// Every particle on this rank is owned by it and carries its own columns; the ids over all
// ranks are each id once.
void check(const Particles& p, const cn::Comm& world, const cn::ParticleMigration& m) {
  const auto x = cn::to_host(p.x), y = cn::to_host(p.y), vx = cn::to_host(p.vx);
  const auto id = cn::to_host(p.id);
  const auto tag = cn::to_host(p.tag3);
  long long wrong = 0;
  std::vector<long long> mine;
  for (long long i = 0; i < p.n; ++i) {
    const long long g = id(i);
    mine.push_back(g);
    if (m.owner_of({x(i), y(i), 0.0}) != world.rank()) ++wrong;
    if (!(x(i) >= 0.0 && x(i) < kLx && y(i) >= 0.0 && y(i) < kLy)) ++wrong;
    if (vx(i) != 0.5 * static_cast<double>(g)) ++wrong;
    for (int k = 0; k < 3; ++k)
      if (tag(i, k) != g * 3 + k) ++wrong;
  }
  EXPECT_EQ(wrong, 0) << "rank " << world.rank();
  expect_each_id_once(world, mine, kPerRank * world.size(), "after the migration");
}

// Moves every particle by (dx, dy) on the host side of the arrays.
void shift(Particles& p, double dx, double dy) {
  auto x = cn::to_host(p.x), y = cn::to_host(p.y);
  for (long long i = 0; i < p.n; ++i) {
    x(i) += dx;
    y(i) += dy;
  }
  cn::copy(p.x, x);
  cn::copy(p.y, y);
}

}  // namespace

class MigrationMpi : public ::testing::TestWithParam<cn::Backend> {};

TEST_P(MigrationMpi, ParticlesReachTheirOwnersWithTheirColumns) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {30, 20});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  Particles p;
  make(p, world, GetParam(), 4 * kPerRank);
  // From anywhere in the box: most particles jump straight to a far owner.
  p.n = m.migrate(p.columns, p.n);
  check(p, world, m);
  // One rank over, several ranks over, and past the box's end (wrapped back in).
  for (auto [dx, dy] : {std::pair{0.11, 0.0}, {1.3, -0.7}, {-7.9, 5.05}}) {
    shift(p, dx, dy);
    p.n = m.migrate(p.columns, p.n);
    check(p, world, m);
  }
  EXPECT_EQ(m.stats().migrations, 4);
  if (world.size() > 1) {
    EXPECT_GT(m.stats().sent, 0);
  }
  const long long sent = world.allreduce(m.stats().sent, cn::Op::sum);
  const long long received = world.allreduce(m.stats().received, cn::Op::sum);
  EXPECT_EQ(sent, received);
}

TEST_P(MigrationMpi, StayersKeepTheirRowsInArraysChangedInPlace) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {30, 20});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  Particles p;
  make(p, world, GetParam(), 4 * kPerRank);
  p.n = m.migrate(p.columns, p.n);
  const long long n_before = p.n;
  const auto before = cn::to_host(p.id);
  // Handles taken before the migration (a view kept by other code, say).
  const cn::Array<double> x_handle = p.x;
  const cn::Array<std::int64_t> id_handle = p.id;
  const long long reallocations = m.stats().reallocations;
  shift(p, 0.05, 0.0);
  p.n = m.migrate(p.columns, p.n);
  check(p, world, m);
  // No array grew: the arrays are the same memory, so the old handles read the new rows.
  ASSERT_EQ(m.stats().reallocations, reallocations);
  EXPECT_TRUE(x_handle.shares_memory_with(p.x));
  EXPECT_TRUE(id_handle.shares_memory_with(p.id));
  const auto after = cn::to_host(p.id);
  std::set<std::int64_t> here;
  for (long long i = 0; i < p.n; ++i) here.insert(after(i));
  // A particle that stayed, in a row below the new count, is where it was.
  long long stayed_in_place = 0;
  for (long long i = 0; i < std::min(n_before, p.n); ++i) {
    if (here.count(before(i)) == 0) continue;  // it left: its row took an arrival or the tail
    EXPECT_EQ(after(i), before(i)) << "row " << i;
    ++stayed_in_place;
  }
  if (world.size() > 1) {
    EXPECT_GT(m.stats().sent, 0);
    EXPECT_GT(stayed_in_place, 0);
  }
}

TEST_P(MigrationMpi, ArraysGrowWhenNeededAndKeepTheirCapacity) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {30, 20});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  Particles p;
  make(p, world, GetParam(), kPerRank);  // no spare rows
  // Everyone into rank 0's corner: rank 0 must hold them all.
  {
    auto x = cn::to_host(p.x), y = cn::to_host(p.y);
    for (long long i = 0; i < p.n; ++i) {
      x(i) = 0.01 + 1e-4 * static_cast<double>(i);
      y(i) = 0.01;
    }
    cn::copy(p.x, x);
    cn::copy(p.y, y);
  }
  p.n = m.migrate(p.columns, p.n);
  EXPECT_EQ(p.n, world.rank() == 0 ? kPerRank * world.size() : 0);
  if (world.rank() == 0 && world.size() > 1) {
    EXPECT_GE(p.x.shape(0), p.n);
    EXPECT_EQ(m.stats().reallocations, 1);
  }
  check(p, world, m);
  // Back over the box: rank 0 sends; nobody grows again, capacities stay.
  const long long capacity = p.x.shape(0);
  {
    auto x = cn::to_host(p.x), y = cn::to_host(p.y);
    const auto id = cn::to_host(p.id);
    for (long long i = 0; i < p.n; ++i) {
      x(i) = x_of(id(i));
      y(i) = y_of(id(i));
    }
    cn::copy(p.x, x);
    cn::copy(p.y, y);
  }
  const long long reallocations = m.stats().reallocations;
  p.n = m.migrate(p.columns, p.n);
  check(p, world, m);
  if (world.rank() == 0) {
    EXPECT_EQ(p.x.shape(0), capacity);
  }
  if (world.rank() == 0) {
    EXPECT_EQ(m.stats().reallocations, reallocations);
  }
}

namespace {
// The rows outside the migration's stay region (what a step that moves the particles finds).
std::vector<std::int64_t> rows_outside(const Particles& p, const cn::ParticleMigration& m) {
  const cn::StayRegion r = m.stay_region();
  std::vector<std::int64_t> rows;
  for (long long i = 0; i < p.n; ++i) {
    const double x = p.x(i), y = p.y(i);
    if (!(x >= r.lower[0] && x <= r.upper[0] && y >= r.lower[1] && y <= r.upper[1]))
      rows.push_back(i);
  }
  return rows;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const cn::ValueError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST(MigrationMpiCandidates, TheRowsOutsideTheStayRegionAreAllItExamines) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {30, 20});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  Particles p;
  make(p, world, cn::Backend::host, 4 * kPerRank);
  p.n = m.migrate(p.columns, p.n);
  // The stay region is the rank's block, a millionth of a cell inside it.
  const cn::StayRegion r = m.stay_region();
  for (int a = 0; a < 2; ++a) {
    const double cell = (a == 0 ? kLx / 30 : kLy / 20);
    const long long begin = d.owned(a).begin, end = d.owned(a).end;
    EXPECT_NEAR(r.lower[a], begin * cell, 1e-5 * cell);
    EXPECT_NEAR(r.upper[a], end * cell, 1e-5 * cell);
    EXPECT_GT(r.lower[a], begin * cell);
    EXPECT_LT(r.upper[a], end * cell);
  }
  for (auto [dx, dy] : {std::pair{0.11, 0.0}, {0.02, -0.03}, {-7.9, 5.05}}) {
    shift(p, dx, dy);
    const auto rows = rows_outside(p, m);
    p.n = m.migrate(p.columns, p.n, rows);
    check(p, world, m);
  }
  // Under the checked mode, a leaver left out of the candidates is an error on every rank.
  const bool checks = cn::mpi_checks();
  cn::set_mpi_checks(true);
  shift(p, 0.5, 0.0);
  auto rows = rows_outside(p, m);
  if (world.rank() == 0 && !rows.empty()) rows.pop_back();
  const std::string missing = error_of([&] { p.n = m.migrate(p.columns, p.n, rows); });
  cn::set_mpi_checks(checks);
  if (world.size() > 1) {
    EXPECT_NE(missing.find("were not among the candidate rows"), std::string::npos) << missing;
    p.n = m.migrate(p.columns, p.n);  // nothing was moved: the full migration still works
  } else {
    EXPECT_EQ(missing, "(no error)");  // one rank: nothing leaves
  }
  check(p, world, m);
}

TEST(MigrationMpiCandidates, BadCandidatesOnOneRankAreAnErrorOnEveryRank) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {30, 20});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  Particles p;
  make(p, world, cn::Backend::host, 2 * kPerRank);
  const bool last = world.rank() == world.size() - 1;
  const std::vector<std::int64_t> decreasing{5, 3}, fine{3, 5};
  const std::string e =
      error_of([&] { (void)m.migrate(p.columns, p.n, last ? decreasing : fine); });
  EXPECT_NE(e.find("candidate rows must be increasing and in [0, " + std::to_string(kPerRank) +
                   "), got 3 at position 1 after 5"),
            std::string::npos)
      << e;
  const std::vector<std::int64_t> beyond{kPerRank};
  EXPECT_NE(error_of([&] {
              (void)m.migrate(p.columns, p.n, beyond);
            }).find("got " + std::to_string(kPerRank)),
            std::string::npos);
  Particles q;
  make(q, world, cn::Backend::emulated, kPerRank);
  EXPECT_NE(error_of([&] {
              (void)m.migrate(q.columns, q.n, fine);
            }).find("candidate rows are taken with host particle arrays, got arrays on emulated"),
            std::string::npos);
}

// Single-precision particles: float positions are wrapped, stored and decided as floats. A
// position just below 0 wraps to just below the upper edge, which rounds up to the edge in
// float: it is stored as the float below the edge, and its owner is the owner of that float.
TEST_P(MigrationMpi, FloatPositionsReachTheirOwnersAndStayInsideTheBox) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {30, 20});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  ASSERT_EQ(static_cast<double>(static_cast<float>(kLx - 1e-9)), static_cast<double>(float(kLx)))
      << "the case needs a wrapped position that rounds up to the edge";
  const long long n0 = kPerRank + 2, capacity = 4 * n0;
  std::vector<float> x(capacity, 0.0f), y(capacity, 0.0f);
  std::vector<std::int64_t> id(capacity, -1);
  const long long first = n0 * world.rank();
  for (long long i = 0; i < kPerRank; ++i) {
    x[i] = static_cast<float>(x_of(first + i));
    y[i] = static_cast<float>(y_of(first + i));
    id[i] = first + i;
  }
  x[kPerRank] = -1e-9f;  // wraps to kLx - 1e-9: float(kLx) or above
  y[kPerRank] = 1.0f;
  x[kPerRank + 1] = 1.5f;
  y[kPerRank + 1] = -1e-9f;
  id[kPerRank] = first + kPerRank;
  id[kPerRank + 1] = first + kPerRank + 1;
  const cn::Backend b = GetParam();
  auto px = cn::from_host<float>(std::span<const float>(x), {capacity}, b);
  auto py = cn::from_host<float>(std::span<const float>(y), {capacity}, b);
  auto pid = cn::from_host<std::int64_t>(std::span<const std::int64_t>(id), {capacity}, b);
  cn::ParticleColumns columns;
  columns.position(px).position(py).column(pid);
  long long n = n0;
  const auto check_all = [&](const char* when) {
    const auto hx = cn::to_host(px), hy = cn::to_host(py);
    const auto hid = cn::to_host(pid);
    long long wrong = 0;
    std::vector<long long> mine;
    for (long long i = 0; i < n; ++i) {
      const double xi = hx(i), yi = hy(i);
      if (!(xi >= 0.0 && xi < kLx && yi >= 0.0 && yi < kLy)) ++wrong;
      if (m.owner_of({xi, yi, 0.0}) != world.rank()) ++wrong;
      mine.push_back(hid(i));
    }
    EXPECT_EQ(wrong, 0) << when << ", rank " << world.rank();
    expect_each_id_once(world, mine, n0 * world.size(), when);
  };
  n = m.migrate(columns, n);
  check_all("first migration");
  // Moved on the host side, then every row a candidate (the host path's listed leavers).
  for (float dx : {0.11f, -2.9f}) {
    auto hx = cn::to_host(px);
    for (long long i = 0; i < n; ++i) hx(i) += dx;
    cn::copy(px, hx);
    n = migrate_every_row_a_candidate(m, columns, n, b);
    check_all("after a shift");
  }
  // One precision for all the axes.
  auto dy = cn::zeros<double>({capacity}, b);
  cn::ParticleColumns mixed;
  mixed.position(px);
  EXPECT_THROW(mixed.position(dy), cn::ValueError);
}

// Particles stored as a cell and an offset within it (mixed precision): int32 global cell
// indices as the positions, decided on exactly (the box [0, cells), whatever box the migration
// was given), periodic indices wrapped modulo the cells, the float offsets carried as a column.
TEST_P(MigrationMpi, CellIndexPositionsReachTheOwnersOfTheirCells) {
  const cn::Comm world = cn::Comm::world();
  const long long nx = 30, ny = 20;
  const cn::CartesianDecomposition d(world, {nx, ny});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  const long long capacity = 4 * kPerRank, first = kPerRank * world.rank();
  std::vector<std::int32_t> cx(capacity, 0), cy(capacity, 0);
  std::vector<float> ox(capacity, 0.0f);
  std::vector<std::int64_t> id(capacity, -1);
  const auto offset_of = [](long long g) { return 0.001f * static_cast<float>(g % 997); };
  for (long long i = 0; i < kPerRank; ++i) {
    const long long g = first + i;
    // Spread over the box and beyond it on both sides (one period and more: wrapped).
    cx[i] = static_cast<std::int32_t>((g * 7) % (3 * nx) - nx);
    cy[i] = static_cast<std::int32_t>((g * 13) % (3 * ny) - ny);
    ox[i] = offset_of(g);
    id[i] = g;
  }
  const cn::Backend b = GetParam();
  auto px = cn::from_host<std::int32_t>(std::span<const std::int32_t>(cx), {capacity}, b);
  auto py = cn::from_host<std::int32_t>(std::span<const std::int32_t>(cy), {capacity}, b);
  auto po = cn::from_host<float>(std::span<const float>(ox), {capacity}, b);
  auto pid = cn::from_host<std::int64_t>(std::span<const std::int64_t>(id), {capacity}, b);
  cn::ParticleColumns columns;
  columns.position(px).position(py).column(po).column(pid);
  // The expected cell of particle g after `moves` shifts by (dx, dy) cells: wrapped exactly.
  const auto wrap = [](long long c, long long n) { return ((c % n) + n) % n; };
  long long n = kPerRank, sx = 0, sy = 0;
  const auto check_all = [&](const char* when) {
    const auto hx = cn::to_host(px), hy = cn::to_host(py);
    const auto ho = cn::to_host(po);
    const auto hid = cn::to_host(pid);
    long long wrong = 0;
    std::vector<long long> mine;
    for (long long i = 0; i < n; ++i) {
      const long long g = hid(i);
      const long long ex = wrap((g * 7) % (3 * nx) - nx + sx, nx);
      const long long ey = wrap((g * 13) % (3 * ny) - ny + sy, ny);
      if (hx(i) != ex || hy(i) != ey) ++wrong;
      if (d.owner_of({hx(i), hy(i), 0}) != world.rank()) ++wrong;
      if (ho(i) != offset_of(g)) ++wrong;
      mine.push_back(g);
    }
    EXPECT_EQ(wrong, 0) << when << ", rank " << world.rank();
    expect_each_id_once(world, mine, kPerRank * world.size(), when);
  };
  n = m.migrate(columns, n);
  check_all("first migration");
  // Moved by whole cells (one of them further than the box), then migrated again: on the host,
  // with every row a candidate (the listed leavers' path).
  for (const auto& [dx, dy] : {std::pair{1, -1}, std::pair{-31, 45}}) {
    auto hx = cn::to_host(px), hy = cn::to_host(py);
    for (long long i = 0; i < n; ++i) {
      hx(i) += dx;
      hy(i) += dy;
    }
    cn::copy(px, hx);
    cn::copy(py, hy);
    sx += dx;
    sy += dy;
    n = migrate_every_row_a_candidate(m, columns, n, b);
    check_all("after a move");
  }
}

// With CUNUMPY_MPI_CHECK's checks on, candidates given as the rows outside the rank's own cells
// pass; a leaver left out of them is an error on every rank.
TEST(MigrationMpiCandidates, CellIndexCandidatesAreCheckedAgainstTheOwnedCells) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {16, 12});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  const bool checks = cn::mpi_checks();
  cn::set_mpi_checks(true);
  const long long n = 64, capacity = 4 * n;
  auto cx = cn::zeros<std::int32_t>({capacity}, cn::Backend::host);
  auto cy = cn::zeros<std::int32_t>({capacity}, cn::Backend::host);
  auto id = cn::zeros<std::int64_t>({capacity}, cn::Backend::host);
  for (long long i = 0; i < n; ++i) {
    cx(i) = static_cast<std::int32_t>((i * 5 + world.rank()) % 16);
    cy(i) = static_cast<std::int32_t>((i * 7) % 12);
    id(i) = world.rank() * n + i;
  }
  cn::ParticleColumns columns;
  columns.position(cx).position(cy).column(id);
  // The rows whose (wrapped) cell is not one of this rank's: all of them, or all but the first.
  const auto leavers = [&](long long count, bool drop_first) {
    std::vector<std::int64_t> rows;
    for (long long i = 0; i < count; ++i) {
      const long long x = (cx(i) % 16 + 16) % 16, y = (cy(i) % 12 + 12) % 12;
      if (!(d.owned(0).begin <= x && x < d.owned(0).end && d.owned(1).begin <= y &&
            y < d.owned(1).end))
        rows.push_back(i);
    }
    if (drop_first && !rows.empty()) rows.erase(rows.begin());
    return rows;
  };
  long long count = n;
  std::vector<std::int64_t> rows = leavers(count, false);
  count = m.migrate(columns, count, std::span<const std::int64_t>(rows));
  EXPECT_EQ(world.allreduce(count, cn::Op::sum), n * world.size());
  for (long long i = 0; i < count; ++i) EXPECT_EQ(d.owner_of({cx(i), cy(i), 0}), world.rank());
  // Moved by one cell along x (cell 16 wraps to 0): the last rank leaves its first leaver out of
  // its candidates, which the checks find on every rank.
  for (long long i = 0; i < count; ++i) cx(i) = static_cast<std::int32_t>(cx(i) + 1);
  const bool last = world.rank() == world.size() - 1;
  rows = leavers(count, last);
  const long long dropped =
      world.allreduce(last && !leavers(count, false).empty() ? 1LL : 0LL, cn::Op::max);
  if (dropped > 0) {
    EXPECT_THROW((void)m.migrate(columns, count, std::span<const std::int64_t>(rows)),
                 cn::ValueError);
  } else {  // one rank: nothing leaves
    EXPECT_EQ(m.migrate(columns, count, std::span<const std::int64_t>(rows)), count);
  }
  cn::set_mpi_checks(checks);
}

TEST(MigrationMpiErrors, ACellIndexOutsideABoundedAxisIsAnErrorOnEveryRank) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {30, 20}, {.periodic = {true, false, true}});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  const long long n = 8;
  auto cx = cn::zeros<std::int32_t>({n}, cn::Backend::host);
  auto cy = cn::zeros<std::int32_t>({n}, cn::Backend::host);
  for (long long i = 0; i < n; ++i) cx(i) = static_cast<std::int32_t>(3 * i - 5);  // wraps
  // Decided on cells, not on the box's length (2.0): cell 19 is the bounded y axis's last one
  // (inside), cells 20 and -1 are outside it; on the last rank only.
  cy(4) = 19;
  if (world.rank() == world.size() - 1) {
    cy(2) = 20;
    cy(5) = -1;
  }
  cn::ParticleColumns columns;
  columns.position(cx).position(cy);
  try {
    (void)m.migrate(columns, n);
    ADD_FAILURE() << "no error";
  } catch (const cn::ValueError& e) {
    const std::string what = e.what();
    for (int r = 0; r < world.size(); ++r)
      EXPECT_NE(what.find("rank " + std::to_string(r) + ": " + (r == world.size() - 1 ? "2" : "0")),
                std::string::npos)
          << what;
  }
  cn::ParticleColumns mixed;
  auto fx = cn::zeros<float>({n}, cn::Backend::host);
  mixed.position(cx);
  EXPECT_THROW(mixed.position(fx), cn::ValueError);  // one type for every axis
}

INSTANTIATE_TEST_SUITE_P(Backends, MigrationMpi,
                         ::testing::Values(cn::Backend::host, cn::Backend::emulated),
                         [](const auto& info) { return std::string(cn::to_string(info.param)); });

TEST(MigrationMpiDevice, NoTransferWhenMpiIsCudaAwareOneCopyEachWayWhenStaged) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {30, 20});
  for (bool aware : {true, false}) {
    cn::set_mpi_cuda_aware(aware);
    cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
    Particles p;
    make(p, world, cn::Backend::emulated, 4 * kPerRank);
    auto counter = cn::count_transfers();
    p.n = m.migrate(p.columns, p.n);
    counter.stop();
    const long long expected = aware || world.size() == 1 ? 0 : 2;
    EXPECT_EQ(counter.total(), expected) << counter.report();
    EXPECT_EQ(m.stats().staged_copies, expected);
    check(p, world, m);
  }
  cn::set_mpi_cuda_aware(std::nullopt);
}

TEST(MigrationMpiErrors, AParticleOutsideABoundedAxisIsAnErrorOnEveryRank) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {30, 20}, {.periodic = {true, false, true}});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  Particles p;
  make(p, world, cn::Backend::host, 2 * kPerRank);
  if (world.rank() == world.size() - 1) p.y(3) = kLy + 0.5;  // past the bounded y axis
  const long long n = p.n;
  try {
    p.n = m.migrate(p.columns, p.n);
    ADD_FAILURE() << "no error";
  } catch (const cn::ValueError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank " + std::to_string(world.size() - 1) + ": 1"), std::string::npos)
        << what;
    EXPECT_NE(what.find("nothing was moved"), std::string::npos) << what;
  }
  EXPECT_EQ(p.n, n);
  EXPECT_THROW(m.owner_of({0.5, -0.1, 0.0}), cn::ValueError);
}

TEST(MigrationMpi, APositionOneUlpBelowTheUpperEdgeIsInside) {
  // A box of 4 pi by 2 pi in 40 x 28 cells: one ulp below each upper edge, (x - lower) * cells
  // / length rounds up to `cells` (checked below), so inside must be decided on the position.
  const cn::Comm world = cn::Comm::world();
  const double lx = 4.0 * M_PI, ly = 2.0 * M_PI;
  const long long nx = 40, ny = 28;
  const double below_x = std::nextafter(lx, 0.0), below_y = std::nextafter(ly, 0.0);
  ASSERT_GE(below_x * (static_cast<double>(nx) / lx), static_cast<double>(nx));
  ASSERT_GE(below_y * (static_cast<double>(ny) / ly), static_cast<double>(ny));
  const cn::CartesianDecomposition d(world, {nx, ny}, {.periodic = {true, false, true}});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {lx, ly, 0.0});
  EXPECT_EQ(m.owner_of({below_x, below_y, 0.0}), d.owner_of({nx - 1, ny - 1}));
  EXPECT_EQ(m.owner_of({-1e-15, 0.0, 0.0}), d.owner_of({nx - 1, 0})) << "wraps below lx";
  // Every rank holds three such particles; each ends on the owner of its cell, none lost.
  auto x = cn::empty<double>({3}, cn::Backend::host), y = cn::empty<double>({3}, cn::Backend::host);
  auto id = cn::empty<std::int64_t>({3}, cn::Backend::host);
  const double xs[] = {below_x, -1e-15, 1.0}, ys[] = {below_y, 1.0, below_y};
  for (int k = 0; k < 3; ++k) {
    x(k) = xs[k];
    y(k) = ys[k];
    id(k) = 3 * world.rank() + k;
  }
  cn::ParticleColumns columns;
  columns.position(x).position(y).column(id);
  long long n = 0;
  ASSERT_NO_THROW(n = m.migrate(columns, 3));
  long long misplaced = 0;
  for (long long i = 0; i < n; ++i)
    if (m.owner_of({x(i), y(i), 0.0}) != world.rank() || !(x(i) >= 0.0 && x(i) < lx)) ++misplaced;
  EXPECT_EQ(misplaced, 0);
  EXPECT_EQ(world.allreduce(n, cn::Op::sum), 3LL * world.size());
  // The edge itself is outside a bounded axis, said with all its digits.
  try {
    (void)m.owner_of({0.5, ly, 0.0});
    ADD_FAILURE() << "no error";
  } catch (const cn::ValueError& e) {
    char edge[32];
    std::snprintf(edge, sizeof edge, "%.17g", ly);
    const std::string what = e.what();
    EXPECT_NE(what.find(std::string("position ") + edge + " along bounded axis 1"),
              std::string::npos)
        << what;
  }
}

TEST(MigrationMpiErrors, AParticleAtANaNOrInfinitePositionIsAnErrorOnEveryRank) {
  // On a periodic axis too: the wrap of a NaN or an infinity is no position.
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {30, 20}, {.periodic = {true, true, true}});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  for (const double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    Particles p;
    make(p, world, cn::Backend::host, 2 * kPerRank);
    if (world.rank() == 0) p.x(5) = bad;
    const long long n = p.n;
    try {
      p.n = m.migrate(p.columns, p.n);
      ADD_FAILURE() << "no error for " << bad << " on rank " << world.rank();
    } catch (const cn::ValueError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("NaN positions"), std::string::npos) << what;
      EXPECT_NE(what.find("rank 0: 1"), std::string::npos) << what;
      EXPECT_NE(what.find("nothing was moved"), std::string::npos) << what;
    }
    EXPECT_EQ(p.n, n) << "nothing dropped";
  }
}

TEST(MigrationMpiErrors, ALocalArgumentErrorOnOneRankIsAnErrorOnEveryRank) {
  // The last rank passes a column with fewer rows than the others: every rank raises its
  // message (it used to throw alone while the others waited in the exchange).
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {30, 20}, {.periodic = {true, true, true}});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  Particles p;
  make(p, world, cn::Backend::host, 2 * kPerRank);
  const bool last = world.rank() == world.size() - 1;
  auto short_column = cn::zeros<double>({kPerRank / 2}, cn::Backend::host);
  cn::ParticleColumns columns;
  columns.position(p.x).position(p.y).column(last ? short_column : p.vx);
  std::string what = "(no exception)";
  try {
    (void)m.migrate(columns, p.n);
  } catch (const cn::ValueError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("every particle array needs the same number of rows"), std::string::npos)
      << what;
  if (world.size() > 1) {
    EXPECT_NE(what.find("rank " + std::to_string(world.size() - 1)), std::string::npos) << what;
  }
}

TEST(MigrationMpiErrors, RanksWithDifferentColumnsAreAnErrorOnEveryRank) {
  const cn::Comm world = cn::Comm::world();
  if (world.size() < 2) GTEST_SKIP() << "needs two ranks";
  const cn::CartesianDecomposition d(world, {30, 20});
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  Particles p;
  make(p, world, cn::Backend::host, 2 * kPerRank);
  auto extra = cn::zeros<float>({2 * kPerRank});
  if (world.rank() == 0) p.columns.column(extra);
  EXPECT_THROW(p.n = m.migrate(p.columns, p.n), cn::ValueError);
}

TEST(MigrationErrors, BadArguments) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {30, 20});
  EXPECT_THROW(cn::ParticleMigration(world, d, {0.0, 0.0, 0.0}, {kLx, 0.0, 0.0}), cn::ValueError);
  cn::ParticleMigration m(world, d, {0.0, 0.0, 0.0}, {kLx, kLy, 0.0});
  cn::Array<double> x = cn::zeros<double>({10}), vx = cn::zeros<double>({10});
  cn::ParticleColumns one;
  one.position(x).column(vx);
  EXPECT_THROW(m.migrate(one, 10), cn::ValueError);  // two position arrays needed
  cn::ParticleColumns order;
  order.column(vx);
  EXPECT_THROW(order.position(x), cn::ValueError);  // positions come first
}
