// tests/support/on_backend.hpp: run a GoogleTest suite once per backend.
//
//   class Algorithms : public cunumpy::testing::OnBackend {};
//   TEST_P(Algorithms, Sorts) { ... }                      // runs with the backend selected
//   CUNUMPY_ON_HOST_AND_EMULATED(Algorithms);
#pragma once

#include <gtest/gtest.h>

#include <string>

#include <cunumpy/backend.hpp>

namespace cunumpy::testing {

// Selects the parameter's backend for each test and the host again after it.
class OnBackend : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override { set_backend(GetParam()); }
  void TearDown() override { set_backend(Backend::host); }
};

// Runs each test with the emulated device selected, and the host again after it.
class OnEmulated : public ::testing::Test {
 protected:
  void SetUp() override { set_backend(Backend::emulated); }
  void TearDown() override { set_backend(Backend::host); }
};

inline std::string backend_test_name(const ::testing::TestParamInfo<Backend>& info) {
  return std::string(to_string(info.param));
}

}  // namespace cunumpy::testing

// The suite on the host and on the emulated device (the device paths without a GPU).
#define CUNUMPY_ON_HOST_AND_EMULATED(suite)                                                       \
  INSTANTIATE_TEST_SUITE_P(Backends, suite, ::testing::Values(::cunumpy::Backend::host,            \
                                                              ::cunumpy::Backend::emulated),       \
                           ::cunumpy::testing::backend_test_name)
