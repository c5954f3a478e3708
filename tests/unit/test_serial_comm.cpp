// The serial stand-in: every call, as the Python reference's SerialComm.
#include <gtest/gtest.h>

#include <complex>
#include <cstdlib>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

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
  c.alltoallv<int>(std::vector<int>{1, 2, 3}, std::vector<int>{2}, std::vector<int>{1}, std::span(a2a),
                   std::vector<int>{2}, std::vector<int>{0});
  EXPECT_EQ(a2a, (std::vector<int>{2, 3, 0, 0}));
  EXPECT_THROW(c.allgatherv<double>(std::vector<double>{1, 2}, std::span(recv), std::vector<int>{2}, std::vector<int>{5}),
               cn::ValueError) << "block past the end";
  EXPECT_THROW(c.allgatherv<double>(std::vector<double>{1}, std::span(recv), counts, displs), cn::ValueError)
      << "count differs from the send buffer";
  EXPECT_THROW(c.gatherv<double>(std::vector<double>{1, 2}, std::span(g), std::vector<int>{2, 2}, std::vector<int>{0, 2}, 0),
               cn::ValueError) << "one entry per rank";
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

TEST(SerialComm, WhatOneRankCannotDoIsAClearError) {
  const cn::Comm c = cn::Comm::serial();
  std::vector<double> buf(2);
  try {
    c.recv(std::span(buf), 0, 9);
    FAIL();
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Comm::recv from rank 0 on the serial stand-in"), std::string::npos) << e.what();
  }
  EXPECT_THROW(c.send(std::span(buf), 1), cn::ValueError);
  EXPECT_THROW(c.bcast(std::span(buf), 1), cn::ValueError);
  try {
    std::vector<double> small(1);
    c.allreduce<double>(buf, std::span(small), cn::Op::sum);
    FAIL();
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Comm::allreduce: the receive buffer must hold 2 elements, got 1"),
              std::string::npos) << e.what();
  }
  std::vector<double> big(3), one(1);
  c.send(std::span(big), 0, 4);
  EXPECT_THROW(c.recv(std::span(one), 0, 4), cn::MpiError) << "receive buffer too small";
  EXPECT_THROW(c.allgather<double>(buf, std::span(one)), cn::ValueError);
}

// Mismatched element types between send and receive buffers do not compile.
template <typename S, typename R>
concept AllreduceCompiles = requires(cn::Comm c, S s, R r) { c.allreduce(s, r, cn::Op::sum); };
static_assert(AllreduceCompiles<std::span<const double>, std::span<double>>);
static_assert(!AllreduceCompiles<std::span<const int>, std::span<double>>);
static_assert(!AllreduceCompiles<std::span<const float>, std::span<double>>);
template <typename T>
concept ReducibleElement = requires(cn::Comm c, T v) { c.allreduce(v, cn::Op::sum); };
static_assert(ReducibleElement<std::complex<float>>);
static_assert(!ReducibleElement<std::string>);

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
  ::unsetenv("CUNUMPY_MPI_CUDA_AWARE");
  cn::set_mpi_cuda_aware(true);
  EXPECT_EQ(cn::mpi_cuda_aware().state, cn::Awareness::yes);
  EXPECT_TRUE(cn::detail::device_pointer_ok(cn::Backend::emulated));
  cn::set_mpi_cuda_aware(std::nullopt);
  EXPECT_EQ(cn::mpi_cuda_aware().reason, cn::query_cuda_awareness().reason) << "forgotten: queried again";
}
