// The halo exchange at 1, 2 and 4 ranks, on host and emulated arrays (staged and, with MPI
// taken as CUDA-aware, direct), against a replicated reference: "fill" puts every guard cell
// (corners too) at the value of the cell it stands for, "sum" adds every rank's guard
// contributions into the owners' cells.  1D, 2D and 3D, guards 1 and 2, one and three
// components (last and first), periodic and bounded axes, several element types.
#include <gtest/gtest.h>

#include <chrono>
#include <complex>
#include <cstdint>
#include <span>
#include <thread>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {

struct Case {
  std::vector<long long> cells;
  std::array<bool, 3> periodic;
  int guard;
  long long comps;
  int component_axis;
};

cn::CartesianDecomposition decompose(int rank, int ranks, const Case& c) {
  const cn::DecompositionOptions o{.periodic = c.periodic};
  if (c.cells.size() == 1) return {rank, ranks, {c.cells[0]}, o};
  if (c.cells.size() == 2) return {rank, ranks, {c.cells[0], c.cells[1]}, o};
  return {rank, ranks, {c.cells[0], c.cells[1], c.cells[2]}, o};
}

// Calls f(linear index, global cell (wrapped; -1 on an axis outside a bounded box), component,
// guard) for every element of rank `d`'s field array.
template <typename F>
void for_each_element(const cn::CartesianDecomposition& d, const Case& c, F&& f) {
  const int nd = d.ndim();
  const long long g = c.guard;
  std::array<long long, 3> ext{1, 1, 1};
  for (int a = 0; a < nd; ++a) ext[a] = d.local_cells(a) + 2 * g;
  const bool first = c.comps > 1 && c.component_axis == 0;
  long long linear = 0;
  for (long long outer = 0; outer < (first ? c.comps : 1); ++outer)
    for (long long i = 0; i < ext[0]; ++i)
      for (long long j = 0; j < ext[1]; ++j)
        for (long long k = 0; k < ext[2]; ++k)
          for (long long inner = 0; inner < (first ? 1 : c.comps); ++inner, ++linear) {
            std::array<long long, 3> local{i, j, k}, global{0, 0, 0};
            bool guard = false;
            for (int a = 0; a < nd; ++a) {
              const long long n = d.local_cells(a);
              guard = guard || local[a] < g || local[a] >= g + n;
              long long x = d.to_global(a, local[a] - g);
              const long long N = d.cells()[a];
              if (x < 0 || x >= N) x = d.periodic(a) ? (x % N + N) % N : -1;
              global[a] = x;
            }
            f(linear, global, first ? outer : inner, guard);
          }
}

bool outside(const std::array<long long, 3>& cell) {
  return cell[0] < 0 || cell[1] < 0 || cell[2] < 0;
}
long long cell_id(const std::array<long long, 3>& cell, long long comp) {
  return ((cell[0] * 1000 + cell[1]) * 100 + cell[2]) * 8 + comp;
}

template <typename T>
T value_of(long long v) {
  if constexpr (cn::is_complex<T>::value)
    return T(static_cast<typename T::value_type>(v % 4096),
             static_cast<typename T::value_type>(-(v % 1024)));
  else
    return static_cast<T>(v % 100000);
}

cn::Shape shape_of(const cn::HaloExchange& h, const Case& c) {
  return h.field_shape(c.comps);
}

template <typename T>
cn::Array<T> upload(const std::vector<T>& v, const cn::Shape& shape, cn::Backend b) {
  return cn::from_host<T>(std::span<const T>(v), shape, b);
}

template <typename T>
void check_fill(const cn::Comm& world, const Case& c, cn::Backend b) {
  const auto d = decompose(world.rank(), world.size(), c);
  cn::HaloExchange halo(world, d, {.guard = c.guard, .component_axis = c.component_axis});
  const cn::Shape shape = shape_of(halo, c);
  std::vector<T> host(static_cast<std::size_t>(shape.size()));
  const T sentinel = value_of<T>(99999);
  for_each_element(d, c, [&](long long at, auto cell, long long comp, bool guard) {
    host[at] = guard ? sentinel : value_of<T>(cell_id(cell, comp));
  });
  auto field = upload(host, shape, b);
  halo.begin_fill(field);
  halo.end();
  const auto out = cn::to_host(field);
  long long wrong = 0;
  for_each_element(d, c, [&](long long at, auto cell, long long comp, bool) {
    const T want = outside(cell) ? sentinel : value_of<T>(cell_id(cell, comp));
    if (out.host_span()[at] != want) ++wrong;
  });
  EXPECT_EQ(wrong, 0) << "rank " << world.rank() << ": " << d.str();
}

