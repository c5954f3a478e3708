// The serial stand-in: every call, as the Python reference's SerialComm.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/internal/comm_impl.hpp>

namespace cn = cunumpy;

TEST(SerialComm, Collectives) {
  const cn::Comm c = cn::Comm::serial();
  EXPECT_TRUE(c.is_serial());
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  c.barrier();
  std::vector<double> send{1, 2, 3}, recv(3, 0.0);
  c.allreduce<double>(send, std::span(recv), cn::Op::sum);
  EXPECT_EQ(recv, send);
  std::vector<double> inplace{4, 5};
  c.allreduce(std::span(inplace), cn::Op::max);
  EXPECT_EQ(inplace, (std::vector<double>{4, 5}));
  EXPECT_EQ(c.allreduce(7, cn::Op::sum), 7);
  EXPECT_EQ(c.allreduce(std::complex<double>(1, 2), cn::Op::sum), std::complex<double>(1, 2));
  EXPECT_EQ(c.bcast(3.5, 0), 3.5);
  std::vector<int> r(2);
  c.reduce<int>(std::vector<int>{1, 2}, std::span(r), cn::Op::prod, 0);
  EXPECT_EQ(r, (std::vector<int>{1, 2}));
  EXPECT_EQ(c.scan(9L, cn::Op::sum), 9L);
  EXPECT_EQ(c.allgather(4), (std::vector<int>{4}));
  std::vector<float> g(2);
  c.gather<float>(std::vector<float>{1, 2}, std::span(g), 0);
  EXPECT_EQ(g, (std::vector<float>{1, 2}));
  std::vector<float> sc(2);
  c.scatter<float>(std::vector<float>{5, 6}, std::span(sc), 0);
  EXPECT_EQ(sc, (std::vector<float>{5, 6}));
  std::vector<int> a2a(3);
  c.alltoall<int>(std::vector<int>{7, 8, 9}, std::span(a2a));
  EXPECT_EQ(a2a, (std::vector<int>{7, 8, 9}));
  EXPECT_TRUE(c.split(3, 0).is_serial());
  EXPECT_TRUE(c.dup().is_serial());
}

TEST(SerialComm, VectorFormsUseRankZerosDisplacement) {
  const cn::Comm c = cn::Comm::serial();
  const std::vector<int> counts{2}, displs{3};
  std::vector<double> recv(6, 0.0);
  c.allgatherv<double>(std::vector<double>{1, 2}, std::span(recv), counts, displs);
  EXPECT_EQ(recv, (std::vector<double>{0, 0, 0, 1, 2, 0}));
  std::vector<double> g(5, 0.0);
  c.gatherv<double>(std::vector<double>{7, 8}, std::span(g), counts, std::vector<int>{1}, 0);
  EXPECT_EQ(g, (std::vector<double>{0, 7, 8, 0, 0}));
  std::vector<double> part(2, 0.0);
  c.scatterv<double>(std::vector<double>{9, 9, 9, 4, 5}, counts, displs, std::span(part), 0);
  EXPECT_EQ(part, (std::vector<double>{4, 5}));
  std::vector<int> a2a(4, 0);
  c.alltoallv<int>(std::vector<int>{1, 2, 3}, std::vector<int>{2}, std::vector<int>{1},
                   std::span(a2a), std::vector<int>{2}, std::vector<int>{0});
  EXPECT_EQ(a2a, (std::vector<int>{2, 3, 0, 0}));
  EXPECT_THROW(c.allgatherv<double>(std::vector<double>{1, 2}, std::span(recv), std::vector<int>{2},
                                    std::vector<int>{5}),
               cn::ValueError)
      << "block past the end";
  EXPECT_THROW(c.allgatherv<double>(std::vector<double>{1}, std::span(recv), counts, displs),
               cn::ValueError)
      << "count differs from the send buffer";
  EXPECT_THROW(c.gatherv<double>(std::vector<double>{1, 2}, std::span(g), std::vector<int>{2, 2},
                                 std::vector<int>{0, 2}, 0),
               cn::ValueError)
      << "one entry per rank";
}

TEST(SerialComm, PointToPointWithItselfAndProcNull) {
  const cn::Comm c = cn::Comm::serial();
  std::vector<double> out{1, 2}, in(2, 0.0);
  c.sendrecv<double>(out, 0, std::span(in), 0, 5);
  EXPECT_EQ(in, out);
  std::vector<double> untouched{-1, -1};
  c.sendrecv<double>(out, cn::proc_null, std::span(untouched), cn::proc_null);
  EXPECT_EQ(untouched, (std::vector<double>{-1, -1}));
  auto s = c.isend(std::span(out), 0, 3);
  EXPECT_FALSE(s.active()) << "the stand-in returns completed requests";
  auto r = c.irecv(std::span(in), 0, 3);
  EXPECT_TRUE(r.test());
  r.wait();
  c.send(std::span(out), 0, 1);
  c.recv(std::span(in), cn::any_source, cn::any_tag);
  EXPECT_EQ(in, out);
}

