// tests/support/test_environment.hpp: what the tests that compile kernels or write files share:
// a scratch folder, and whether the host compiler (the kernel emulator's) and NVRTC are there.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

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

// An environment variable set (or, with nullptr, unset) until the end of the scope.
struct ScopedEnv {
  std::string name, previous;
  bool had = false;
  ScopedEnv(std::string variable, const char* value) : name(std::move(variable)) {
    if (const char* p = std::getenv(name.c_str())) {
      previous = p;
      had = true;
    }
    if (value != nullptr)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  ~ScopedEnv() {
    if (had)
      ::setenv(name.c_str(), previous.c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
};

// The kernel cache in a folder of its own for one test.
struct ScopedCache {
  TempDir dir;
  ScopedEnv env{"CUNUMPY_KERNEL_CACHE", dir.path.c_str()};
  // The files in it (the folder of cunumpy's written-out headers aside).
  std::vector<std::filesystem::path> entries() const {
    std::vector<std::filesystem::path> out;
    for (const auto& e : std::filesystem::directory_iterator(dir.path))
      if (e.is_regular_file()) out.push_back(e.path());
    return out;
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