template <typename T>
void check_sum(const cn::Comm& world, const Case& c, cn::Backend b) {
  const auto d = decompose(world.rank(), world.size(), c);
  cn::HaloExchange halo(world, d, {.guard = c.guard, .component_axis = c.component_axis});
  const cn::Shape shape = shape_of(halo, c);
  // Rank r puts (r + 1) * (id % 97 + 1) in every element of its array, guards included; the
  // reference for an owned cell adds what every rank put at that cell.
  std::vector<T> host(static_cast<std::size_t>(shape.size()));
  const auto put = [&](int r, const std::array<long long, 3>& cell, long long comp) {
    return value_of<T>((r + 1) * (cell_id(cell, comp) % 97 + 1));
  };
  for_each_element(d, c, [&](long long at, auto cell, long long comp, bool) {
    host[at] = outside(cell) ? T{} : put(world.rank(), cell, comp);
  });
  std::map<long long, T> reference;
  for (int r = 0; r < world.size(); ++r) {
    const auto dr = decompose(r, world.size(), c);
    for_each_element(dr, c, [&](long long, auto cell, long long comp, bool) {
      if (!outside(cell)) reference[cell_id(cell, comp)] += put(r, cell, comp);
    });
  }
  auto field = upload(host, shape, b);
  halo.sum(field);
  const auto out = cn::to_host(field);
  long long wrong = 0;
  for_each_element(d, c, [&](long long at, auto cell, long long comp, bool guard) {
    if (!guard && out.host_span()[at] != reference[cell_id(cell, comp)]) ++wrong;
  });
  EXPECT_EQ(wrong, 0) << "rank " << world.rank() << ": " << d.str();
}

std::vector<Case> cases() {
  return {
      {{37}, {true, true, true}, 1, 1, -1},         {{37}, {false, true, true}, 2, 3, -1},
      {{24, 18}, {true, true, true}, 1, 1, -1},     {{24, 18}, {true, true, true}, 2, 3, -1},
      {{24, 18}, {true, false, true}, 2, 3, 0},     {{10, 9, 8}, {true, true, true}, 1, 2, -1},
      {{10, 9, 8}, {false, true, false}, 2, 1, -1},
  };
}

std::vector<cn::Backend> backends() {
  return {cn::Backend::host, cn::Backend::emulated};  // the emulated device is always there
}

}  // namespace

TEST(HaloMpi, FillPutsEveryGuardAtTheCellItStandsFor) {
  const cn::Comm world = cn::Comm::world();
  for (cn::Backend b : backends())
    for (const Case& c : cases()) {
      SCOPED_TRACE(std::string(cn::to_string(b)) + " ndim " + std::to_string(c.cells.size()) +
                   " guard " + std::to_string(c.guard) + " comps " + std::to_string(c.comps));
      check_fill<double>(world, c, b);
      check_fill<std::int32_t>(world, c, b);
      check_fill<std::uint8_t>(world, c, b);  // 1-byte units: the byte path of the packing
    }
}

TEST(HaloMpi, SumAddsEveryGuardIntoItsOwner) {
  const cn::Comm world = cn::Comm::world();
  for (cn::Backend b : backends())
    for (const Case& c : cases()) {
      SCOPED_TRACE(std::string(cn::to_string(b)) + " ndim " + std::to_string(c.cells.size()) +
                   " guard " + std::to_string(c.guard) + " comps " + std::to_string(c.comps));
      check_sum<double>(world, c, b);
      check_sum<std::int64_t>(world, c, b);
      check_sum<float>(world, c, b);
      check_sum<std::complex<float>>(world, c, b);
    }
}

TEST(HaloMpi, DeviceArraysGoDirectWhenMpiIsCudaAware) {
  const cn::Comm world = cn::Comm::world();
  const Case c{{24, 18}, {true, true, true}, 2, 1, -1};
  for (bool aware : {false, true}) {
    cn::set_mpi_cuda_aware(aware);
    check_fill<double>(world, c, cn::Backend::emulated);
    check_sum<double>(world, c, cn::Backend::emulated);
    // Transfers of one exchange: one copy each way when staged, none when direct, none with
    // one rank (no message leaves it).
    const auto d = decompose(world.rank(), world.size(), c);
    cn::HaloExchange halo(world, d, {.guard = 2});
    auto field = cn::zeros<double>(halo.field_shape(), cn::Backend::emulated);
    auto counter = cn::count_transfers();
    halo.fill(field);
    halo.sum(field);
    counter.stop();
    const long long expected = world.size() == 1 || aware ? 0 : 4;
    EXPECT_EQ(counter.total(), expected) << counter.report();
    EXPECT_EQ(halo.stats().staged_copies, expected);
    EXPECT_EQ(halo.stats().exchanges, 2);
    if (world.size() > 1) {
      EXPECT_GT(halo.stats().bytes_sent, 0);
    }
  }
  cn::set_mpi_cuda_aware(std::nullopt);
}

