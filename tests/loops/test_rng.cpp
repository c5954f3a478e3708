// Philox: known answers, identical uniforms on host and emulated, streams, broadcasting.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

TEST(Philox, Random123KnownAnswers) {
  struct Case {
    cunumpy_u32x4 ctr;
    unsigned key0, key1;
    cunumpy_u32x4 expected;
  };
  const Case cases[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Case& c : cases) {
    const cunumpy_u32x4 r = cunumpy_philox4x32_10(c.ctr, c.key0, c.key1);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(r.v[k], c.expected.v[k]) << "word " << k;
  }
  // The array form, on host and emulated.
  for (cn::Backend b : {cn::Backend::host, cn::Backend::emulated}) {
    std::vector<std::uint32_t> words;
    for (const Case& c : cases) words.insert(words.end(), c.ctr.v, c.ctr.v + 4);
    auto ctr = cn::from_host<std::uint32_t>(words, cn::Shape{3, 4}, b);
    auto out = cn::to_host(cn::philox4x32_10(ctr, 0, 0));
    EXPECT_EQ(out(0, 0), 0x6627e8d5u);
    EXPECT_EQ(out(0, 3), 0x9b00dbd8u);
  }
  EXPECT_THROW(cn::philox4x32_10(cn::zeros<std::uint32_t>({3, 3}), 0, 0), cn::ValueError);
}

TEST(Philox, UniformsAreIn01With53Bits) {
  double u0, u1;
  cunumpy_uniform2(1, 2, 3, &u0, &u1);
  EXPECT_EQ(u0, cunumpy_uniform(1, 2, 3));
  EXPECT_GE(u0, 0.0);
  EXPECT_LT(u0, 1.0);
  EXPECT_NE(u0, u1);
  // All-ones words give the largest value below 1.
  EXPECT_EQ(cn::detail::bits_to_uniform(0xffffffffu, 0xffffffffu), 1.0 - std::ldexp(1.0, -53));
  EXPECT_EQ(cn::detail::bits_to_uniform(0u, 0u), 0.0);
  double z0, z1;
  cunumpy_normal2(1, 2, 3, &z0, &z1);
  EXPECT_EQ(z0, cunumpy_normal(1, 2, 3));
  EXPECT_NEAR(z0 * z0 + z1 * z1, -2.0 * std::log(1.0 - u0), 1e-12);
}

TEST(Philox, ArraysBroadcastAndMatchTheKernelFunctionsOnEveryBackend) {
  const long long n = 1000;
  for (cn::Backend b : {cn::Backend::host, cn::Backend::emulated}) {
    auto ids = cn::arange<std::uint64_t>(0, n, 1, b);
    auto u = cn::to_host(cn::philox_uniform(std::uint64_t{42}, ids, std::uint64_t{7}));
    auto [a0, a1] = cn::philox_uniform2(std::uint64_t{42}, ids, std::uint64_t{7});
    auto [z0, z1] = cn::philox_normal2(std::uint64_t{42}, ids, std::uint64_t{7});
    auto z = cn::to_host(cn::philox_normal(std::uint64_t{42}, ids, std::uint64_t{7}));
    EXPECT_EQ(a0.backend(), b) << "results follow the inputs' backend";
    auto h0 = cn::to_host(a0), h1 = cn::to_host(a1), hz0 = cn::to_host(z0), hz1 = cn::to_host(z1);
    for (long long i = 0; i < n; ++i) {
      double e0, e1, f0, f1;
      cunumpy_uniform2(42, static_cast<unsigned long long>(i), 7, &e0, &e1);
      cunumpy_normal2(42, static_cast<unsigned long long>(i), 7, &f0, &f1);
      ASSERT_EQ(u(i), e0);
      ASSERT_EQ(h0(i), e0);
      ASSERT_EQ(h1(i), e1);
      ASSERT_EQ(hz0(i), f0);
      ASSERT_EQ(hz1(i), f1);
      ASSERT_EQ(z(i), f0);
    }
  }
  // int64 ids work too; scalars only give one value on the active backend.
  auto ids64 = cn::arange<std::int64_t>(0, 5, 1, cn::Backend::host);
  EXPECT_EQ(cn::philox_uniform(std::uint64_t{1}, ids64, std::uint64_t{0})(3),
            cunumpy_uniform(1, 3, 0));
  EXPECT_EQ(cn::philox_uniform(std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3}).shape().str(),
            "(1,)");
  auto other = cn::arange<std::uint64_t>(0, 4, 1, cn::Backend::host);
  EXPECT_THROW(cn::philox_uniform(ids64, other, std::uint64_t{0}), cn::ValueError)
      << "shapes (5,) and (4,)";
}

// The host's vectorised loops (eight Philox calls at a time where the CPU has AVX-512) give the
// kernel functions' bits: odd lengths (a vector part and a scalar tail), words with their high
// bits set in the seed, the stream ids and the counter.
TEST(Philox, VectorisedHostLoopsMatchTheKernelFunctions) {
  const long long n = 1003;
  const std::uint64_t seed = 0xF00DFACE12345678ull, counter = 0x9ABCDEF012345678ull;
  auto host_ids = cn::Array<std::uint64_t>(cn::Shape{n}, cn::Backend::host);
  for (long long i = 0; i < n; ++i)
    host_ids.host_span()[static_cast<std::size_t>(i)] =
        static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull;
  for (cn::Backend b : {cn::Backend::host, cn::Backend::emulated}) {
    auto ids = cn::Array<std::uint64_t>(cn::Shape{n}, b);
    cn::copy(ids, host_ids);
    auto u = cn::to_host(cn::philox_uniform(seed, ids, counter));
    auto [a0, a1] = cn::philox_uniform2(seed, ids, counter);
    auto h0 = cn::to_host(a0), h1 = cn::to_host(a1);
    for (long long i = 0; i < n; ++i) {
      double e0, e1;
      cunumpy_uniform2(seed, host_ids(i), counter, &e0, &e1);
      ASSERT_EQ(u(i), e0) << i;
      ASSERT_EQ(h0(i), e0) << i;
      ASSERT_EQ(h1(i), e1) << i;
    }
  }
}

