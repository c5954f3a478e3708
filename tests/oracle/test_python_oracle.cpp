// The C++ library against the Python cunumpy 0.7.1 (tests/oracle/make_reference.py): Philox
// uniforms bit for bit (normals within 4 ulps: log, sqrt, sin and cos may round differently),
// Morton keys, sort_by_key's order and segment_sum bit for bit, on the host and on the
// emulated device.  CUNUMPY_ORACLE_FILE names the reference; without it (no Python package
// could be installed) the test skips and says so.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "on_backend.hpp"

namespace cn = cunumpy;

namespace {

struct Reference {
  std::map<std::string, std::vector<std::string>> values;
  std::string version;
};

const Reference& reference() {
  static const Reference r = [] {
    Reference out;
    const char* path = std::getenv("CUNUMPY_ORACLE_FILE");
    if (path == nullptr) return out;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream s(line);
      std::string name, kind;
      long long n = 0;
      s >> name >> kind >> n;
      std::vector<std::string> v(static_cast<std::size_t>(n));
      for (auto& x : v) s >> x;
      if (name == "version") out.version = v.empty() ? "" : v[0];
      out.values[name] = std::move(v);
    }
    return out;
  }();
  return r;
}

std::vector<double> floats(const std::string& name) {
  std::vector<double> out;
  for (const std::string& s : reference().values.at(name))
    out.push_back(std::strtod(s.c_str(), nullptr));
  return out;
}
std::vector<std::uint64_t> words(const std::string& name) {
  std::vector<std::uint64_t> out;
  for (const std::string& s : reference().values.at(name)) out.push_back(std::stoull(s));
  return out;
}

void expect_bits(const std::string& name, const cn::Array<double>& ours, int ulps = 0) {
  const auto ref = floats(name);
  const auto h = cn::to_host(ours);
  ASSERT_EQ(static_cast<long long>(ref.size()), h.size()) << name;
  for (long long i = 0; i < h.size(); ++i) {
    if (ulps == 0) {
      ASSERT_EQ(h(i), ref[static_cast<std::size_t>(i)]) << name << "[" << i << "]";
    } else {
      const double tol =
          ulps * std::abs(std::nextafter(ref[static_cast<std::size_t>(i)], INFINITY) -
                          ref[static_cast<std::size_t>(i)]);
      ASSERT_NEAR(h(i), ref[static_cast<std::size_t>(i)], tol) << name << "[" << i << "]";
    }
  }
}
template <typename T>
void expect_words(const std::string& name, const cn::Array<T>& ours) {
  const auto ref = words(name);
  const auto h = cn::to_host(ours);
  ASSERT_EQ(static_cast<long long>(ref.size()), h.size()) << name;
  for (long long i = 0; i < h.size(); ++i)
    ASSERT_EQ(static_cast<std::uint64_t>(h(i)), ref[static_cast<std::size_t>(i)])
        << name << "[" << i << "]";
}

class Oracle : public cn::testing::OnBackend {
 protected:
  void SetUp() override {
    if (reference().values.empty())
      GTEST_SKIP()
          << "no reference from the Python cunumpy: CUNUMPY_ORACLE_FILE is unset or empty (the "
             "python_oracle_reference test could not install cunumpy==0.7.1)";
    cn::testing::OnBackend::SetUp();
  }
};

}  // namespace

TEST_P(Oracle, PhiloxNumbersEqualThePythonLibrarys) {
  EXPECT_EQ(reference().version, "0.7.1");
  const long long n = 1000;
  auto ids = cn::arange<std::uint64_t>(0, n, 1);
  for (auto [seed, counter] :
       {std::pair<std::uint64_t, std::uint64_t>{7, 3}, {(1ULL << 40) + 3, (1ULL << 33) + 1}}) {
    const std::string tag = std::to_string(seed) + "_" + std::to_string(counter);
    expect_bits("uniform_" + tag, cn::philox_uniform(seed, ids, counter));
    auto [u0, u1] = cn::philox_uniform2(seed, ids, counter);
    expect_bits("uniform2a_" + tag, u0);
    expect_bits("uniform2b_" + tag, u1);
    expect_bits("normal_" + tag, cn::philox_normal(seed, ids, counter), 4);
    auto [z0, z1] = cn::philox_normal2(seed, ids, counter);
    expect_bits("normal2a_" + tag, z0, 4);
    expect_bits("normal2b_" + tag, z1, 4);
  }
}