TEST(HaloMpi, InteriorWorkOverlapsTheExchange) {
  const cn::Comm world = cn::Comm::world();
  const Case c{{32, 16}, {true, true, true}, 1, 1, -1};
  const auto d = decompose(world.rank(), world.size(), c);
  cn::HaloExchange halo(world, d, {.guard = 1});
  auto field = cn::zeros<double>(halo.field_shape(), cn::Backend::host);
  for_each_element(d, c, [&](long long at, auto cell, long long, bool guard) {
    field.host_span()[at] = guard ? -1.0 : static_cast<double>(cell_id(cell, 0));
  });
  halo.begin_fill(field);
  EXPECT_TRUE(halo.pending());
  EXPECT_THROW(halo.begin_fill(field), cn::ValueError);  // one exchange at a time
  // Reading the owned cells meanwhile is allowed.
  double interior = 0.0;
  const auto [i0, i1] = halo.interior(0);
  const auto [j0, j1] = halo.interior(1);
  for (long long i = i0; i < i1; ++i)
    for (long long j = j0; j < j1; ++j) interior += field(i, j);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // more work under the messages
  halo.end();
  EXPECT_FALSE(halo.pending());
  EXPECT_GT(interior, 0.0);
  // The stats say how long the messages travelled under work and how long end() waited (a
  // rank alone sends none: nothing to measure).
  if (world.size() > 1) {
    EXPECT_GE(halo.stats().overlapped_seconds, 0.02);
    EXPECT_GE(halo.stats().waited_seconds, 0.0);
  } else {
    EXPECT_EQ(halo.stats().overlapped_seconds, 0.0);
  }
  for_each_element(d, c, [&](long long at, auto cell, long long, bool) {
    ASSERT_EQ(field.host_span()[at], static_cast<double>(cell_id(cell, 0)));
  });
}

// Each exchange works on a communicator of its own: a receive of the application's, posted on
// the same communicator for any source and any tag before the exchange, never takes the
// exchange's messages (on a shared communicator it would: its tags are the exchange's), and two
// exchanges of the same fields can be in flight at once.
TEST(HaloMpi, TheExchangesMessagesNeverMeetTheApplicationsOrEachOthers) {
  const cn::Comm world = cn::Comm::world();
  const Case c{{32, 16}, {true, true, true}, 2, 1, -1};
  const auto d = decompose(world.rank(), world.size(), c);
  cn::HaloExchange a(world, d, {.guard = 2}), b(world, d, {.guard = 2});
  auto fa = cn::zeros<double>(a.field_shape(), cn::Backend::host);
  auto fb = cn::zeros<double>(b.field_shape(), cn::Backend::host);
  for_each_element(d, c, [&](long long at, auto cell, long long, bool guard) {
    fa.host_span()[at] = guard ? -1.0 : static_cast<double>(cell_id(cell, 0));
    fb.host_span()[at] = guard ? -1.0 : 0.5 + static_cast<double>(cell_id(cell, 0));
  });
  const int P = world.size(), me = world.rank();
  long long got = -1;
  const long long mine = 1000 + me;
  cn::Request app = world.irecv(std::span<long long>(&got, 1), cn::any_source, cn::any_tag);
  a.begin_fill(fa);
  b.begin_fill(fb);
  b.end();
  a.end();
  world.send(std::span<const long long>(&mine, 1), (me + 1) % P, 5);
  app.wait();
  EXPECT_EQ(got, 1000 + (me + P - 1) % P);
  long long wrong = 0;
  for_each_element(d, c, [&](long long at, auto cell, long long, bool) {
    wrong += fa.host_span()[at] != static_cast<double>(cell_id(cell, 0));
    wrong += fb.host_span()[at] != 0.5 + static_cast<double>(cell_id(cell, 0));
  });
  EXPECT_EQ(wrong, 0) << "rank " << me;
}