// The halo idiom: receives posted before the sends that match them.  Messages are matched
// by tag in the order they were posted, whichever side comes first.
TEST(SerialComm, ReceiveFirstMatchesTheLaterSend) {
  const cn::Comm c = cn::Comm::serial();
  const long long live = cn::detail::live_requests();
  std::vector<int> left(2, -1), right(2, -1), any(2, -1);
  auto r_left = c.irecv(std::span(left), 0, 1);
  auto r_right = c.irecv(std::span(right), 0, 2);
  auto r_any = c.irecv(std::span(any), cn::any_source, cn::any_tag);
  EXPECT_TRUE(r_left.active());
  EXPECT_FALSE(r_left.test()) << "nothing sent yet";
  EXPECT_EQ(cn::detail::live_requests(), live + 3);
  const std::vector<int> to_right{20, 21}, to_left{10, 11}, third{30, 31};
  c.send<const int>(std::span(to_right), 0,
                    2);  // matches r_right (tag 2) before r_any, posted later
  auto s = c.isend<const int>(std::span(to_left), 0, 1);
  EXPECT_FALSE(s.active()) << "the stand-in buffers sends: complete at once";
  c.send<const int>(std::span(third), 0, 7);  // only r_any takes tag 7
  EXPECT_TRUE(r_left.test());
  r_right.wait();
  r_any.wait();
  EXPECT_EQ(left, to_left);
  EXPECT_EQ(right, to_right);
  EXPECT_EQ(any, third);
  EXPECT_EQ(cn::detail::live_requests(), live);
}

TEST(SerialComm, SendFirstIsKeptInOrderForTheReceives) {
  const cn::Comm c = cn::Comm::serial();
  const std::vector<double> first{1, 2}, second{3, 4};
  c.send<const double>(std::span(first), 0, 5);
  auto s = c.isend<const double>(std::span(second), 0, 5);
  std::vector<double> a(2), b(2);
  auto ra = c.irecv(std::span(a), 0, 5);
  EXPECT_FALSE(ra.active()) << "a message was waiting: complete at once";
  c.recv(std::span(b), 0, 5);
  EXPECT_EQ(a, first) << "non-overtaking: the first message sent is received first";
  EXPECT_EQ(b, second);
}

// sendrecv's send goes to a receive posted before it (posting order), so its own receive
// finds nothing left: one rank cannot wait for another message.
TEST(SerialComm, SendrecvWithAReceivePostedBeforeThrowsWhenNothingIsLeft) {
  const cn::Comm c = cn::Comm::serial();
  std::vector<int> early(1, -1), late(1, -1);
  auto r = c.irecv(std::span(early), 0, 3);
  const std::vector<int> one{1};
  EXPECT_THROW(c.sendrecv<int>(one, 0, std::span(late), 0, 3), cn::ValueError);
  EXPECT_EQ(early[0], 1);
  EXPECT_TRUE(r.test());
  EXPECT_EQ(late[0], -1);
  const std::vector<int> two{2};
  c.sendrecv<int>(two, 0, std::span(late), 0, 3);  // nothing posted before: to itself
  EXPECT_EQ(late[0], 2);
}

TEST(SerialComm, DroppedReceivesAreCancelledAndUnmatchedWaitsThrow) {
  const cn::Comm c = cn::Comm::serial();
  const long long live = cn::detail::live_requests();
  std::vector<int> dropped_buffer(1, -1);
  { auto dropped = c.irecv(std::span(dropped_buffer), 0, 4); }
  EXPECT_EQ(cn::detail::live_requests(), live) << "no request left behind";
  const std::vector<int> v{42};
  c.send<const int>(std::span(v), 0, 4);
  EXPECT_EQ(dropped_buffer[0], -1) << "the dropped receive no longer matches";
  std::vector<int> got(1);
  c.recv(std::span(got), 0, 4);
  EXPECT_EQ(got[0], 42);

  std::vector<int> never(1);
  auto waiting = c.irecv(std::span(never), 0, 8);
  try {
    waiting.wait();
    FAIL() << "expected ValueError";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("still unmatched"), std::string::npos) << e.what();
  }
  waiting.cancel();
  EXPECT_FALSE(waiting.active());
  cn::Request moved_to;
  {
    auto r = c.irecv(std::span(never), 0, 9);
    moved_to = std::move(r);
    EXPECT_FALSE(r.active());
  }
  EXPECT_TRUE(moved_to.active()) << "a moved request stays pending";
  moved_to = cn::Request();
  EXPECT_EQ(cn::detail::live_requests(), live);
}

