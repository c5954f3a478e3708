// Every Comm call with host buffers under mpiexec -n 1, 2 and 4.
#include <gtest/gtest.h>

#include <complex>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/internal/comm_impl.hpp>

namespace cn = cunumpy;

namespace {
class Mpi : public ::testing::Test {
 protected:
  cn::Comm world = cn::Comm::world();
  int rank = world.rank();
  int size = world.size();
};
}  // namespace

TEST_F(Mpi, WorldIsRealMpiAndMatchesTheLauncher) {
  ASSERT_TRUE(cn::mpi_initialized());
  EXPECT_FALSE(world.is_serial());
  EXPECT_TRUE(cn::launched_under_mpi()) << cn::launcher_info().evidence;
  ASSERT_TRUE(cn::launcher_info().world_size.has_value());
  EXPECT_EQ(*cn::launcher_info().world_size, size);
  EXPECT_EQ(cn::launcher_info().world_rank, rank);
  EXPECT_LT(cn::local_rank(), cn::local_size());
  world.barrier();
}

TEST_F(Mpi, Reductions) {
  EXPECT_EQ(world.allreduce(rank + 1, cn::Op::sum), size * (size + 1) / 2);
  const int factorial[] = {1, 1, 2, 6, 24};
  EXPECT_EQ(world.allreduce(rank + 1, cn::Op::prod), factorial[size]);
  EXPECT_EQ(world.allreduce(static_cast<double>(rank), cn::Op::max), size - 1.0);
  EXPECT_EQ(world.allreduce(static_cast<float>(rank), cn::Op::min), 0.0f);
  EXPECT_EQ(world.allreduce(rank == 0, cn::Op::logical_and), size == 1);
  EXPECT_EQ(world.allreduce(rank == 0, cn::Op::logical_or), true);
  EXPECT_EQ(world.allreduce(1 << rank, cn::Op::bit_or), (1 << size) - 1);
  EXPECT_EQ(world.allreduce(std::complex<double>(rank, 1), cn::Op::sum),
            std::complex<double>(size * (size - 1) / 2.0, size));
  std::vector<double> v(5, static_cast<double>(rank)), out(5);
  world.allreduce<double>(v, std::span(out), cn::Op::sum);
  for (double x : out) EXPECT_EQ(x, size * (size - 1) / 2.0);
  world.allreduce(std::span(v), cn::Op::sum);  // in place
  EXPECT_EQ(v, out);
  std::vector<long long> red(2, -1);
  world.reduce<long long>(std::vector<long long>{rank, 1}, std::span(red), cn::Op::sum, size - 1);
  if (rank == size - 1) {
    EXPECT_EQ(red, (std::vector<long long>{size * (size - 1) / 2, size}));
  }
  EXPECT_EQ(world.scan(1, cn::Op::sum), rank + 1);
}

TEST_F(Mpi, GatherScatterAlltoallBcast) {
  EXPECT_EQ(world.allgather(rank * 10), [&] {
    std::vector<int> e(size);
    for (int r = 0; r < size; ++r) e[r] = r * 10;
    return e;
  }());
  std::vector<double> g(static_cast<std::size_t>(2 * size));
  world.gather<double>(std::vector<double>{1.0 * rank, -1.0 * rank}, std::span(g), 0);
  if (rank == 0) {
    for (int r = 0; r < size; ++r) EXPECT_EQ(g[2 * r], r);
  }
  std::vector<int> all(static_cast<std::size_t>(3 * size));
  std::iota(all.begin(), all.end(), 0);
  std::vector<int> mine(3);
  world.scatter<int>(all, std::span(mine), 0);
  EXPECT_EQ(mine, (std::vector<int>{3 * rank, 3 * rank + 1, 3 * rank + 2}));
  std::vector<int> a2a_in(static_cast<std::size_t>(size)), a2a_out(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) a2a_in[r] = 100 * rank + r;
  world.alltoall<int>(a2a_in, std::span(a2a_out));
  for (int r = 0; r < size; ++r) EXPECT_EQ(a2a_out[r], 100 * r + rank);
  std::vector<float> b(4, rank == size - 1 ? 2.5f : 0.0f);
  world.bcast(std::span(b), size - 1);
  EXPECT_EQ(b, std::vector<float>(4, 2.5f));
  EXPECT_EQ(world.bcast(rank == 0 ? 42 : 0, 0), 42);
}

