// The most recent kernel launches (cuda_api.hpp): what the message of a sticky CUDA error, which
// surfaces at a later call, lists to point at the kernel that probably caused it.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>

#include <cunumpy/cuda_check.hpp>
#include <cunumpy/internal/cuda_api.hpp>
#include <cunumpy/internal/text.hpp>

namespace cunumpy::detail::cuda_api {
namespace {

struct Launch {
  char name[120];  // the kernel's expression, cut at 119 characters
  LaunchDims dims;
  void* stream;
};

struct Recent {
  std::mutex mutex;
  std::array<Launch, 4> ring{};
  std::size_t count = 0;  // launches recorded so far
};

Recent& recent() {
  static Recent* r = new Recent;  // outlives static destruction (an error may come then)
  return *r;
}

}  // namespace

void note_launch(std::string_view name, const LaunchDims& d, void* stream) noexcept {
  Recent& r = recent();
  std::lock_guard lock(r.mutex);
  Launch& l = r.ring[r.count % r.ring.size()];
  const std::size_t n = std::min(name.size(), sizeof l.name - 1);
  std::memcpy(l.name, name.data(), n);
  l.name[n] = '\0';
  l.dims = d;
  l.stream = stream;
  ++r.count;
}

std::string recent_launches() {
  Recent& r = recent();
  std::lock_guard lock(r.mutex);
  std::string out;
  const std::size_t n = std::min(r.count, r.ring.size());
  for (std::size_t i = 0; i < n; ++i) {
    const Launch& l = r.ring[(r.count - 1 - i) % r.ring.size()];
    char stream[32];
    std::snprintf(stream, sizeof stream, "%p", l.stream);
    if (!out.empty()) out += "; ";
    out += '\'';
    out += l.name;
    out += "' with grid ";
    out += dims_text(l.dims.grid[0], l.dims.grid[1], l.dims.grid[2]);
    out += " and block ";
    out += dims_text(l.dims.block[0], l.dims.block[1], l.dims.block[2]);
    out += " on stream ";
    out += l.stream == nullptr ? "0 (default)" : stream;
  }
  return out;
}

}  // namespace cunumpy::detail::cuda_api

namespace cunumpy::detail {
void note_kernel_launch(std::string_view name, unsigned int grid, unsigned int block,
                        void* stream) noexcept {
  cuda_api::note_launch(name, {{grid, 1, 1}, {block, 1, 1}}, stream);
}
}  // namespace cunumpy::detail
