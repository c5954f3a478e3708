// cunumpy::write_file_atomically: a file replaced whole, never seen half written; failures are
// errors naming the file, with the old file unchanged and no temporary file left behind.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "test_environment.hpp"

namespace cn = cunumpy;
namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}
}  // namespace

TEST(Files, WriteReplacesTheFileWhole) {
  cunumpy_test::TempDir scratch;
  const fs::path file = scratch.path / "summary.json";
  cn::write_file_atomically(file, "first");
  EXPECT_EQ(slurp(file), "first");
  const std::string big(3 << 20, 'x');  // several write() calls
  cn::write_file_atomically(file, big);
  EXPECT_EQ(slurp(file), big);
  cn::write_file_atomically(file, "");
  EXPECT_EQ(slurp(file), "");
  EXPECT_EQ(names_in(scratch.path), std::vector<std::string>{"summary.json"})
      << "no temporary file is left";
}

TEST(Files, AFailureNamesTheFileAndKeepsTheOldOne) {
  cunumpy_test::TempDir scratch;
  // A folder that does not exist.
  try {
    cn::write_file_atomically(scratch.path / "missing" / "a.txt", "x");
    FAIL() << "a file in a missing folder was written";
  } catch (const cn::Error& e) {
    EXPECT_NE(std::string(e.what()).find("a.txt"), std::string::npos) << e.what();
  }
  // The path is a folder: the rename fails, the folder stays, the temporary file is removed.
  const fs::path folder = scratch.path / "taken";
  fs::create_directory(folder);
  std::ofstream(folder / "inside") << "kept";
  try {
    cn::write_file_atomically(folder, "x");
    FAIL() << "a folder was replaced by a file";
  } catch (const cn::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("taken"), std::string::npos) << m;
    EXPECT_NE(m.find("the previous file (if any) is unchanged"), std::string::npos) << m;
  }
  EXPECT_EQ(slurp(folder / "inside"), "kept");
  std::vector<std::string> names = names_in(scratch.path);
  EXPECT_EQ(names, std::vector<std::string>{"taken"}) << "no temporary file is left";
  if (geteuid() != 0) {  // root writes into read-only folders
    const fs::path ro = scratch.path / "read_only";
    fs::create_directory(ro);
    cn::write_file_atomically(ro / "a.txt", "old");
    ::chmod(ro.c_str(), 0555);
    EXPECT_THROW(cn::write_file_atomically(ro / "a.txt", "new"), cn::Error);
    ::chmod(ro.c_str(), 0755);
    EXPECT_EQ(slurp(ro / "a.txt"), "old");
  }
}

// Threads replacing one file: every read sees one writer's whole contents.
TEST(Files, ConcurrentWritersNeverLeaveAMixture) {
  cunumpy_test::TempDir scratch;
  const fs::path file = scratch.path / "shared.txt";
  cn::write_file_atomically(file, std::string(4096, 'a'));
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t)
    writers.emplace_back([&, t] {
      const std::string mine(4096 + 1024 * t, static_cast<char>('b' + t));
      for (int k = 0; k < 20; ++k) cn::write_file_atomically(file, mine);
    });
  for (int k = 0; k < 200; ++k) {
    const std::string seen = slurp(file);
    ASSERT_FALSE(seen.empty());
    ASSERT_EQ(seen.find_first_not_of(seen[0]), std::string::npos) << "a mixture of writers";
    ASSERT_EQ(seen.size(), seen[0] == 'a' ? 4096u : 4096u + 1024u * (seen[0] - 'b'));
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(names_in(scratch.path), std::vector<std::string>{"shared.txt"});
}
