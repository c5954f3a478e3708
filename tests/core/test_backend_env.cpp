// Backend selection at start-up from the environment.  ctest runs this program once per
// case with CUNUMPY_BACKEND / ARRAY_BACKEND set, and the expected backend and a fragment of
// the reason in CUNUMPY_TEST_EXPECT_BACKEND / CUNUMPY_TEST_EXPECT_REASON.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <cunumpy/backend.hpp>

TEST(BackendEnvironment, SelectsTheRequestedBackend) {
  const char* expect = std::getenv("CUNUMPY_TEST_EXPECT_BACKEND");
  const char* reason = std::getenv("CUNUMPY_TEST_EXPECT_REASON");
  ASSERT_NE(expect, nullptr) << "run through ctest, which sets CUNUMPY_TEST_EXPECT_BACKEND";
  ASSERT_NE(reason, nullptr);
  std::string expected_backend = expect;
  // Where a GPU exists, cuda requests are honoured instead of falling back.
  const std::string requested =
      std::getenv("CUNUMPY_BACKEND") ? std::getenv("CUNUMPY_BACKEND") : "";
  const std::string array_requested =
      std::getenv("ARRAY_BACKEND") ? std::getenv("ARRAY_BACKEND") : "";
  if (cunumpy::cuda_available() &&
      (requested == "cuda" || (requested.empty() && array_requested == "cupy")))
    GTEST_SKIP() << "a CUDA device is present, so the cuda request does not fall back";
  EXPECT_EQ(cunumpy::to_string(cunumpy::get_backend()), expected_backend);
  EXPECT_NE(cunumpy::backend_reason().find(reason), std::string::npos)
      << "reason: " << cunumpy::backend_reason() << "\nexpected to contain: " << reason;
}
