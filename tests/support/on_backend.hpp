// tests/support/on_backend.hpp: run a GoogleTest suite once per backend.
//
//   class Algorithms : public cunumpy::testing::OnBackend {};
//   TEST_P(Algorithms, Sorts) { ... }                      // runs with the backend selected
//   CUNUMPY_ON_HOST_AND_EMULATED(Algorithms);
//
// The fixtures are the installed testing helpers' (<cunumpy/testing.hpp>); the library's own
// suites run on host and emulated (the cuda tests are in their own .cu programs).
#pragma once

#include <cunumpy/testing.hpp>

#include "test_environment.hpp"

// The suite on the host and on the emulated device (the device paths without a GPU).
#define CUNUMPY_ON_HOST_AND_EMULATED(suite)                                                       \
  INSTANTIATE_TEST_SUITE_P(                                                                       \
      Backends, suite, ::testing::Values(::cunumpy::Backend::host, ::cunumpy::Backend::emulated), \
      ::cunumpy::testing::backend_test_name)

namespace cunumpy_test {
// The emulated device with its host compiler: skipped, saying why, where the kernel emulator's
// compiler (CXX, else c++) does not run.
class OnEmulatedWithCompiler : public ::cunumpy::testing::OnEmulated {
 protected:
  void SetUp() override {
    if (!have_host_compiler())
      GTEST_SKIP() << "no host compiler '" << ::cunumpy::emulation_compiler()
                   << "' for the emulator";
    ::cunumpy::testing::OnEmulated::SetUp();
  }
};
}  // namespace cunumpy_test
