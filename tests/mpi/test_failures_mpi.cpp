// A failure on one rank is an error on every rank, not a hang (at 1, 2 and 4 ranks): the
// agreement of all_ranks, an openPMD write whose block is wrong on the last rank only, an
// application's own write failing on one rank, a restart path that is a folder, and a
// migration whose allocation fails on one rank.  A hang shows as the test's timeout.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <cunumpy/agree.hpp>
#include <cunumpy/cunumpy.hpp>

#if CUNUMPY_HAS_HDF5()
#include <cunumpy/hdf5.hpp>
#include <cunumpy/openpmd.hpp>
#endif

namespace cn = cunumpy;

namespace {
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

// A folder every rank sees, fresh for each test.
std::string shared_folder(const cn::Comm& world, const std::string& name) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("cunumpy_failures_" + name + "_" + std::to_string(world.size())))
                              .string();
  if (world.rank() == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  world.barrier();
  return dir;
}
}  // namespace

TEST(AllRanks, AFailureOnOneRankIsTheSameErrorOnEvery) {
  const cn::Comm world = cn::Comm::world();
  const int last = world.size() - 1;
  const std::string m = message_of([&] {
    cn::all_ranks<cn::ValueError>(world, [&] {
      if (world.rank() == last) throw cn::ValueError("the disk of this node is full");
    });
  });
  const std::string expected = world.size() == 1 ? "the disk of this node is full"
                                                 : "on rank " + std::to_string(last) + " of " +
                                                       std::to_string(world.size()) +
                                                       ": the disk of this node is full";
  EXPECT_EQ(m, expected);
  // Several ranks failing: the lowest one's message, and how many more.
  const std::string several = message_of([&] {
    cn::all_ranks(world, [&] {
      if (world.rank() > 0 || world.size() == 1)
        throw cn::Error("rank " + std::to_string(world.rank()) + " failed");
    });
  });
  if (world.size() > 2) {
    EXPECT_EQ(several, "on rank 1 of " + std::to_string(world.size()) + ": rank 1 failed (and " +
                           std::to_string(world.size() - 2) + " more rank(s) failed)");
  }
  EXPECT_NO_THROW(cn::all_ranks(world, [] {})) << "success on every rank goes on";
  // Nested: an agreed failure of an inner call passes through the outer one unchanged.
  const std::string nested = message_of([&] {
    cn::all_ranks(world, [&] {
      cn::all_ranks<cn::ValueError>(world, [&] {
        if (world.rank() == 0) throw cn::ValueError("inner");
      });
    });
  });
  EXPECT_EQ(nested, world.size() == 1 ? "inner"
                                      : "on rank 0 of " + std::to_string(world.size()) + ": inner");
}

#if CUNUMPY_HAS_HDF5()
TEST(OpenPmdFailures, AWrongBlockOnTheLastRankFailsEveryRankAndTheSeriesGoesOn) {
  const cn::Comm world = cn::Comm::world();
  const std::string dir = shared_folder(world, "mesh");
  cn::OpenPmdSeries series(dir, world, {.name = "data", .overwrite = true});
  const long long n = 8;
  const cn::MeshLayout layout{.global = {n * world.size()},
                              .offset = {n * world.rank()},
                              .count = {n},
                              .spacing = {1.0},
                              .grid_offset = {0.0},
                              .axis_labels = {"x"}};
  const bool wrong = world.rank() == world.size() - 1;
  auto rho = cn::ones<double>({wrong ? n - 1 : n}, cn::Backend::host);
  {
    auto it = series.iteration(0, 0.0, 0.1);
    const std::string m = message_of([&] { it.mesh("rho", {}, layout, {&rho}, {}); });
    EXPECT_NE(m.find("each component's block must hold 8 values"), std::string::npos) << m;
    if (world.size() > 1) {
      EXPECT_NE(m.find("on rank " + std::to_string(world.size() - 1)), std::string::npos) << m;
    }
  }  // dropped after the failure: no file under the final name
  world.barrier();
  EXPECT_FALSE(std::filesystem::exists(series.file_of(0)));
  // The next iteration is written as usual.
  auto good = cn::ones<double>({n}, cn::Backend::host);
  auto it = series.iteration(1, 0.1, 0.1);
  it.mesh("rho", {}, layout, {&good}, {});
  it.close();
  EXPECT_TRUE(std::filesystem::exists(series.file_of(1)));
}

