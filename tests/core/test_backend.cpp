// Backend selection, the cuda fallback and its reason, use_backend, version checks.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

TEST(BackendParsing, EnvironmentValues) {
  using cn::Backend;
  using cn::detail::backend_from_environment;
  EXPECT_EQ(backend_from_environment(nullptr, nullptr).backend, Backend::host);
  EXPECT_NE(backend_from_environment(nullptr, nullptr).reason.find("default"), std::string::npos);
  EXPECT_EQ(backend_from_environment("", "").backend, Backend::host);
  EXPECT_EQ(backend_from_environment("host", nullptr).backend, Backend::host);
  EXPECT_EQ(backend_from_environment("cuda", nullptr).backend, Backend::cuda);
  EXPECT_EQ(backend_from_environment("emulated", nullptr).backend, Backend::emulated);
  EXPECT_EQ(backend_from_environment("Emulated", nullptr).backend, Backend::emulated);
  EXPECT_EQ(backend_from_environment(nullptr, "numpy").backend, Backend::host);
  EXPECT_EQ(backend_from_environment(nullptr, "cupy").backend, Backend::cuda);
  EXPECT_EQ(backend_from_environment("emulated", "cupy").backend, Backend::emulated)
      << "CUNUMPY_BACKEND takes precedence over ARRAY_BACKEND";
  EXPECT_TRUE(backend_from_environment("host", nullptr).warning.empty());
}

TEST(BackendParsing, UnknownValuesWarnAndUseHost) {
  const auto r = cn::detail::backend_from_environment("gpu", nullptr);
  EXPECT_EQ(r.backend, cn::Backend::host);
  EXPECT_NE(r.warning.find("CUNUMPY_BACKEND=gpu"), std::string::npos);
  EXPECT_NE(r.warning.find("host, cuda, emulated"), std::string::npos) << r.warning;
  const auto a = cn::detail::backend_from_environment(nullptr, "jax");
  EXPECT_EQ(a.backend, cn::Backend::host);
  EXPECT_NE(a.warning.find("numpy, cupy"), std::string::npos) << a.warning;
}

TEST(BackendParsing, Flags) {
  EXPECT_EQ(cn::detail::parse_flag("1"), true);
  EXPECT_EQ(cn::detail::parse_flag("Yes"), true);
  EXPECT_EQ(cn::detail::parse_flag("off"), false);
  EXPECT_EQ(cn::detail::parse_flag("0"), false);
  EXPECT_FALSE(cn::detail::parse_flag("maybe").has_value());
  EXPECT_FALSE(cn::detail::parse_flag("").has_value());
  EXPECT_FALSE(cn::detail::parse_flag(nullptr).has_value());
}

TEST(BackendParsing, ParseBackendNames) {
  EXPECT_EQ(cn::parse_backend("numpy"), cn::Backend::host);
  EXPECT_EQ(cn::parse_backend("cupy"), cn::Backend::cuda);
  EXPECT_EQ(cn::parse_backend("emulated"), cn::Backend::emulated);
  try {
    cn::parse_backend("tpu");
    FAIL() << "expected ValueError";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("host, cuda, emulated"), std::string::npos) << e.what();
  }
}

TEST(Backend, SetAndGet) {
  cn::set_backend(cn::Backend::emulated);
  EXPECT_EQ(cn::get_backend(), cn::Backend::emulated);
  EXPECT_TRUE(cn::emulated_backend());
  EXPECT_TRUE(cn::device_backend());
  EXPECT_FALSE(cn::host_backend());
  EXPECT_EQ(cn::backend_reason(), "set_backend(emulated)");
  cn::set_backend("host");
  EXPECT_TRUE(cn::host_backend());
  EXPECT_FALSE(cn::cuda_backend());
}

TEST(Backend, CudaRequestFallsBackWithReason) {
  if (cn::cuda_available()) GTEST_SKIP() << "a CUDA device is present: no fallback to test";
  cn::set_backend(cn::Backend::cuda);
  EXPECT_EQ(cn::get_backend(), cn::Backend::host);
  const std::string reason = cn::backend_reason();
  EXPECT_NE(reason.find("set_backend(cuda), but CUDA is unavailable"), std::string::npos) << reason;
  EXPECT_NE(reason.find(cn::cuda_unavailable_reason()), std::string::npos) << reason;
  EXPECT_EQ(cn::device_count(), 0);
#if CUNUMPY_HAS_CUDA()
  // The toolkit is here but no driver: the CUDA runtime's own answer is in the reason.
  EXPECT_NE(cn::cuda_unavailable_reason().find("cudaGetDeviceCount returned"), std::string::npos)
      << cn::cuda_unavailable_reason();
#else
  EXPECT_NE(cn::cuda_unavailable_reason().find("built without CUDA"), std::string::npos);
#endif
}

TEST(Backend, UseBackendRestoresAfterException) {
  cn::set_backend(cn::Backend::host);
  const std::string before = cn::backend_reason();
  try {
    auto guard = cn::use_backend(cn::Backend::emulated);
    EXPECT_EQ(cn::get_backend(), cn::Backend::emulated);
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(cn::get_backend(), cn::Backend::host);
  EXPECT_EQ(cn::backend_reason(), before);
  {
    auto outer = cn::use_backend(cn::Backend::emulated);
    {
      auto inner = cn::use_backend(cn::Backend::host);
      EXPECT_TRUE(cn::host_backend());
    }
    EXPECT_TRUE(cn::emulated_backend());
  }
  EXPECT_TRUE(cn::host_backend());
}

TEST(Backend, SynchronizeIsCountedOnDeviceBackendsOnly) {
  auto host = cn::use_backend(cn::Backend::host);
  auto counter = cn::count_transfers();
  cn::synchronize();
  EXPECT_EQ(counter.synchronizations(), 0);
  {
    auto emulated = cn::use_backend(cn::Backend::emulated);
    cn::synchronize();
  }
  EXPECT_EQ(counter.synchronizations(cn::SyncKind::device), 1);
  EXPECT_EQ(counter.total(), 0) << "a synchronisation is not a transfer";
}

TEST(Version, RequireVersion) {
  EXPECT_EQ(cn::version(), CUNUMPY_VERSION_STRING);
  EXPECT_NO_THROW(cn::require_version("0.0.1"));
  EXPECT_NO_THROW(cn::require_version(CUNUMPY_VERSION_STRING));
  EXPECT_NO_THROW(cn::require_version("0.1"));
  EXPECT_NO_THROW(cn::require_version("0.1.0rc1"));
  EXPECT_THROW(cn::require_version("0.1.1"), cn::VersionError);
  EXPECT_THROW(cn::require_version("99"), cn::VersionError);
  try {
    cn::require_version("0.4.0");
    FAIL() << "0.4.0 is newer than this cunumpy";
  } catch (const cn::VersionError& e) {
    EXPECT_NE(std::string(e.what()).find("older than the required 0.4.0"), std::string::npos);
  }
  EXPECT_THROW(cn::require_version("latest"), cn::ValueError);
  static_assert(std::is_base_of_v<cn::Error, cn::VersionError>);
}

// A version part too long for a number is a ValueError naming it, not std::out_of_range.
TEST(Version, AnOverlongPartIsAClearError) {
  try {
    cn::require_version("0.99999999999999999999999");
    FAIL() << "expected ValueError";
  } catch (const cn::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("the part '99999999999999999999999'"), std::string::npos)
        << e.what();
  }
}
