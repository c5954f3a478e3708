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

// The suite on the host and on the emulated device (the device paths without a GPU).
#define CUNUMPY_ON_HOST_AND_EMULATED(suite)                                                       \
  INSTANTIATE_TEST_SUITE_P(                                                                       \
      Backends, suite, ::testing::Values(::cunumpy::Backend::host, ::cunumpy::Backend::emulated), \
      ::cunumpy::testing::backend_test_name)
