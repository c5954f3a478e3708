// Device (emulated) buffers in MPI calls: staged and counted when MPI is not CUDA-aware,
// passed directly when it is; CUDA-awareness reported with its reason.  Each test checks the
// path the site's answer implies (a CUDA-aware MPI, or CUNUMPY_MPI_CUDA_AWARE=yes: the direct
// path, which the emulated device's host-addressable memory really runs).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {
class DeviceMpi : public ::testing::Test {
 protected:
  void SetUp() override { cn::set_backend(cn::Backend::emulated); }
  void TearDown() override {
    cn::set_backend(cn::Backend::host);
    cn::set_mpi_cuda_aware(std::nullopt);
  }
  cn::Comm world = cn::Comm::world();
  int rank = world.rank();
  int size = world.size();
  // Whether this site's MPI gets device buffers staged (not CUDA-aware, or unknown).
  bool staging = !cn::detail::device_pointer_ok(cn::Backend::emulated);
};
}  // namespace

// The answer comes with what it rests on: the override when CUNUMPY_MPI_CUDA_AWARE is set, else
// the MPI library's compile-time and run-time signals (Debian's Open MPI and MPICH: no).
TEST_F(DeviceMpi, TheAwarenessComesWithItsReason) {
  const cn::CudaAwareness a = cn::mpi_cuda_aware();
  const std::optional<bool> forced = cn::detail::parse_flag(std::getenv("CUNUMPY_MPI_CUDA_AWARE"));
  if (forced) {
    EXPECT_EQ(a.state, *forced ? cn::Awareness::yes : cn::Awareness::no) << a.reason;
    EXPECT_NE(a.reason.find("CUNUMPY_MPI_CUDA_AWARE="), std::string::npos) << a.reason;
  } else {
    EXPECT_NE(a.reason.find("compile time: MPIX_CUDA_AWARE_SUPPORT"), std::string::npos)
        << a.reason;
    if (a.state == cn::Awareness::no && a.reason.find("built without CUDA") != std::string::npos) {
      EXPECT_TRUE(a.reason.find("Open MPI ") != std::string::npos ||
                  a.reason.find("MPICH ") != std::string::npos)
          << "the MPI library is named: " << a.reason;
    }
  }
  EXPECT_EQ(staging, a.state != cn::Awareness::yes);
  if (rank == 0)
    std::printf("CUDA-aware MPI: %s (%s)\n", cn::to_string(a.state).data(), a.reason.c_str());
}

TEST_F(DeviceMpi, StagedAllreduceIsCounted) {
  auto rho = cn::full<double>({1000}, static_cast<double>(rank + 1));
  ASSERT_TRUE(rho.is_device());
  auto counter = cn::count_transfers();
  const int line = __LINE__ + 1;
  cn::allreduce(world, rho, cn::Op::sum);
  // One rank: the array already holds the sum, nothing moves.  More: synchronised, then staged
  // both ways, or (CUDA-aware) passed as it is.
  const int calls = size > 1 ? 1 : 0;
  EXPECT_EQ(counter.mpi_stagings(), staging ? 2 * calls : 0) << counter.report();
  EXPECT_EQ(counter.to_host() + counter.to_device(), 0) << counter.report();
  EXPECT_EQ(counter.synchronizations(cn::SyncKind::mpi), calls) << "synchronize_for_mpi";
  const std::string where = std::string(__FILE__) + ":" + std::to_string(line);
  for (const auto& e : counter.events()) EXPECT_EQ(e.where, where);
  auto h = cn::to_host(rho);
  EXPECT_EQ(h(999), size * (size + 1) / 2.0);
  if (rank == 0) std::printf("%s\n", counter.report().c_str());
}

TEST_F(DeviceMpi, CudaAwarePathPassesTheDevicePointer) {
  cn::set_mpi_cuda_aware(true);
  auto x = cn::full<int>({10}, 1);  // (one rank: nothing to do either way)
  auto counter = cn::count_transfers();
  cn::allreduce(world, x, cn::Op::sum);
  EXPECT_EQ(counter.total(), 0) << counter.report();
  EXPECT_EQ(cn::to_host(x)(0), size);
}

TEST_F(DeviceMpi, BcastSendrecvAllgatherOnDeviceArrays) {
  auto b = cn::full<float>({4}, rank == 0 ? 3.0f : 0.0f);
  cn::bcast(world, b, 0);
  EXPECT_EQ(cn::to_host(b)(3), 3.0f);
  auto out = cn::full<double>({2}, static_cast<double>(rank));
  auto in = cn::zeros<double>({2});
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  cn::sendrecv(world, out, right, in, left, 4);
  EXPECT_EQ(cn::to_host(in)(1), static_cast<double>(left));
  auto mine = cn::full<int>({1}, rank);
  auto all = cn::zeros<int>({size});
  cn::allgather(world, mine, all);
  auto ha = cn::to_host(all);
  for (int r = 0; r < size; ++r) EXPECT_EQ(ha(r), r);
  // Mixed: host send buffer, device receive buffer.
  auto host_out = cn::full<double>({2}, 1.0, cn::Backend::host);
  cn::sendrecv(world, host_out, right, in, left);
  EXPECT_EQ(cn::to_host(in)(0), 1.0);
}