TEST(OpenPmdFailures, CellsAndOffsetsNeedBothOnEveryAxisWithPositiveCellSizes) {
  const cn::Comm world = cn::Comm::world();
  const std::string dir = shared_folder(world, "cells");
  cn::OpenPmdSeries series(dir, world, {.name = "data", .overwrite = true});
  const long long n = 4;
  auto offsets = cn::zeros<float>({n}, cn::Backend::host);
  auto cells = cn::zeros<std::int32_t>({n}, cn::Backend::host);
  auto short_cells = cn::zeros<std::int32_t>({n - 1}, cn::Backend::host);
  auto p = cn::zeros<double>({n}, cn::Backend::host);
  const auto records = [&](std::vector<const cn::Array<std::int32_t>*> c, std::vector<double> h) {
    cn::ParticleRecords r;
    r.axes = {"x", "y"};
    r.position = {&offsets, &offsets};
    r.momentum = {&p, &p};
    r.position_offset = std::move(c);
    r.cell_size = std::move(h);
    r.count = n;
    return r;
  };
  const std::string one_axis = message_of([&] {
    auto it = series.iteration(0, 0.0, 0.1);
    it.particles("e", records({&cells}, {0.5, 0.5}));
  });
  EXPECT_NE(one_axis.find("one entry per axis (2), got 1 and 2"), std::string::npos) << one_axis;
  const std::string size = message_of([&] {
    auto it = series.iteration(1, 0.1, 0.1);
    it.particles("e", records({&cells, &cells}, {0.5, 0.0}));
  });
  EXPECT_NE(size.find("cell_size along y must be positive and finite"), std::string::npos) << size;
  const std::string rows = message_of([&] {
    auto it = series.iteration(2, 0.2, 0.1);
    it.particles("e", records({&cells, &short_cells}, {0.5, 0.5}));
  });
  EXPECT_NE(rows.find("position_offset must be a 1D array of at least 4 rows"), std::string::npos)
      << rows;
  const std::string alone = message_of([&] {
    auto it = series.iteration(3, 0.3, 0.1);
    it.particles("e", records({}, {0.5, 0.5}));
  });
  EXPECT_NE(alone.find("cell_size is given without position_offset"), std::string::npos) << alone;
  if (world.size() > 1) {  // ranks that would write other records: agreed, not a hang
    const std::string some = message_of([&] {
      auto it = series.iteration(4, 0.4, 0.1);
      it.particles("e",
                   world.rank() == 0 ? records({&cells, &cells}, {0.5, 0.25}) : records({}, {}));
    });
    EXPECT_NE(some.find("the ranks disagree on positions as cells"), std::string::npos) << some;
    const std::string sizes = message_of([&] {
      auto it = series.iteration(5, 0.5, 0.1);
      it.particles("e", records({&cells, &cells}, {0.5, world.rank() == 0 ? 0.25 : 0.5}));
    });
    EXPECT_NE(sizes.find("the same cell_size"), std::string::npos) << sizes;
  }
  // Given whole, the iteration is written.
  auto it = series.iteration(6, 0.6, 0.1);
  it.particles("e", records({&cells, &cells}, {0.5, 0.25}));
  it.close();
  EXPECT_TRUE(std::filesystem::exists(series.file_of(6)));
}