TEST(HaloMpi, MismatchedFieldsAreAnErrorOnEveryRankNotAHang) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {24, 18});
  {
    cn::HaloExchange halo(world, d, {.guard = 1});
    // Rank 0 (or the only rank) passes three components, the others one.
    const long long comps = world.rank() == 0 && world.size() > 1 ? 3 : 1;
    auto field = cn::zeros<double>(halo.field_shape(comps), cn::Backend::host);
    if (world.size() > 1) {
      try {
        halo.fill(field);
        ADD_FAILURE() << "no error";
      } catch (const cn::ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("3 component(s)"), std::string::npos) << e.what();
      }
    }
  }
  {
    cn::HaloExchange halo(world, d, {.guard = 1});
    // The last rank passes a field without guards.
    auto field = world.rank() == world.size() - 1
                     ? cn::zeros<double>({d.local_cells(0), d.local_cells(1)}, cn::Backend::host)
                     : cn::zeros<double>(halo.field_shape(), cn::Backend::host);
    try {
      halo.sum(field);
      ADD_FAILURE() << "no error";
    } catch (const cn::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("wrong shape"), std::string::npos) << e.what();
      if (world.rank() == world.size() - 1) {
        EXPECT_NE(std::string(e.what()).find("field_shape()"), std::string::npos) << e.what();
      }
    }
  }
  {
    // After good exchanges, the last rank passes a field of the wrong shape (or another kind
    // of field): an error there and on its neighbours (at 2 and 4 ranks every rank is one),
    // not a rank waiting alone.  Then the exchange works again.
    cn::HaloExchange halo(world, d, {.guard = 1});
    auto good = cn::zeros<double>(halo.field_shape(), cn::Backend::host);
    halo.fill(good);
    halo.sum(good);
    const bool last = world.rank() == world.size() - 1;
    for (int variant = 0; variant < 2; ++variant) {
      auto bad = variant == 0
                     ? cn::zeros<double>({d.local_cells(0), d.local_cells(1)}, cn::Backend::host)
                     : cn::zeros<double>(halo.field_shape(2), cn::Backend::host);
      auto& mine = last ? bad : good;
      if (world.size() == 1 && variant == 1) continue;  // alone, two components are fine
      try {
        halo.fill(mine);
        ADD_FAILURE() << "no error, variant " << variant;
      } catch (const cn::ValueError& e) {
        const std::string m = e.what();
        if (variant == 0 && last) {
          EXPECT_NE(m.find("field_shape()"), std::string::npos) << m;
        }
        if (!last) {  // the neighbours' comparison, or the checked mode's table of all ranks
          const std::string who = std::to_string(world.size() - 1);
          EXPECT_TRUE(m.find("neighbour rank " + who) != std::string::npos ||
                      (cn::mpi_checks() && m.find("rank " + who + ": ") != std::string::npos))
              << m;
        }
      }
    }
    halo.fill(good);  // a good exchange again
  }
  {
    cn::HaloExchange halo(world, d, {.guard = 1});
    auto flags = cn::zeros<bool>(halo.field_shape(), cn::Backend::host);
    halo.fill(flags);  // fill takes any element type
    EXPECT_THROW(halo.sum(flags), cn::TypeError);
  }
  // Guards wider than the narrowest part: the same error on every rank, at construction.
  const cn::CartesianDecomposition thin(world, {4 * world.size(), 3},
                                        {.dims = {{world.size(), 1, 1}}});
  EXPECT_THROW(cn::HaloExchange(world, thin, {.guard = 5}), cn::ValueError);
  EXPECT_NO_THROW(cn::HaloExchange(world, thin, {.guard = 3}));
}