TEST_F(Mpi, VectorForms) {
  // Rank r contributes r + 1 values equal to r.
  std::vector<int> counts(size), displs(size);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = r + 1;
    displs[r] = total;
    total += r + 1;
  }
  std::vector<double> mine(static_cast<std::size_t>(rank + 1), static_cast<double>(rank));
  std::vector<double> all(static_cast<std::size_t>(total), -1.0);
  world.allgatherv<double>(mine, std::span(all), counts, displs);
  for (int r = 0; r < size; ++r)
    for (int k = 0; k < counts[r]; ++k) EXPECT_EQ(all[displs[r] + k], r);
  std::vector<double> gathered(rank == 0 ? total : 0);
  world.gatherv<double>(mine, std::span(gathered), counts, displs, 0);
  if (rank == 0) {
    EXPECT_EQ(gathered, all);
  }
  std::vector<double> back(static_cast<std::size_t>(rank + 1), -1.0);
  world.scatterv<double>(all, counts, displs, std::span(back), 0);
  EXPECT_EQ(back, mine);
  // alltoallv: rank r sends (r + 1) copies of 10 * r + dest to each dest.
  std::vector<int> sc(size, rank + 1), sd(size), rc(size), rd(size);
  for (int r = 0; r < size; ++r) {
    sd[r] = r * (rank + 1);
    rc[r] = r + 1;
    rd[r] = displs[r];
  }
  std::vector<int> sbuf(static_cast<std::size_t>(size * (rank + 1)));
  for (int d = 0; d < size; ++d)
    for (int k = 0; k <= rank; ++k) sbuf[sd[d] + k] = 10 * rank + d;
  std::vector<int> rbuf(static_cast<std::size_t>(total));
  world.alltoallv<int>(sbuf, sc, sd, std::span(rbuf), rc, rd);
  for (int r = 0; r < size; ++r)
    for (int k = 0; k < rc[r]; ++k) EXPECT_EQ(rbuf[rd[r] + k], 10 * r + rank);
}

TEST_F(Mpi, PointToPoint) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  std::vector<double> out{1.0 * rank, 2.0 * rank}, in(2);
  world.sendrecv<double>(out, right, std::span(in), left, 7);
  EXPECT_EQ(in, (std::vector<double>{1.0 * left, 2.0 * left}));
  std::vector<int> got(1, -1);
  auto rr = world.irecv(std::span(got), left, 3);
  std::vector<int> payload{rank};
  auto sr = world.isend(std::span(payload), right, 3);
  std::vector<cn::Request> both;
  both.push_back(std::move(rr));
  both.push_back(std::move(sr));
  cn::Request::wait_all(both);
  EXPECT_EQ(got[0], left);
  if (size > 1) {
    if (rank == 0) world.send(std::span(payload), 1, 11);
    if (rank == 1) {
      std::vector<int> x(1);
      world.recv(std::span(x), 0, 11);
      EXPECT_EQ(x[0], 0);
    }
  }
  std::vector<double> none{-1.0};
  world.sendrecv<double>(out, cn::proc_null, std::span(none), cn::proc_null);
  EXPECT_EQ(none[0], -1.0);
}