TEST(SerialComm, WhatOneRankCannotDoIsAClearError) {
  const cn::Comm c = cn::Comm::serial();
  std::vector<double> buf(2);
  try {
    c.recv(std::span(buf), 0, 9);
    FAIL();
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Comm::recv from rank 0 on the serial stand-in"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(c.send(std::span(buf), 1), cn::ValueError);
  EXPECT_THROW(c.bcast(std::span(buf), 1), cn::ValueError);
  try {
    std::vector<double> small(1);
    c.allreduce<double>(buf, std::span(small), cn::Op::sum);
    FAIL();
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "Comm::allreduce: the receive buffer must hold 2 elements, got 1"),
              std::string::npos)
        << e.what();
  }
  std::vector<double> big(3), one(1);
  c.send(std::span(big), 0, 4);
  EXPECT_THROW(c.recv(std::span(one), 0, 4), cn::MpiError) << "receive buffer too small";
  EXPECT_THROW(c.allgather<double>(buf, std::span(one)), cn::ValueError);
}

// Mismatched element types between send and receive buffers do not compile.
template <typename S, typename R>
concept AllreduceCompiles = requires(cn::Comm c, S s, R r) {
  c.allreduce(s, r, cn::Op::sum);
};
static_assert(AllreduceCompiles<std::span<const double>, std::span<double>>);
static_assert(!AllreduceCompiles<std::span<const int>, std::span<double>>);
static_assert(!AllreduceCompiles<std::span<const float>, std::span<double>>);
template <typename T>
concept ReducibleElement = requires(cn::Comm c, T v) {
  c.allreduce(v, cn::Op::sum);
};
static_assert(ReducibleElement<std::complex<float>>);
static_assert(!ReducibleElement<std::string>);

// probe, iprobe, Status and wtime on one rank: messages the rank sent itself.
TEST(SerialComm, ProbeSeesTheMessagesSentToItself) {
  const cn::Comm c = cn::Comm::serial();
  EXPECT_FALSE(c.iprobe().has_value());
  try {
    (void)c.probe(0, 5);
    FAIL() << "a blocking probe with nothing sent can never return on one rank";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Comm::probe from rank 0 on the serial stand-in"),
              std::string::npos)
        << e.what();
  }
  std::vector<float> out{1.0f, 2.0f, 3.0f};
  c.send(std::span(out), 0, 5);
  const auto maybe = c.iprobe(cn::any_source, cn::any_tag);
  ASSERT_TRUE(maybe.has_value());
  const cn::Status st = c.probe(0, 5);
  EXPECT_EQ(st.source, 0);
  EXPECT_EQ(st.tag, 5);
  EXPECT_EQ(st.count<float>(), 3);
  EXPECT_EQ(st.count<std::uint8_t>(), 12);
  EXPECT_THROW((void)st.count<double>(), cn::ValueError);
  EXPECT_FALSE(c.iprobe(0, 6).has_value()) << "another tag";
  std::vector<float> in(static_cast<std::size_t>(st.count<float>()));
  c.recv(std::span(in), st.source, st.tag);
  EXPECT_EQ(in, out);
  EXPECT_FALSE(c.iprobe().has_value()) << "received: gone";
  const double t = c.wtime();
  EXPECT_GE(c.wtime(), t);
  EXPECT_EQ(c.reduce(7, cn::Op::sum, 0), std::optional<int>(7));
  EXPECT_EQ(c.gather(3.5, 0), std::vector<double>{3.5});
  const std::vector<long long> one{42};
  EXPECT_EQ(c.scatter<long long>(one, 0), 42);
}

TEST(SerialComm, WorldWithoutMpiIsTheStandIn) {
  if (cn::mpi_initialized()) GTEST_SKIP() << "MPI is running";
  EXPECT_TRUE(cn::Comm::world().is_serial());
}

TEST(CudaAwareness, EnvironmentOverrideAndRecordedAnswer) {
  ::setenv("CUNUMPY_MPI_CUDA_AWARE", "yes", 1);
  auto a = cn::query_cuda_awareness();
  EXPECT_EQ(a.state, cn::Awareness::yes);
  EXPECT_EQ(a.reason, "CUNUMPY_MPI_CUDA_AWARE=yes");
  ::setenv("CUNUMPY_MPI_CUDA_AWARE", "0", 1);
  EXPECT_EQ(cn::query_cuda_awareness().state, cn::Awareness::no);
  ::setenv("CUNUMPY_MPI_CUDA_AWARE", "sometimes", 1);
  EXPECT_NE(cn::query_cuda_awareness().reason.find(
                "CUNUMPY_MPI_CUDA_AWARE=sometimes is not understood (ignored)"),
            std::string::npos)
      << cn::query_cuda_awareness().reason;
  ::unsetenv("CUNUMPY_MPI_CUDA_AWARE");
  cn::set_mpi_cuda_aware(true);
  EXPECT_EQ(cn::mpi_cuda_aware().state, cn::Awareness::yes);
  EXPECT_TRUE(cn::detail::device_pointer_ok(cn::Backend::emulated));
  cn::set_mpi_cuda_aware(std::nullopt);
  EXPECT_EQ(cn::mpi_cuda_aware().reason, cn::query_cuda_awareness().reason)
      << "forgotten: queried again";
}
