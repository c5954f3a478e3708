// Seeded random-input drivers for the parsers and the algorithm entry points: every input
// either gives a result that a simple reference confirms, or a cunumpy::Error; nothing else
// (no crash, no other exception, no hang).  Each driver runs for CUNUMPY_FUZZ_SECONDS (default
// 1) from CUNUMPY_FUZZ_SEED (default: drawn, and printed so a failure can be replayed).  Run
// under the sanitizers in CI, so memory errors show too.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <cunumpy/cuda_signature.hpp>
#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {

std::uint64_t seed() {
  static const std::uint64_t s = [] {
    if (const char* v = std::getenv("CUNUMPY_FUZZ_SEED"))
      return static_cast<std::uint64_t>(std::strtoull(v, nullptr, 10));
    return static_cast<std::uint64_t>(std::random_device{}());
  }();
  return s;
}

double budget() {
  const char* v = std::getenv("CUNUMPY_FUZZ_SECONDS");
  return v != nullptr ? std::atof(v) : 1.0;
}

// Runs `one(rng)` until the budget is spent; reports the iterations and the seed.
template <typename F>
void drive(const char* name, F&& one) {
  std::mt19937_64 rng(seed() ^ std::hash<std::string>{}(name));
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(budget());
  long long n = 0;
  do {
    SCOPED_TRACE(std::string(name) + " iteration " + std::to_string(n) +
                 ", CUNUMPY_FUZZ_SEED=" + std::to_string(seed()));
    one(rng);
    ++n;
    if (::testing::Test::HasFailure()) break;
  } while (std::chrono::steady_clock::now() < end);
  std::printf("%s: %lld inputs (CUNUMPY_FUZZ_SEED=%llu)\n", name, n,
              static_cast<unsigned long long>(seed()));
}

// Random text: from a small alphabet of what parsers meet, or any byte.
std::string text(std::mt19937_64& rng, const std::string& alphabet, std::size_t max_len) {
  std::string s(rng() % (max_len + 1), ' ');
  for (char& c : s)
    c = rng() % 8 == 0 ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
  return s;
}

// A text, or nothing else than cunumpy::Error.
template <typename F>
void only_errors(F&& f) {
  try {
    f();
  } catch (const cn::Error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << "an exception that is not a cunumpy::Error: " << e.what();
  }
}

}  // namespace

TEST(Fuzz, BackendNamesAndFlags) {
  drive("parse_backend", [](std::mt19937_64& rng) {
    const std::string s = text(rng, "hostcudaemulatednumpycupy ", 12);
    only_errors([&] { (void)cn::parse_backend(s); });
    const std::string f = text(rng, "01truefalseyesnoonoff", 6);
    (void)cn::detail::parse_flag(f.c_str());
  });
}

TEST(Fuzz, VersionStrings) {
  drive("require_version", [](std::mt19937_64& rng) {
    const std::string v = text(rng, "0123456789.rcab", 40);
    only_errors([&] { cn::require_version(v); });
  });
  EXPECT_NO_THROW(cn::require_version("0.0.1"));
  EXPECT_THROW(cn::require_version("99.0"), cn::VersionError);
}