// Messages of a length the receiver does not know: each rank sends rank + 1 doubles to the
// right; the left neighbour probes, sizes its buffer from the Status, then receives.  iprobe
// sees nothing before the send and the message after it; wtime advances.
TEST_F(Mpi, ProbeSizesAVariableLengthMessage) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  EXPECT_FALSE(world.iprobe(cn::any_source, 21).has_value()) << "nothing was sent with tag 21";
  world.barrier();  // every rank has looked before any sends
  const double t0 = world.wtime();
  std::vector<double> out(static_cast<std::size_t>(rank + 1), 0.5 * rank);
  auto sent = world.isend(std::span(out), right, 21);
  const cn::Status st = world.probe(cn::any_source, 21);
  EXPECT_EQ(st.source, left);
  EXPECT_EQ(st.tag, 21);
  EXPECT_EQ(st.bytes, static_cast<long long>((left + 1) * sizeof(double)));
  EXPECT_EQ(st.count<double>(), left + 1);
  if ((left + 1) % 2 == 1) {  // an odd number of doubles is no whole number of complex<double>
    EXPECT_THROW((void)st.count<std::complex<double>>(), cn::ValueError);
  } else {
    EXPECT_EQ(st.count<std::complex<double>>(), (left + 1) / 2);
  }
  std::optional<cn::Status> again;
  while (!(again = world.iprobe(left, 21))) {
  }
  EXPECT_EQ(again->bytes, st.bytes);
  std::vector<double> in(static_cast<std::size_t>(st.count<double>()));
  world.recv(std::span(in), st.source, st.tag);
  EXPECT_EQ(in, std::vector<double>(static_cast<std::size_t>(left + 1), 0.5 * left));
  sent.wait();
  EXPECT_GE(world.wtime(), t0);
  EXPECT_EQ(world.probe(cn::proc_null).source, cn::proc_null);
  world.barrier();
}

// The value forms of reduce, gather and scatter: a value on root, nothing elsewhere.
TEST_F(Mpi, ValueFormsOfReduceGatherScatter) {
  const int root = size - 1;
  const std::optional<long long> total =
      world.reduce(static_cast<long long>(rank + 1), cn::Op::sum, root);
  EXPECT_EQ(total.has_value(), rank == root);
  if (total) {
    EXPECT_EQ(*total, static_cast<long long>(size) * (size + 1) / 2);
  }
  EXPECT_EQ(world.reduce(1.0 * rank, cn::Op::max, root).value_or(-1.0),
            rank == root ? size - 1.0 : -1.0);
  const std::vector<int> all = world.gather(10 * rank, root);
  if (rank == root) {
    ASSERT_EQ(all.size(), static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)], 10 * r);
  } else {
    EXPECT_TRUE(all.empty());
  }
  std::vector<double> values;
  if (rank == root)
    for (int r = 0; r < size; ++r) values.push_back(100.0 + r);
  EXPECT_EQ(world.scatter<double>(values, root), 100.0 + rank);
}

TEST_F(Mpi, SplitAndDup) {
  const cn::Comm halves = world.split(rank % 2, rank);
  EXPECT_EQ(halves.size(), (size + 1 - rank % 2) / 2);
  EXPECT_EQ(halves.allreduce(1, cn::Op::sum), halves.size());
  const cn::Comm d = world.dup();
  EXPECT_EQ(d.size(), size);
  EXPECT_NE(d.native(), world.native());
}

TEST_F(Mpi, BadInputIsAClearError) {
  std::vector<double> v(3), small(2);
  EXPECT_THROW(world.allreduce<double>(v, std::span(small), cn::Op::sum), cn::ValueError);
  EXPECT_THROW(world.bcast(std::span(v), size), cn::ValueError);
  EXPECT_THROW(world.send(std::span(v), size + 3), cn::ValueError);
  if (size > 1) {
    // A message longer than the receive buffer: MPI reports truncation, named in the error.
    if (rank == 0) world.send(std::span(v), 1, 21);
    if (rank == 1) {
      try {
        world.recv(std::span(small), 0, 21);
        ADD_FAILURE() << "expected MpiError";
      } catch (const cn::MpiError& e) {
        EXPECT_NE(std::string(e.what()).find("smaller than the message"), std::string::npos)
            << e.what();
      }
    }
  }
  world.barrier();
}

