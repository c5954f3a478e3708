// FftPlan against a direct DFT (1D, 2D, 3D, even and odd sizes), in double and float, on every
// backend (cuda with a GPU), the round trip, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "on_backend.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace cn = cunumpy;
using cd = std::complex<double>;

namespace {
// The reference: sum_x f(x) exp(-2 pi i k.x / n) for the half spectrum of the last axis.
std::vector<cd> direct_rfft(const std::vector<double>& f, const std::vector<long long>& n) {
  const long long n0 = n[0], n1 = n.size() > 1 ? n[1] : 1, n2 = n.size() > 2 ? n[2] : 1;
  const long long h = n.back() / 2 + 1;
  const long long m0 = n.size() == 1 ? h : n0,
                  m1 = n.size() == 1   ? 1
                       : n.size() == 2 ? h
                                       : n1,
                  m2 = n.size() == 3 ? h : 1;
  std::vector<cd> out(static_cast<std::size_t>(m0 * m1 * m2));
  for (long long a = 0; a < m0; ++a)
    for (long long b = 0; b < m1; ++b)
      for (long long c = 0; c < m2; ++c) {
        cd acc = 0;
        for (long long i = 0; i < n0; ++i)
          for (long long j = 0; j < n1; ++j)
            for (long long k = 0; k < n2; ++k) {
              const double phase =
                  -2.0 * M_PI *
                  (static_cast<double>(a * i) / n0 + static_cast<double>(b * j) / n1 +
                   static_cast<double>(c * k) / n2);
              acc += f[(i * n1 + j) * n2 + k] * cd(std::cos(phase), std::sin(phase));
            }
        out[(a * m1 + b) * m2 + c] = acc;
      }
  return out;
}

cn::Shape shape_of(const std::vector<long long>& n) {
  return n.size() == 1   ? cn::Shape{n[0]}
         : n.size() == 2 ? cn::Shape{n[0], n[1]}
                         : cn::Shape{n[0], n[1], n[2]};
}
}  // namespace

class Fft : public cn::testing::OnBackend {};

