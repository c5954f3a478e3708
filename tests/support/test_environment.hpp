// tests/support/test_environment.hpp: what the tests that compile kernels or write files share:
// a scratch folder, and whether the host compiler (the kernel emulator's) and NVRTC are there.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <cunumpy/cuda_kernel.hpp>
#include <cunumpy/errors.hpp>

namespace cunumpy_test {

// A scratch folder, removed at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() /
           ("cunumpy-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Writes `text` to path / `name`, creating its folders.
  void write(const std::filesystem::path& name, const std::string& text) const {
    std::filesystem::create_directories((path / name).parent_path());
    std::ofstream(path / name) << text;
  }
};

// Whether the kernel emulator's host compiler runs here.
inline bool have_host_compiler() {
  static const bool yes =
      std::system((cunumpy::emulation_compiler() + " --version > /dev/null 2>&1").c_str()) == 0;
  return yes;
}

// Whether NVRTC can be loaded and compiles here (it is part of the CUDA toolkit).
inline bool nvrtc_available() {
  try {
    cunumpy::CudaKernel probe("extern \"C\" __global__ void probe() {}", "probe");
    probe.compile();
    return true;
  } catch (const cunumpy::BackendError&) {
    return false;
  }
}

}  // namespace cunumpy_test