TEST(OpenPmdFailures, AnApplicationsWriteFailingOnOneRankFailsEveryRank) {
  const cn::Comm world = cn::Comm::world();
  const std::string dir = shared_folder(world, "extension");
  cn::OpenPmdSeries series(dir, world, {.name = "data", .overwrite = true});
  auto it = series.iteration(0, 0.0, 0.1);
  const std::string m = message_of([&] {
    it.extension("app", [&](const cn::h5::File& f, const cn::h5::Group& g) {
      if (world.rank() == 0) throw cn::IoError("cannot write the application's table");
      const long long one[] = {1};
      const double v = 1.0;
      // The others are in a collective write meanwhile: it learns of rank 0's failure.
      cn::h5::write_dataset<double>(f, g, "table", std::span<const long long>(one),
                                    std::span<const long long>(one),
                                    std::span<const long long>(one), &v);
    });
  });
  EXPECT_NE(m.find("cannot write the application's table"), std::string::npos) << m;
}

TEST(OpenPmdFailures, OpeningAFolderIsOneClearErrorOnEveryRank) {
  const cn::Comm world = cn::Comm::world();
  const std::string dir = shared_folder(world, "folder");
  const std::string m = message_of([&] { (void)cn::h5::File::open(dir, world); });
  EXPECT_NE(m.find("is a folder, not a file"), std::string::npos) << m;
  const std::string missing =
      message_of([&] { (void)cn::h5::File::open(dir + "/none.h5", world); });
  EXPECT_NE(missing.find("does not exist"), std::string::npos) << missing;
}

TEST(OpenPmdFailures, CreatingWhereOneRankCannotIsOneClearErrorOnEveryRank) {
  const cn::Comm world = cn::Comm::world();
  const std::string dir = shared_folder(world, "create");
  if (world.rank() == 0) std::ofstream(dir + "/a_file") << "x";
  world.barrier();
  // Under a file: every rank sees it.
  std::string m = message_of([&] { (void)cn::h5::File::create(dir + "/a_file/out.h5", world); });
  EXPECT_NE(m.find("a_file is not a folder"), std::string::npos) << m;
  // One rank alone gives a path it cannot write (the others would enter the collective create).
  const bool last = world.rank() == world.size() - 1;
  const std::string path = last ? dir + "/missing/out.h5" : dir + "/out.h5";
  m = message_of([&] { (void)cn::h5::File::create(path, world); });
  EXPECT_NE(m.find("missing does not exist"), std::string::npos) << m;
  if (world.size() > 1) {
    EXPECT_NE(m.find("rank " + std::to_string(world.size() - 1)), std::string::npos) << m;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/out.h5")) << "no rank created the file";
}
#endif

// Memory running out on one rank while it grows its arrays for arriving particles: every
// rank raises the error, nobody waits in the exchange.  The last rank asks for an absurd growth
// factor (its arrays would grow to 10^15 rows), so its allocation fails.
TEST(MigrationFailures, AnAllocationFailingOnOneRankFailsEveryRank) {
  const cn::Comm world = cn::Comm::world();
  if (world.size() == 1) GTEST_SKIP() << "needs two ranks (one sends, one grows)";
  const bool last = world.rank() == world.size() - 1;
  const cn::CartesianDecomposition d(world, {8 * static_cast<long long>(world.size())});
  cn::ParticleMigration migration(world, d, {0, 0, 0}, {1, 1, 1}, {.growth = last ? 1e15 : 1.5});
  // Rank 0 holds 64 particles in the last rank's cells; the last rank has room for one.
  const long long capacity = world.rank() == 0 ? 64 : 1;
  auto x = cn::full<double>({capacity}, 0.999, cn::Backend::host);
  auto id = cn::arange<std::int64_t>(0, capacity, 1, cn::Backend::host);
  cn::ParticleColumns particles;
  particles.position(x).column(id);
  const long long count = world.rank() == 0 ? 64 : 0;
  const std::string m = message_of([&] { (void)migration.migrate(particles, count); });
  EXPECT_NE(m.find("on rank " + std::to_string(world.size() - 1)), std::string::npos) << m;
  // Nothing was lost: rank 0 still holds its particles, and a migration with a sane growth on
  // every rank then moves them.
  cn::ParticleMigration sane(world, d, {0, 0, 0}, {1, 1, 1});
  const long long after = sane.migrate(particles, count);
  const long long total = world.allreduce(after, cn::Op::sum);
  EXPECT_EQ(total, 64);
  EXPECT_EQ(after, last ? 64 : 0);
}