TEST_P(Fft, MatchesTheDirectTransformAndRoundTrips) {
  const cn::Backend b = GetParam();
  for (const std::vector<long long>& n :
       std::vector<std::vector<long long>>{{16}, {15}, {8, 6}, {5, 7}, {4, 6, 5}}) {
    const cn::Shape shape = shape_of(n);
    std::vector<double> f(static_cast<std::size_t>(shape.size()));
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = std::sin(0.7 * i) + 0.1 * (i % 3);
    cn::FftPlan plan(shape, b);
    auto real = cn::from_host<double>(std::span<const double>(f), shape, b);
    auto spectrum = cn::empty<cd>(plan.spectrum_shape(), b);
    plan.forward(real, spectrum);
    const auto want = direct_rfft(f, n);
    const auto got = cn::to_host(spectrum);
    ASSERT_EQ(static_cast<std::size_t>(got.size()), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(std::abs(got.host_span()[i] - want[i]), 0.0, 1e-10) << shape.str() << " " << i;
    auto back = cn::empty<double>(shape, b);
    plan.inverse(spectrum, back);
    const auto h = cn::to_host(back);
    for (std::size_t i = 0; i < f.size(); ++i)
      EXPECT_NEAR(h.host_span()[i], f[i] * static_cast<double>(shape.size()), 1e-9);
  }
}

TEST_P(Fft, UnalignedArraysGetTheirOwnPlan) {
  const cn::Backend b = GetParam();
  cn::FftPlan plan({12}, b);
  auto real = cn::zeros<double>({13}, b);
  auto spectrum = cn::zeros<cd>({8}, b);
  std::vector<double> f(12);
  for (int i = 0; i < 12; ++i) f[i] = std::cos(2 * M_PI * i / 12.0);
  auto h = cn::from_host<double>(std::span<const double>(f), {12}, cn::Backend::host);
  cn::detail::copy_memory(real.data() + 1, b, h.data(), cn::Backend::host, 12 * sizeof(double));
  plan.forward(real.data() + 1, spectrum.data());  // 8 bytes off the SIMD alignment
  const auto s = cn::to_host(spectrum);
  EXPECT_NEAR(s(1).real(), 6.0, 1e-12);
  EXPECT_NEAR(std::abs(s(0)), 0.0, 1e-12);
}

// Single precision: fftwf_* on host memory, cuFFT's R2C / C2R on cuda; the same transforms to
// float rounding (a relative 1e-5 of the spectrum's scale).
TEST_P(Fft, SinglePrecisionMatchesAndRoundTrips) {
  const cn::Backend b = GetParam();
  using cf = std::complex<float>;
  for (const std::vector<long long>& n :
       std::vector<std::vector<long long>>{{16}, {15}, {8, 6}, {5, 7}, {4, 6, 5}, {32, 32}}) {
    const cn::Shape shape = shape_of(n);
    std::vector<double> f(static_cast<std::size_t>(shape.size()));
    std::vector<float> ff(f.size());
    for (std::size_t i = 0; i < f.size(); ++i) {
      ff[i] = static_cast<float>(std::sin(0.7 * i) + 0.1 * (i % 3));
      f[i] = ff[i];  // the reference transforms the float values exactly
    }
    cn::FftPlan plan(shape, b, cn::DType::float32);
    EXPECT_EQ(plan.dtype(), cn::DType::float32);
    auto real = cn::from_host<float>(std::span<const float>(ff), shape, b);
    auto spectrum = cn::empty<cf>(plan.spectrum_shape(), b);
    plan.forward(real, spectrum);
    const auto want = direct_rfft(f, n);
    const auto got = cn::to_host(spectrum);
    ASSERT_EQ(static_cast<std::size_t>(got.size()), want.size());
    const double scale = static_cast<double>(shape.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      const cd g(got.host_span()[i].real(), got.host_span()[i].imag());
      EXPECT_NEAR(std::abs(g - want[i]), 0.0, 1e-5 * scale) << shape.str() << " " << i;
    }
    auto back = cn::empty<float>(shape, b);
    plan.inverse(spectrum, back);
    const auto h = cn::to_host(back);
    for (std::size_t i = 0; i < f.size(); ++i)
      EXPECT_NEAR(h.host_span()[i], f[i] * scale, 1e-5 * scale) << shape.str() << " " << i;
  }
}

TEST_P(Fft, APlanRefusesTheOtherPrecision) {
  const cn::Backend b = GetParam();
  cn::FftPlan single({8, 4}, b, cn::DType::float32);
  cn::FftPlan twice({8, 4}, b);
  EXPECT_EQ(twice.dtype(), cn::DType::float64);
  auto real = cn::zeros<double>({8, 4}, b);
  auto spectrum = cn::zeros<cd>({8, 3}, b);
  try {
    single.forward(real, spectrum);
    ADD_FAILURE() << "a float plan must refuse double arrays";
  } catch (const cn::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("the plan is for float32 data, the call passes float64"),
              std::string::npos)
        << e.what();
  }
  auto real_f = cn::zeros<float>({8, 4}, b);
  auto spectrum_f = cn::zeros<std::complex<float>>({8, 3}, b);
  EXPECT_THROW(twice.inverse(spectrum_f, real_f), cn::TypeError);
  EXPECT_THROW(cn::FftPlan({8}, b, cn::DType::int32), cn::TypeError);
}

CUNUMPY_INSTANTIATE_ON_BACKENDS(Fft);