// Planted: a kernel on another stream writes the send buffer and the send does not wait for
// it.  With every stream's work deferred until something waits for it, the neighbour receives
// the buffer from before the kernel on the staged and on the direct (CUDA-aware) path; with
// the synchronisation it receives the kernel's values.
TEST_F(DeviceMpi, PlantedMissingSynchronisationBeforeASendIsCaught) {
  const cn::EmulatedStreams previous = cn::emulated_streams();
  cn::set_emulated_streams(cn::EmulatedStreams::deferred);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (bool aware : {false, true}) {
    cn::set_mpi_cuda_aware(aware);
    cn::Stream s;
    auto out = cn::zeros<double>({8});
    auto in = cn::zeros<double>({8});
    auto o = out.view<1>();
    const double value = rank + 1.0;
    {
      auto scope = cn::use_stream(s);
      cn::parallel_for(
          "write the send buffer", 8, CUNUMPY_LAMBDA(long long i) { o(i) = value; });
    }
    cn::sendrecv(world, out, right, in, left, 11);  // planted: s is not synchronised
    EXPECT_EQ(cn::to_host(in)(7), 0.0)
        << (aware ? "direct" : "staged") << " path: the missing synchronisation shows";
    s.synchronize();
    cn::sendrecv(world, out, right, in, left, 12);
    EXPECT_EQ(cn::to_host(in)(7), left + 1.0) << (aware ? "direct" : "staged");
    world.barrier();
  }
  cn::set_emulated_streams(previous);
}

TEST_F(DeviceMpi, ProbeAndRequire) {
  const cn::CudaAwareness a = cn::mpi_is_cuda_aware(world);
  EXPECT_EQ(a.state, cn::query_cuda_awareness().state) << "the library's answer off cuda";
  EXPECT_NE(a.reason.find("no exchange probe on the emulated backend"), std::string::npos)
      << a.reason;
  // The ring exchange itself, on memory MPI can read (host and emulated), passes on every rank.
  EXPECT_TRUE(cn::detail::ring_exchange_probe(world, cn::Backend::emulated));
  EXPECT_TRUE(cn::detail::ring_exchange_probe(world, cn::Backend::host));
  EXPECT_NO_THROW(cn::require_cuda_aware_mpi(world)) << "no-op off the cuda backend";
}

TEST_F(DeviceMpi, MpiBufferScopeFollowsTheAnswer) {
  auto x = cn::full<double>({8}, 1.0);
  auto counter = cn::count_transfers();
  {
    auto direct = cn::mpi_buffer(x, true, true, /*cuda_aware=*/true);
    EXPECT_FALSE(direct.staged());
    EXPECT_EQ(direct.span().data(), x.data());
  }
  EXPECT_EQ(counter.total(), 0);
  {
    auto staged = cn::mpi_buffer(x, true, true, /*cuda_aware=*/false);
    EXPECT_TRUE(staged.staged());
    world.allreduce(staged.span(), cn::Op::sum);
    staged.finish();
    staged.finish();  // once only
  }
  EXPECT_EQ(counter.mpi_stagings(), 2) << "one copy each way, counted as MPI staging";
  EXPECT_EQ(counter.to_host() + counter.to_device(), 0) << counter.report();
  EXPECT_EQ(cn::to_host(x)(7), static_cast<double>(size));
  {
    auto site = cn::mpi_buffer(x, true, true);  // the recorded or queried answer decides
    EXPECT_EQ(site.staged(), staging);
  }
  EXPECT_EQ(cn::detail::device_pointer_ok(cn::Backend::emulated), !staging)
      << "unknown or no: stage";
  EXPECT_TRUE(cn::detail::device_pointer_ok(cn::Backend::host));
}

