// Files replaced whole (files.hpp).
#include <cunumpy/files.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include <cunumpy/errors.hpp>

namespace cunumpy {

namespace {
std::atomic<unsigned long long> g_serial{0};  // temporary names of the threads of one process
}

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  // Appended piece by piece: GCC 12 reports a false -Wrestrict for "." + std::string.
  std::string name(1, '.');
  name += path.filename().string();
  name += ".tmp.";
  name += std::to_string(getpid());
  name += '.';
  name += std::to_string(g_serial.fetch_add(1));
  const std::filesystem::path tmp = folder / name;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error("cannot create " + tmp.string() + " (to write " + path.string() +
                "): " + std::strerror(errno) + "; check the folder and its permissions");
  auto fail = [&](const char* what, int e) {
    ::unlink(tmp.c_str());
    throw Error(std::string(what) + " " + path.string() + " failed: " + std::strerror(e) +
                "; the previous file (if any) is unchanged");
  };
  std::size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      fail("writing", e);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    fail("writing", e);
  }
  if (::close(fd) != 0) fail("writing", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("putting in place", errno);
  // The rename itself on the disk: sync the folder (where the file system allows it).
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
}

}  // namespace cunumpy