// A Request dropped while active is cancelled: the receive no longer matches, so a later
// message with its tag reaches the next receive, and nothing is left pending.
TEST_F(Mpi, DroppedReceiveIsCancelledNotLeaked) {
  const long long live = cn::detail::live_requests();
  if (size > 1) {
    if (rank == 1) {
      std::vector<int> dropped(1, -1);
      { auto r = world.irecv(std::span(dropped), 0, 50); }
      EXPECT_EQ(cn::detail::live_requests(), live);
      world.barrier();
      std::vector<int> got(1, -1);
      world.recv(std::span(got), 0, 50);
      EXPECT_EQ(got[0], 77);
      EXPECT_EQ(dropped[0], -1) << "the cancelled receive took nothing";
    } else {
      world.barrier();
      if (rank == 0) {
        const std::vector<int> v{77};
        world.send<const int>(std::span(v), 1, 50);
      }
    }
  }
  // An active send dropped is completed, not leaked.
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  std::vector<double> out(3, rank), in(3, -1);
  auto r = world.irecv(std::span(in), left, 51);
  { auto s = world.isend(std::span(out), right, 51); }
  r.wait();
  EXPECT_EQ(in[0], left);
  EXPECT_EQ(cn::detail::live_requests(), live);
  world.barrier();
}

// Counts above the per-call limit go through derived datatypes (moving data) or pieces
// (reductions); vector collectives with large counts through point-to-point messages.  The
// limit is lowered so that these paths run on small buffers; test_comm_large crosses 2^31.
TEST_F(Mpi, CountsAboveTheLimitAreExact) {
  cn::detail::set_mpi_count_limit(7);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  std::vector<double> out(100), in(100, -1);
  std::iota(out.begin(), out.end(), 1000.0 * rank);
  world.sendrecv<double>(out, right, std::span(in), left, 5);
  EXPECT_EQ(in[99], 1000.0 * left + 99);
  std::fill(in.begin(), in.end(), -1);
  auto rr = world.irecv(std::span(in), left, 6);
  auto sr = world.isend(std::span(out), right, 6);
  rr.wait();
  sr.wait();
  EXPECT_EQ(in[50], 1000.0 * left + 50);

  std::vector<long long> b(50, rank == 0 ? 9 : 0);
  world.bcast(std::span(b), 0);
  EXPECT_EQ(b[49], 9);

  std::vector<long long> v(33, rank + 1), sum(33);
  world.allreduce<long long>(v, std::span(sum), cn::Op::sum);
  EXPECT_EQ(sum[32], size * (size + 1) / 2);
  world.allreduce(std::span(v), cn::Op::max);
  EXPECT_EQ(v[20], size);
  std::vector<long long> red(33, -1);
  world.reduce<long long>(std::vector<long long>(33, 2), std::span(red), cn::Op::sum, 0);
  if (rank == 0) {
    EXPECT_EQ(red[32], 2 * size);
  }
  std::vector<long long> sc(33);
  world.scan<long long>(std::vector<long long>(33, 1), std::span(sc), cn::Op::sum);
  EXPECT_EQ(sc[10], rank + 1);

  std::vector<int> mine(10), all(10 * static_cast<std::size_t>(size));
  std::iota(mine.begin(), mine.end(), 100 * rank);
  world.allgather<int>(mine, std::span(all));
  for (int r = 0; r < size; ++r) EXPECT_EQ(all[10 * static_cast<std::size_t>(r) + 9], 100 * r + 9);
  std::vector<int> gathered(10 * static_cast<std::size_t>(size), -1);
  world.gather<int>(mine, std::span(gathered), 0);
  if (rank == 0) {
    EXPECT_EQ(gathered, all);
  }
  std::vector<int> part(10, -1);
  world.scatter<int>(all, std::span(part), 0);
  EXPECT_EQ(part, mine);
  std::vector<int> a2a_in(9 * static_cast<std::size_t>(size)), a2a_out(a2a_in.size());
  for (std::size_t i = 0; i < a2a_in.size(); ++i) a2a_in[i] = 1000 * rank + static_cast<int>(i / 9);
  world.alltoall<int>(a2a_in, std::span(a2a_out));
  for (int r = 0; r < size; ++r)
    EXPECT_EQ(a2a_out[9 * static_cast<std::size_t>(r) + 8], 1000 * r + rank);

  // Vector forms: rank r contributes 8 + r elements (above the limit), 64-bit counts.
  std::vector<long long> counts(static_cast<std::size_t>(size)), displs(counts.size());
  long long total = 0;
  for (int r = 0; r < size; ++r) {
    counts[static_cast<std::size_t>(r)] = 8 + r;
    displs[static_cast<std::size_t>(r)] = total;
    total += 8 + r;
  }
  std::vector<double> piece(static_cast<std::size_t>(8 + rank), rank + 0.5),
      whole(static_cast<std::size_t>(total), -1);
  world.allgatherv<double>(piece, std::span(whole), counts, displs);
  for (int r = 0; r < size; ++r)
    EXPECT_EQ(whole[static_cast<std::size_t>(displs[static_cast<std::size_t>(r)] + 7 + r)],
              r + 0.5);
  std::vector<double> g(static_cast<std::size_t>(total), -1);
  world.gatherv<double>(piece, std::span(g), counts, displs, 0);
  if (rank == 0) {
    EXPECT_EQ(g, whole);
  }
  std::vector<double> back(piece.size(), -1);
  world.scatterv<double>(whole, counts, displs, std::span(back), 0);
  EXPECT_EQ(back, piece);
  // alltoallv: 8 elements from every rank to every rank.
  std::vector<long long> c8(static_cast<std::size_t>(size), 8), d8(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) d8[static_cast<std::size_t>(r)] = 8LL * r;
  std::vector<int> sbuf(8 * static_cast<std::size_t>(size)), rbuf(sbuf.size(), -1);
  for (std::size_t i = 0; i < sbuf.size(); ++i) sbuf[i] = 100 * rank + static_cast<int>(i / 8);
  world.alltoallv<int>(sbuf, c8, d8, std::span(rbuf), c8, d8);
  for (int r = 0; r < size; ++r)
    EXPECT_EQ(rbuf[8 * static_cast<std::size_t>(r) + 7], 100 * r + rank);
  cn::detail::set_mpi_count_limit(0);  // back to INT_MAX
  EXPECT_EQ(cn::detail::mpi_count_limit(), 2147483647LL);
}