// Several fields in one round: each neighbour gets one message holding every field's part
// (as many messages as one field's exchange), and each field comes out as if exchanged alone.
TEST(HaloMpi, SeveralFieldsGoInOneRoundOfMessages) {
  const cn::Comm world = cn::Comm::world();
  for (cn::Backend b : backends())
    for (const Case& c : cases()) {
      SCOPED_TRACE(std::string(cn::to_string(b)) + " ndim " + std::to_string(c.cells.size()) +
                   " guard " + std::to_string(c.guard) + " comps " + std::to_string(c.comps));
      const auto d = decompose(world.rank(), world.size(), c);
      cn::HaloExchange one(world, d, {.guard = c.guard, .component_axis = c.component_axis});
      cn::HaloExchange many(world, d, {.guard = c.guard, .component_axis = c.component_axis});
      const cn::Shape shape = one.field_shape(c.comps);
      constexpr int kFields = 3;
      // Field f holds id + 7919 f at the owned cells, -1 in the guards; the sum case adds
      // (rank + 1) (f + 1) everywhere.
      std::vector<std::vector<double>> host(
          kFields, std::vector<double>(static_cast<std::size_t>(shape.size())));
      for (int f = 0; f < kFields; ++f)
        for_each_element(d, c, [&](long long at, auto cell, long long comp, bool guard) {
          host[f][at] = guard ? -1.0 : static_cast<double>(cell_id(cell, comp) + 7919 * f);
        });
      std::vector<cn::Array<double>> fields, alone;
      for (int f = 0; f < kFields; ++f) {
        fields.push_back(upload(host[f], shape, b));
        alone.push_back(upload(host[f], shape, b));
      }
      many.fill(std::span<const cn::Array<double>>(fields));
      for (const auto& a : alone) one.fill(a);
      EXPECT_EQ(many.stats().exchanges, 1);
      EXPECT_EQ(many.stats().messages * kFields, one.stats().messages);
      EXPECT_GE(many.stats().bytes_sent, one.stats().bytes_sent);
      long long wrong = 0;
      for (int f = 0; f < kFields; ++f) {
        const auto got = cn::to_host(fields[f]);
        const auto want = cn::to_host(alone[f]);
        for (long long i = 0; i < shape.size(); ++i)
          wrong += got.host_span()[i] != want.host_span()[i];
        EXPECT_EQ(wrong, 0) << "fill, field " << f << ", rank " << world.rank();
      }
      // Sums: the three fields together give what each gives alone.
      for (int f = 0; f < kFields; ++f) {
        const double add = (world.rank() + 1.0) * (f + 1.0);
        for (double& v : host[f]) v += add;
        fields[f] = upload(host[f], shape, b);
        alone[f] = upload(host[f], shape, b);
      }
      many.sum({fields[0], fields[1], fields[2]});
      for (const auto& a : alone) one.sum(a);
      for (int f = 0; f < kFields; ++f) {
        const auto got = cn::to_host(fields[f]);
        const auto want = cn::to_host(alone[f]);
        wrong = 0;
        for (long long i = 0; i < shape.size(); ++i)
          wrong += got.host_span()[i] != want.host_span()[i];
        EXPECT_EQ(wrong, 0) << "sum, field " << f << ", rank " << world.rank();
      }
    }
}

TEST(HaloMpi, FieldsPassedTogetherMustAgreeOnEveryRank) {
  const cn::Comm world = cn::Comm::world();
  const cn::CartesianDecomposition d(world, {24, 18});
  cn::HaloExchange halo(world, d, {.guard = 1});
  auto a = cn::zeros<double>(halo.field_shape(), cn::Backend::host);
  auto b = cn::zeros<double>(halo.field_shape(), cn::Backend::host);
  auto wide = cn::zeros<double>(halo.field_shape(2), cn::Backend::host);
  const auto message = [&](auto&& call) {
    try {
      call();
    } catch (const cn::ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A field of another shape beside the first: an error on every rank (the last rank's
  // fields disagree; the others hear of it: the first exchange compares all ranks), then the
  // exchange works again.
  const bool last = world.rank() == world.size() - 1;
  std::string m = message([&] { halo.fill({a, last ? wide : b}); });
  if (last) {
    EXPECT_NE(m.find("fields passed together differ"), std::string::npos) << m;
  } else {
    EXPECT_NE(m.find("rank " + std::to_string(world.size() - 1) + ": wrong shape"),
              std::string::npos)
        << m;
  }
  // A field twice in a sum would add its guards twice.
  m = message([&] { halo.sum({a, a}); });
  EXPECT_NE(m.find("field 1 is field 0 again"), std::string::npos) << m;
  halo.fill({a, b});
  // Rank 0 passes two fields, the others one: an error on every rank, not a hang.
  if (world.size() > 1) {
    m = message([&] {
      if (world.rank() == 0)
        halo.fill({a, b});
      else
        halo.fill(a);
    });
    // The neighbours' comparison names the count among what differs; the checked mode's
    // (CUNUMPY_MPI_CHECK=1) table gives each rank's count.
    EXPECT_TRUE(m.find("number of fields passed together") != std::string::npos ||
                m.find("2 field(s)") != std::string::npos)
        << m;
  }
  EXPECT_THROW(halo.fill(std::span<const cn::Array<double>>()), cn::ValueError);
  halo.fill({a, b});  // good again
}
