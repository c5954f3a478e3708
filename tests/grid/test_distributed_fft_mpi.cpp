// DistributedFft at 1, 2 and 4 ranks on host and emulated fields with guards: every rank's
// part of the spectrum equals the replicated FftPlan's, the inverse gives the owned cells back
// (times the size) and leaves the guards alone; 1D (FFTW's complex distributed transform),
// 2D and 3D, uneven splits and rank grids that do not match FFTW's slabs; in double and float.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <string>
#include <type_traits>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;
using cd = std::complex<double>;

namespace {
struct Case {
  std::vector<long long> n;
  int guard;
};

double f_of(long long i, long long j, long long k) {
  return std::sin(0.37 * i + 0.11 * j * j) + 0.25 * std::cos(0.9 * k + i) + 0.01 * (i + j + k);
}

cn::CartesianDecomposition decompose(const cn::Comm& w, const std::vector<long long>& n) {
  if (n.size() == 1) return {w, {n[0]}};
  if (n.size() == 2) return {w, {n[0], n[1]}};
  return {w, {n[0], n[1], n[2]}};
}

template <typename R>
void check(const cn::Comm& world, const Case& c, cn::Backend b) {
  const auto d = decompose(world, c.n);
  cn::DistributedFft fft(world, d, {.guard = c.guard, .real = cn::dtype_of<R>()}, b);
  EXPECT_EQ(fft.dtype(), cn::dtype_of<R>());
  // The values as the field holds them (float-rounded for float), the reference in double.
  const auto value = [](long long i, long long j, long long k) {
    return static_cast<double>(static_cast<R>(f_of(i, j, k)));
  };
  EXPECT_EQ(fft.distributed(), world.size() > 1);
  const int nd = d.ndim();
  const long long g = c.guard;
  const std::array<long long, 3> N{c.n[0], nd > 1 ? c.n[1] : 1, nd > 2 ? c.n[2] : 1};
  // The replicated reference.
  std::vector<double> global(static_cast<std::size_t>(N[0] * N[1] * N[2]));
  for (long long i = 0; i < N[0]; ++i)
    for (long long j = 0; j < N[1]; ++j)
      for (long long k = 0; k < N[2]; ++k) global[(i * N[1] + j) * N[2] + k] = value(i, j, k);
  const cn::Shape gshape = nd == 1   ? cn::Shape{N[0]}
                           : nd == 2 ? cn::Shape{N[0], N[1]}
                                     : cn::Shape{N[0], N[1], N[2]};
  cn::FftPlan ref(gshape, cn::Backend::host);
  auto ref_real = cn::from_host<double>(std::span<const double>(global), gshape, cn::Backend::host);
  auto ref_k = cn::empty<cd>(ref.spectrum_shape(), cn::Backend::host);
  ref.forward(ref_real, ref_k);
  // This rank's field: owned cells from the global field, guards NaN.
  const cn::Shape fs = fft.field_shape();
  std::array<long long, 3> L{1, 1, 1}, E{1, 1, 1};
  for (int a = 0; a < nd; ++a) {
    L[a] = d.local_cells(a);
    E[a] = L[a] + 2 * g;
  }
  std::vector<R> local(static_cast<std::size_t>(fs.size()), static_cast<R>(std::nan("")));
  const auto inside = [&](long long i, long long j, long long k) {
    return i >= g && i < g + L[0] && (nd < 2 || (j >= g && j < g + L[1])) &&
           (nd < 3 || (k >= g && k < g + L[2]));
  };
  const auto at = [&](long long i, long long j, long long k) { return (i * E[1] + j) * E[2] + k; };
  for (long long i = 0; i < E[0]; ++i)
    for (long long j = 0; j < E[1]; ++j)
      for (long long k = 0; k < E[2]; ++k)
        if (inside(i, j, k))
          local[at(i, j, k)] =
              static_cast<R>(value(d.to_global(0, i - g), nd > 1 ? d.to_global(1, j - g) : 0,
                                   nd > 2 ? d.to_global(2, k - g) : 0));
  auto field = cn::from_host<R>(std::span<const R>(local), fs, b);
  fft.forward(field);
  // Compare this rank's modes.
  const auto spec = cn::to_host(fft.template spectrum<R>());
  const cn::Shape ss = spec.shape();
  const long long r0 = ss[0], r1 = nd > 1 ? ss[1] : 1, r2 = nd > 2 ? ss[2] : 1;
  const cn::Shape rs = ref_k.shape();
  const long long q1 = nd > 1 ? rs[1] : 1, q2 = nd > 2 ? rs[2] : 1;
  double worst = 0.0;
  for (long long i = 0; i < r0; ++i)
    for (long long j = 0; j < r1; ++j)
      for (long long k = 0; k < r2; ++k) {
        const long long gi = fft.spectrum_begin() + i;
        cd want;
        if (nd == 1 && gi > N[0] / 2)
          want = std::conj(ref_k.host_span()[N[0] - gi]);  // the full 1D spectrum
        else
          want = ref_k.host_span()[(gi * q1 + j) * q2 + k];
        const std::complex<R> got = spec.host_span()[(i * r1 + j) * r2 + k];
        worst = std::max(worst, std::abs(cd(got.real(), got.imag()) - want));
      }
  const double size = static_cast<double>(N[0] * N[1] * N[2]);
  const double tolerance = std::is_same_v<R, float> ? 1e-5 * size : 1e-9;
  EXPECT_LT(worst, tolerance) << "rank " << world.rank() << " " << d.str();
  // Modes over all ranks: the whole spectrum once.
  const long long modes = world.allreduce(static_cast<long long>(spec.size()), cn::Op::sum);
  EXPECT_EQ(modes, nd == 1 && world.size() > 1 ? N[0] : ref_k.size());
  fft.inverse(field);
  const auto back = cn::to_host(field);
  long long wrong = 0;
  for (long long i = 0; i < E[0]; ++i)
    for (long long j = 0; j < E[1]; ++j)
      for (long long k = 0; k < E[2]; ++k) {
        const double v = static_cast<double>(back.host_span()[at(i, j, k)]);
        if (!inside(i, j, k)) {
          if (!std::isnan(v)) ++wrong;  // guards untouched
        } else if (std::abs(v - static_cast<double>(local[at(i, j, k)]) * size) >
                   (std::is_same_v<R, float> ? 1e-5 : 1e-8) * size) {
          ++wrong;
        }
      }
  EXPECT_EQ(wrong, 0) << "rank " << world.rank() << " " << d.str();
}
}  // namespace

