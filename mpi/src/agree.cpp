// The agreement of all_ranks (agree.hpp).
#include <cunumpy/agree.hpp>

#include <string>
#include <vector>

namespace cunumpy::detail {

namespace {
thread_local std::string t_agreed;  // the last agreed failure of this thread
}  // namespace

void set_agreed(const std::string& message) {
  t_agreed = message;
}
bool is_agreed(const char* message) noexcept {
  return message != nullptr && !t_agreed.empty() && t_agreed == message;
}

std::string agree_on_failure(const Comm& comm, const std::string& failure) {
  const int size = comm.size(), rank = comm.rank();
  if (size == 1) return failure;
  // One collective when every rank succeeded: the lowest failing rank (size: none).
  const int first = comm.allreduce(failure.empty() ? size : rank, Op::min);
  if (first == size) return {};
  const int failed = comm.allreduce(failure.empty() ? 0 : 1, Op::sum);
  long long length = comm.bcast(static_cast<long long>(failure.size()), first);
  std::vector<char> text(failure.begin(), failure.end());
  text.resize(static_cast<std::size_t>(length));
  comm.bcast(std::span<char>(text), first);
  std::string agreed = "on rank " + std::to_string(first) + " of " + std::to_string(size) + ": " +
                       std::string(text.begin(), text.end());
  if (failed > 1) agreed += " (and " + std::to_string(failed - 1) + " more rank(s) failed)";
  return agreed;
}

}  // namespace cunumpy::detail
