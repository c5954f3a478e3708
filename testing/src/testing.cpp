// The non-template parts of cunumpy/testing.hpp.
#include <cunumpy/testing.hpp>

namespace cunumpy::testing {

std::vector<Backend> backends() {
  std::vector<Backend> b{Backend::host, Backend::emulated};
  if (cuda_available()) b.push_back(Backend::cuda);
  return b;
}

Backend parity_backend() {
  return cuda_available() ? Backend::cuda : Backend::emulated;
}

std::vector<ParityCase> parity_cases(
    const KernelCatalog& catalog,
    const std::map<std::string, std::function<::testing::AssertionResult()>>& checks) {
  std::vector<ParityCase> out;
  for (const std::string& name : catalog.parity_cases()) {
    auto it = checks.find(name);
    out.push_back({name, it == checks.end() ? nullptr : it->second});
  }
  return out;
}

namespace detail {
std::string show_tolerance(double t) {
  std::ostringstream s;
  s << t;
  return s.str();
}

std::string index_text(const Shape& shape, long long flat) {
  std::vector<long long> idx(static_cast<std::size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    idx[static_cast<std::size_t>(d)] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  std::string s = "(";
  for (std::size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + (idx.size() == 1 ? ",)" : ")");
}
}  // namespace detail

}  // namespace cunumpy::testing