// The checked mode: collectives whose arguments differ between ranks raise on every rank,
// naming each rank's count, instead of a wrong result on some ranks and a hang on others.
TEST_F(Mpi, CheckedModeRaisesOnEveryRankWhenCountsDiffer) {
  const bool was = cn::mpi_checks();
  cn::set_mpi_checks(true);
  // Matching calls pass unchanged.
  std::vector<double> v(4, 1.0), sum(4);
  world.allreduce<double>(v, std::span<double>(sum), cn::Op::sum);
  EXPECT_EQ(sum[0], static_cast<double>(size));
  if (size > 1) {
    std::vector<double> mine(static_cast<std::size_t>(3 + rank)), out(mine.size());
    try {
      world.allreduce<double>(mine, std::span<double>(out), cn::Op::sum);
      ADD_FAILURE() << "rank " << rank << ": mismatched counts must raise";
    } catch (const cn::MpiError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("Comm::allreduce (checked mode, CUNUMPY_MPI_CHECK): the ranks disagree: "
                       "rank 0: 3 x float64"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("rank 1: 4 x float64"), std::string::npos) << m;
    }
    // Another root on one rank.
    std::vector<int> b(2, rank);
    EXPECT_THROW(world.bcast<int>(std::span<int>(b), rank == size - 1 ? 1 : 0), cn::MpiError);
    // A rank whose own buffers are wrong: every rank raises, none enters the call.
    std::vector<double> send(4, 1.0), recv(rank == 0 ? 3 : 4);
    try {
      world.allreduce<double>(send, std::span<double>(recv), cn::Op::sum);
      ADD_FAILURE() << "rank " << rank << ": a bad buffer on rank 0 must raise everywhere";
    } catch (const cn::MpiError& e) {
      EXPECT_NE(rank, 0) << "rank 0 raises its own error";
      EXPECT_NE(std::string(e.what()).find("rank(s) 0 failed the argument checks"),
                std::string::npos)
          << e.what();
    } catch (const cn::ValueError& e) {
      EXPECT_EQ(rank, 0) << e.what();
      EXPECT_NE(std::string(e.what()).find("the receive buffer must hold 4 elements, got 3"),
                std::string::npos)
          << e.what();
    }
  }
  world.barrier();  // every rank is still in step
  cn::set_mpi_checks(was);
}