// Generator fills are low + (high - low) * u with a rounded product: no fused multiply-add on
// the host either, so the device's numbers (which never fuse) are the host's.
TEST(RandomStreams, UniformFillsRoundTheProductAsTheDeviceDoes) {
  cn::RandomStreams streams;
  streams.seed(99, 3);
  const double low = -0.3, high = 1.9;  // (high - low) * u is inexact
  for (long long n : {1LL, 2LL, 17LL, 1001LL}) {
    for (cn::Backend b : {cn::Backend::host, cn::Backend::emulated}) {
      auto g = streams.make_generator(0xABCDEF0123456789ull, b);
      (void)g.random({3});  // a counter that is not a multiple of eight: base = 2
      auto x = cn::to_host(g.uniform(low, high, {n}));
      for (long long j = 0; j < n; ++j) {
        double u0, u1;
        cunumpy_uniform2(g.seed(), g.stream(), 2 + static_cast<std::uint64_t>(j / 2), &u0, &u1);
        volatile double product = (high - low) * (j % 2 == 0 ? u0 : u1);
        const double expected = low + product;
        ASSERT_EQ(x(j), expected) << "element " << j << " of " << n;
      }
    }
  }
}

TEST(RandomStreams, ReproducibleIndependentAndTheSameOnEveryBackend) {
  cn::RandomStreams streams;
  streams.seed(2024, 0);
  auto a = cn::to_host(streams.generator(cn::Backend::host).random({1001}));
  auto b = cn::to_host(streams.generator(cn::Backend::emulated).random({1001}));
  for (int i = 0; i < 1001; ++i)
    ASSERT_EQ(a(i), b(i)) << "host and device streams agree bit for bit";
  auto next = cn::to_host(streams.generator(cn::Backend::host).random({4}));
  EXPECT_NE(next(0), a(0)) << "a stream moves on";
  streams.seed(2024, 0);
  EXPECT_EQ(cn::to_host(streams.generator(cn::Backend::host).random({3}))(2), a(2))
      << "re-seeding repeats";
  streams.seed(2024, 1);
  auto r1 = cn::to_host(streams.generator(cn::Backend::host).random({1001}));
  int equal = 0;
  for (int i = 0; i < 1001; ++i) equal += r1(i) == a(i);
  EXPECT_EQ(equal, 0) << "rank 1's stream differs from rank 0's";
  // Statistics of the fills.
  auto n = cn::to_host(streams.normal(1.0, 2.0, {200000}));
  double mean = 0, var = 0;
  for (double x : n.host_span()) mean += x;
  mean /= 200000;
  for (double x : n.host_span()) var += (x - mean) * (x - mean);
  var /= 200000;
  EXPECT_NEAR(mean, 1.0, 0.02);
  EXPECT_NEAR(var, 4.0, 0.05);
  auto u = cn::to_host(streams.uniform(-1.0, 3.0, {1000}));
  for (double x : u.host_span()) ASSERT_TRUE(x >= -1.0 && x < 3.0);
  auto sn = streams.standard_normal({2, 3});
  EXPECT_EQ(sn.shape().str(), "(2, 3)");
  EXPECT_THROW(streams.normal(0.0, -1.0, {2}), cn::ValueError);
  // A component's generator is its own stream.
  auto own = streams.make_generator(7, cn::Backend::host);
  EXPECT_NE(cn::to_host(own.random({1}))(0),
            cn::to_host(streams.make_generator(8, cn::Backend::host).random({1}))(0));
  // Each fill takes whole Philox calls (two numbers each): the second fill of one number is
  // number 2 of a fresh stream.
  EXPECT_EQ(cn::to_host(own.random({1}))(0),
            cn::to_host(streams.make_generator(7, cn::Backend::host).random({4}))(2));
  // Seeds from the operating system differ.
  cn::RandomStreams s1, s2;
  s1.seed();
  s2.seed();
  EXPECT_NE(s1.seed_value(), s2.seed_value());
  EXPECT_THROW(s1.seed(1, -1), cn::ValueError);
}

TEST(RandomStreams, KeyedByGlobalIdIndependentOfTheDecomposition) {
  // Particles 0..99 drawn by "one rank", and split over "four ranks": the same numbers.
  auto all = cn::philox_uniform(
      std::uint64_t{5}, cn::arange<std::uint64_t>(0, 100, 1, cn::Backend::host), std::uint64_t{0});
  for (int r = 0; r < 4; ++r) {
    auto part = cn::philox_uniform(
        std::uint64_t{5}, cn::arange<std::uint64_t>(25 * r, 25 * r + 25, 1, cn::Backend::host),
        std::uint64_t{0});
    for (int i = 0; i < 25; ++i) ASSERT_EQ(part(i), all(25 * r + i));
  }
}