TEST(Fuzz, LauncherVariables) {
  const std::vector<std::string> names = {"OMPI_COMM_WORLD_SIZE",
                                          "OMPI_COMM_WORLD_RANK",
                                          "OMPI_COMM_WORLD_LOCAL_RANK",
                                          "OMPI_COMM_WORLD_LOCAL_SIZE",
                                          "PMI_RANK",
                                          "PMI_SIZE",
                                          "SLURM_PROCID",
                                          "SLURM_NTASKS",
                                          "SLURM_STEP_ID",
                                          "SLURM_LOCALID",
                                          "SLURM_STEP_TASKS_PER_NODE",
                                          "LOCAL_RANK",
                                          "CUNUMPY_MPI"};
  drive("detect_launcher", [&](std::mt19937_64& rng) {
    std::map<std::string, std::string> env;
    for (const auto& n : names)
      if (rng() % 3 == 0) env[n] = text(rng, "0123456789-(x),", 10);
    const cn::LauncherInfo i = cn::detect_launcher([&](const char* name) -> const char* {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
    EXPECT_GE(i.local_size, 1);
    EXPECT_GE(i.local_rank, 0);
    EXPECT_LT(i.local_rank, i.local_size);
  });
}

TEST(Fuzz, CudaSignatures) {
  const std::vector<std::string> pieces = {"extern \"C\" ",
                                           "__global__ ",
                                           "void ",
                                           "k",
                                           "(",
                                           ")",
                                           "{}",
                                           "double",
                                           "*",
                                           "const ",
                                           "int ",
                                           "x",
                                           ", ",
                                           "Array2D<float>",
                                           "&",
                                           "[3]",
                                           "=1",
                                           "template <typename T> ",
                                           "T ",
                                           "long long ",
                                           "unsigned ",
                                           "/*c*/",
                                           "struct S ",
                                           "#define A\n",
                                           " "};
  drive("parse_cuda_signature", [&](std::mt19937_64& rng) {
    std::string src;
    const int n = static_cast<int>(rng() % 24);
    for (int i = 0; i < n; ++i) src += pieces[rng() % pieces.size()];
    only_errors([&] { (void)cn::parse_cuda_signature(src, "k"); });
    only_errors([&] { (void)cn::cuda_kernel_names(src); });
  });
}

TEST(Fuzz, SortByKeyEqualsStableSort) {
  drive("sort_by_key", [](std::mt19937_64& rng) {
    const long long n = static_cast<long long>(rng() % 5000);
    const int bits = 1 + static_cast<int>(rng() % 64);
    std::vector<std::uint64_t> keys(static_cast<std::size_t>(n));
    for (auto& k : keys) k = bits == 64 ? rng() : rng() & ((std::uint64_t{1} << bits) - 1);
    const auto a = cn::from_host<std::uint64_t>(keys, {n}, cn::Backend::host);
    const auto payload = cn::arange<std::int64_t>(0, n, 1, cn::Backend::host);
    const auto [sorted, order, moved] = cn::sort_by_key(a, payload);
    std::vector<std::int64_t> ref(static_cast<std::size_t>(n));
    std::iota(ref.begin(), ref.end(), 0);
    std::stable_sort(ref.begin(), ref.end(), [&](auto x, auto y) {
      return keys[static_cast<std::size_t>(x)] < keys[static_cast<std::size_t>(y)];
    });
    for (long long i = 0; i < n; ++i) {
      ASSERT_EQ(order(i), ref[static_cast<std::size_t>(i)])
          << "n " << n << " bits " << bits << " at " << i;
      ASSERT_EQ(moved(i), ref[static_cast<std::size_t>(i)]);
      ASSERT_EQ(sorted(i), keys[static_cast<std::size_t>(ref[static_cast<std::size_t>(i)])]);
    }
  });
}

TEST(Fuzz, SegmentSumEqualsASequentialSumBitForBit) {
  drive("segment_sum", [](std::mt19937_64& rng) {
    const long long n = static_cast<long long>(rng() % 5000);
    const long long segments = 1 + static_cast<long long>(rng() % 300);
    std::vector<std::int64_t> keys(static_cast<std::size_t>(n));
    std::vector<double> values(static_cast<std::size_t>(n));
    std::uniform_real_distribution<double> u(-1e3, 1e3);
    for (long long i = 0; i < n; ++i) {
      keys[static_cast<std::size_t>(i)] =
          static_cast<std::int64_t>(rng() % (segments + 3)) - 2;  // some negative
      values[static_cast<std::size_t>(i)] = u(rng);
    }
    const bool bad = std::any_of(keys.begin(), keys.end(), [&](auto k) { return k >= segments; });
    const auto k = cn::from_host<std::int64_t>(keys, {n}, cn::Backend::host);
    const auto v = cn::from_host<double>(values, {n}, cn::Backend::host);
    if (bad) {
      EXPECT_THROW((void)cn::segment_sum(k, v, segments), cn::ValueError) << "a key >= n_segments";
      return;
    }
    const auto out = cn::segment_sum(k, v, segments);
    std::vector<double> ref(static_cast<std::size_t>(segments), 0.0);
    for (long long i = 0; i < n; ++i)
      if (keys[static_cast<std::size_t>(i)] >= 0)
        ref[static_cast<std::size_t>(keys[static_cast<std::size_t>(i)])] +=
            values[static_cast<std::size_t>(i)];
    for (long long s = 0; s < segments; ++s)
      ASSERT_EQ(out(s), ref[static_cast<std::size_t>(s)]) << "segment " << s;
  });
}