TEST_P(Oracle, MortonSortAndSegmentSumEqualThePythonLibrarys) {
  const long long n = 1000;
  std::vector<double> p2(2 * n), p2s(2 * n), p3(3 * n);
  for (long long i = 0; i < n; ++i) {
    const double d = static_cast<double>(i);
    const double a = std::fmod(d * 0.6180339887498949, 1.0),
                 b = std::fmod(d * 0.7548776662466927, 1.0),
                 c = std::fmod(d * 0.5698402909980532, 1.0);
    p2[2 * i] = a;
    p2[2 * i + 1] = b;
    p2s[2 * i] = a * 3.0 - 1.0;
    p2s[2 * i + 1] = b * 3.0 - 1.0;
    p3[3 * i] = a;
    p3[3 * i + 1] = b;
    p3[3 * i + 2] = c;
  }
  const std::vector<double> zero2{0, 0}, one2{1, 1}, low2{-1, -1}, high2{2, 2}, zero3{0, 0, 0},
      one3{1, 1, 1};
  expect_words("morton2_10", cn::morton_keys(cn::from_host<double>(p2, {n, 2}), zero2, one2, 10));
  expect_words("morton2_32", cn::morton_keys(cn::from_host<double>(p2s, {n, 2}), low2, high2, 32));
  expect_words("morton3_21", cn::morton_keys(cn::from_host<double>(p3, {n, 3}), zero3, one3, 21));
  std::vector<std::uint64_t> keys(n);
  for (long long i = 0; i < n; ++i)
    keys[i] = (static_cast<std::uint64_t>(i) * 2654435761ULL) % 97ULL;
  auto [sorted, order] = cn::sort_by_key(cn::from_host<std::uint64_t>(keys, {n}));
  expect_words("sort_keys", sorted);
  expect_words("sort_order", order);
  std::vector<std::int64_t> seg(n);
  std::vector<double> values(n);
  for (long long i = 0; i < n; ++i) {
    seg[i] = (i * 7) % 50;
    values[i] = std::sin(static_cast<double>(i));
  }
  expect_bits("segment_sum", cn::segment_sum(cn::from_host<std::int64_t>(seg, {n}),
                                             cn::from_host<double>(values, {n}), 50));
}

namespace {
// A report's layout: each line's indentation and, for kind lines, the kind and count; for
// call-site lines only the repeat count (the call sites and the Python function names differ).
std::vector<std::string> layout(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t indent = line.find_first_not_of(' ');
    std::string rest = indent == std::string::npos ? "" : line.substr(indent);
    std::string shape = std::to_string(indent) + "|";
    if (rest.find(": ") != std::string::npos && rest.find("):") != rest.size() - 2) {
      const std::size_t x = rest.rfind(" (x");
      shape += "site" + (x == std::string::npos ? std::string() : rest.substr(x));
    } else {
      shape += rest;
    }
    out.push_back(shape);
  }
  return out;
}
std::string unhex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}
}  // namespace

TEST_P(Oracle, TheTransferReportIsLaidOutAsThePythonLibrarys) {
  if (GetParam() != cn::Backend::emulated)
    GTEST_SKIP() << "transfers need a device: run on emulated";
  const auto& r = reference().values;
  ASSERT_TRUE(r.count("report") && !r.at("report").empty()) << "the reference has no report";
  auto counter = cn::count_transfers();
  auto h = cn::zeros<double>({4}, cn::Backend::host);
  cn::Array<double> d;
  for (int i = 0; i < 3; ++i) d = cn::to_device(h);
  (void)cn::to_host(d);
  std::string ours = counter.report();
  ours = ours.substr(ours.find('\n') + 1);  // the first line's kinds differ between the libraries
  EXPECT_EQ(layout(ours), layout(unhex(r.at("report")[0]))) << ours << "\n---\n"
                                                            << unhex(r.at("report")[0]);
}

CUNUMPY_ON_HOST_AND_EMULATED(Oracle);