class DistributedFftMpi : public ::testing::TestWithParam<cn::Backend> {
 protected:
  void SetUp() override {
    if (!cn::DistributedFft::across_ranks() && cn::Comm::world().size() > 1)
      GTEST_SKIP() << "this build has no FFTW-MPI for its MPI (Debian builds it for Open MPI only)";
  }
};

TEST_P(DistributedFftMpi, EveryRanksModesAreTheReplicatedTransformsAndTheInverseReturns) {
  const cn::Comm world = cn::Comm::world();
  for (const Case& c :
       std::vector<Case>{{{64}, 1}, {{30}, 2}, {{24, 18}, 2}, {{17, 10}, 0}, {{8, 6, 10}, 1}}) {
    SCOPED_TRACE("ndim " + std::to_string(c.n.size()) + " n0 " + std::to_string(c.n[0]));
    check<double>(world, c, GetParam());
  }
}

// Single precision: the same transforms to float rounding, through fftwf_mpi_* on several ranks.
TEST_P(DistributedFftMpi, SinglePrecisionFieldsToo) {
  const cn::Comm world = cn::Comm::world();
  for (const Case& c : std::vector<Case>{{{64}, 1}, {{24, 18}, 2}, {{8, 6, 10}, 1}}) {
    SCOPED_TRACE("float, ndim " + std::to_string(c.n.size()) + " n0 " + std::to_string(c.n[0]));
    check<float>(world, c, GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, DistributedFftMpi,
                         ::testing::Values(cn::Backend::host, cn::Backend::emulated),
                         [](const auto& info) { return std::string(cn::to_string(info.param)); });

TEST(DistributedFftMpiCounts, ADeviceFieldIsStagedAndCounted) {
  const cn::Comm world = cn::Comm::world();
  if (!cn::DistributedFft::across_ranks() && world.size() > 1)
    GTEST_SKIP() << "this build has no FFTW-MPI for its MPI";
  const cn::CartesianDecomposition d(world, {32, 16});
  cn::DistributedFft fft(world, d, {.guard = 1}, cn::Backend::emulated);
  auto field = cn::zeros<double>(fft.field_shape(), cn::Backend::emulated);
  cn::set_mpi_cuda_aware(false);
  auto counter = cn::count_transfers();
  fft.forward(field);
  fft.inverse(field);
  counter.stop();
  cn::set_mpi_cuda_aware(std::nullopt);
  // One rank: the local plan on the device, nothing moves.  Several: the spectrum both ways and
  // the messages both ways.
  EXPECT_EQ(counter.total(), world.size() == 1 ? 0 : 4) << counter.report();
  EXPECT_EQ(fft.stats().staged_copies, world.size() == 1 ? 0 : 4);
  EXPECT_EQ(fft.stats().transforms, 2);
}

TEST(DistributedFftMpiErrors, BadFieldsAndBoundedAxes) {
  const cn::Comm world = cn::Comm::world();
  if (!cn::DistributedFft::across_ranks() && world.size() > 1) {
    // Refused by name, with the reason, on every rank.
    try {
      cn::DistributedFft fft(world, cn::CartesianDecomposition(world, {32, 16}));
      FAIL() << "expected BackendError";
    } catch (const cn::BackendError& e) {
      EXPECT_NE(std::string(e.what()).find("built for another MPI"), std::string::npos) << e.what();
    }
    return;
  }
  const cn::CartesianDecomposition d(world, {32, 16});
  cn::DistributedFft fft(world, d, {.guard = 2}, cn::Backend::host);
  auto wrong = cn::zeros<double>({d.local_cells(0), d.local_cells(1)}, cn::Backend::host);
  EXPECT_THROW(fft.forward(wrong), cn::ValueError);
  auto other = cn::zeros<double>(fft.field_shape(), cn::Backend::emulated);
  EXPECT_THROW(fft.forward(other), cn::ValueError);
  const cn::CartesianDecomposition bounded(world, {32, 16}, {.periodic = {true, false, true}});
  EXPECT_THROW(cn::DistributedFft(world, bounded), cn::ValueError);
  EXPECT_EQ(fft.frequency(0, 3), 3);
  EXPECT_EQ(fft.frequency(0, 20), -12);
  // A double plan refuses float fields and the float spectrum, naming the option to set.
  auto single = cn::zeros<float>(fft.field_shape(), cn::Backend::host);
  try {
    fft.forward(single);
    ADD_FAILURE() << "a double plan must refuse a float field";
  } catch (const cn::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find(".real = DType::float32"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)fft.spectrum<float>(), cn::TypeError);
  EXPECT_THROW(cn::DistributedFft(world, d, {.real = cn::DType::int32}), cn::TypeError);
}