// Large multi-axis host plans run on the OpenMP threads (FFTW's, in builds with libfftw3_omp)
// and give the one-thread plan's bits: forward and inverse at 1, 2 and 4 threads, 2D and 3D,
// powers of two and not.  Small and one-axis plans stay on one thread.
TEST(FftThreads, LargePlansUseTheThreadsWithTheSameBits) {
#if defined(_OPENMP)
  const int before = omp_get_max_threads();
  for (const std::vector<long long>& n :
       std::vector<std::vector<long long>>{{256, 256}, {300, 130}, {40, 36, 30}, {32, 32, 64}}) {
    const cn::Shape shape = shape_of(n);
    std::vector<double> f(static_cast<std::size_t>(shape.size()));
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = std::sin(1e-3 * i * (i % 97)) + 0.1 * (i % 7);
    std::vector<std::vector<cd>> spectra;
    std::vector<std::vector<double>> backs;
    for (int threads : {1, 2, 4}) {
      omp_set_num_threads(threads);
      cn::FftPlan plan(shape, cn::Backend::host);
      EXPECT_EQ(plan.threads(), CUNUMPY_TEST_FFTW_THREADS ? threads : 1) << shape.str();
      auto real = cn::from_host<double>(std::span<const double>(f), shape, cn::Backend::host);
      auto spectrum = cn::empty<cd>(plan.spectrum_shape(), cn::Backend::host);
      plan.forward(real, spectrum);
      const auto s = spectrum.host_span();
      spectra.emplace_back(s.begin(), s.end());
      plan.inverse(spectrum, real);
      const auto r = real.host_span();
      backs.emplace_back(r.begin(), r.end());
    }
    for (std::size_t t = 1; t < spectra.size(); ++t) {
      EXPECT_TRUE(spectra[t] == spectra[0])
          << shape.str() << ", " << (t == 1 ? 2 : 4) << " threads";
      EXPECT_TRUE(backs[t] == backs[0]) << shape.str() << ", " << (t == 1 ? 2 : 4) << " threads";
    }
  }
  omp_set_num_threads(4);
  // Float plans too (FFTW's fftwf_ threads): the one-thread plan's bits.
  {
    const cn::Shape shape{256, 256};
    std::vector<float> f(static_cast<std::size_t>(shape.size()));
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(std::sin(1e-3 * i));
    std::vector<std::vector<std::complex<float>>> spectra;
    for (int threads : {1, 4}) {
      omp_set_num_threads(threads);
      cn::FftPlan plan(shape, cn::Backend::host, cn::DType::float32);
      EXPECT_EQ(plan.threads(), CUNUMPY_TEST_FFTW_THREADS ? threads : 1);
      auto real = cn::from_host<float>(std::span<const float>(f), shape, cn::Backend::host);
      auto spectrum = cn::empty<std::complex<float>>(plan.spectrum_shape(), cn::Backend::host);
      plan.forward(real, spectrum);
      const auto sp = spectrum.host_span();
      spectra.emplace_back(sp.begin(), sp.end());
    }
    EXPECT_TRUE(spectra[1] == spectra[0]) << "float, 4 threads";
  }
  omp_set_num_threads(4);
  EXPECT_EQ(cn::FftPlan(cn::Shape{64, 8}, cn::Backend::host).threads(), 1);
  EXPECT_EQ(cn::FftPlan(cn::Shape{1 << 16}, cn::Backend::host).threads(), 1);
  omp_set_num_threads(before);
#else
  GTEST_SKIP() << "built without OpenMP: host FFTs run on one thread";
#endif
}

TEST(FftErrors, ShapesAndBackendsAreChecked) {
  EXPECT_THROW(cn::FftPlan(cn::Shape{2, 2, 2, 2}, cn::Backend::host), cn::ValueError);
  cn::FftPlan plan({8, 4}, cn::Backend::host);
  EXPECT_EQ(plan.spectrum_shape(), (cn::Shape{8, 3}));
  auto real = cn::zeros<double>({8, 4}, cn::Backend::host);
  auto wrong = cn::zeros<cd>({8, 4}, cn::Backend::host);
  try {
    plan.forward(real, wrong);
    ADD_FAILURE();
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("(8, 3)"), std::string::npos) << e.what();
  }
  auto other = cn::zeros<cd>({8, 3}, cn::Backend::emulated);
  EXPECT_THROW(plan.forward(real, other), cn::ValueError);
}