// A receive through mpi_buffer copies back when the buffer leaves its scope, without finish()
// (the Python reference's context manager); an exception leaving the scope copies nothing back
// and does not terminate; a moved-from buffer copies nothing.
TEST_F(DeviceMpi, MpiBufferCopiesBackWhenItsScopeEnds) {
  auto x = cn::full<double>({8}, 1.0);
  {
    auto staged = cn::mpi_buffer(x, true, true, /*cuda_aware=*/false);
    ASSERT_TRUE(staged.staged());
    world.allreduce(staged.span(), cn::Op::sum);
  }
  EXPECT_EQ(cn::to_host(x)(7), static_cast<double>(size)) << "the received data was dropped";
  auto y = cn::full<double>({8}, 2.0);
  try {
    auto staged = cn::mpi_buffer(y, true, true, /*cuda_aware=*/false);
    staged.span()[0] = -1.0;
    throw std::runtime_error("an error between the MPI call and the end of the scope");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(cn::to_host(y)(0), 2.0) << "nothing is copied back while an exception unwinds";
  auto z = cn::full<double>({4}, 3.0);
  auto counter = cn::count_transfers();
  {
    auto first = cn::mpi_buffer(z, false, true, /*cuda_aware=*/false);
    first.span()[1] = 5.0;
    auto second = std::move(first);
  }
  EXPECT_EQ(counter.mpi_stagings(), 1) << "the moved-from buffer copies nothing back";
  EXPECT_EQ(cn::to_host(z)(1), 5.0);
}

TEST_F(DeviceMpi, StagingBuffersArePooledAndReused) {
  auto rho = cn::zeros<double>({4096});
  cn::allreduce(world, rho, cn::Op::sum);
  const auto before = cn::pinned_pool_stats();
  for (int i = 0; i < 5; ++i) cn::allreduce(world, rho, cn::Op::sum);
  const auto after = cn::pinned_pool_stats();
  EXPECT_EQ(after.system_allocations, before.system_allocations) << "no new staging memory";
  EXPECT_EQ(after.reuses, before.reuses + (size > 1 && staging ? 5 : 0))
      << "one rank and a CUDA-aware MPI stage nothing";
}

TEST_F(DeviceMpi, EveryCallOnDeviceArraysIsStagedAndCorrect) {
  auto counter = cn::count_transfers();
  // reduce, scan
  auto one = cn::full<long long>({2}, rank + 1LL);
  auto red = cn::zeros<long long>({2});
  cn::reduce(world, one, red, cn::Op::sum, 0);
  if (rank == 0) {
    EXPECT_EQ(cn::to_host(red)(1), size * (size + 1LL) / 2);
  }
  auto pre = cn::zeros<long long>({2});
  cn::scan(world, one, pre, cn::Op::sum);
  EXPECT_EQ(cn::to_host(pre)(0), (rank + 1LL) * (rank + 2LL) / 2);
  // gather, scatter
  auto mine = cn::full<double>({3}, static_cast<double>(rank));
  auto all = cn::zeros<double>({3 * size});
  cn::gather(world, mine, all, 0);
  if (rank == 0) {
    for (int r = 0; r < size; ++r) EXPECT_EQ(cn::to_host(all)(3 * r + 2), r);
  }
  std::vector<double> src(static_cast<std::size_t>(3 * size));
  for (int i = 0; i < 3 * size; ++i) src[i] = i;
  auto source = cn::from_host<double>(src);
  auto part = cn::zeros<double>({3});
  cn::scatter(world, source, part, 0);
  EXPECT_EQ(cn::to_host(part)(0), 3.0 * rank);
  // alltoall, allgatherv
  std::vector<int> blocks(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) blocks[r] = 100 * rank + r;
  auto a2a_in = cn::from_host<int>(blocks);
  auto a2a_out = cn::zeros<int>({size});
  cn::alltoall(world, a2a_in, a2a_out);
  for (int r = 0; r < size; ++r) EXPECT_EQ(cn::to_host(a2a_out)(r), 100 * r + rank);
  std::vector<int> counts(size, 1), displs(size);
  for (int r = 0; r < size; ++r) displs[r] = size - 1 - r;  // reversed order
  auto v_in = cn::full<float>({1}, static_cast<float>(rank));
  auto v_out = cn::zeros<float>({size});
  cn::allgatherv(world, v_in, v_out, counts, displs);
  EXPECT_EQ(cn::to_host(v_out)(0), static_cast<float>(size - 1));
  // send / recv and isend / irecv around a ring
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  auto out = cn::full<double>({4}, 10.0 + rank);
  auto in = cn::zeros<double>({4});
  auto rq = cn::irecv(world, in, left, 8);
  auto sq = cn::isend(world, out, right, 8);
  sq.wait();
  rq.wait();
  EXPECT_EQ(cn::to_host(in)(3), 10.0 + left);
  if (size > 1) {
    if (rank == 0) cn::send(world, out, 1, 9);
    if (rank == 1) {
      cn::recv(world, in, 0, 9);
      EXPECT_EQ(cn::to_host(in)(0), 10.0);
    }
  } else {
    // To itself: a blocking send before its receive may wait for ever (MPICH does; Open MPI
    // buffers it), so the send is non-blocking.
    auto to_self = cn::isend(world, out, 0, 9);
    cn::recv(world, in, 0, 9);
    to_self.wait();
    EXPECT_EQ(cn::to_host(in)(0), 10.0);
  }
  if (staging) {
    EXPECT_GT(counter.mpi_stagings(), 0) << counter.report();
  } else {
    EXPECT_EQ(counter.mpi_stagings(), 0) << "CUDA-aware: device pointers go to MPI as they are";
  }
  EXPECT_GT(counter.synchronizations(cn::SyncKind::mpi), 0);
}
