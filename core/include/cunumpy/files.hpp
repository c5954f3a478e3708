// cunumpy/files.hpp: a file replaced whole, never seen half written.
//
//   cunumpy::write_file_atomically(dir / "summary.json", text);
//
// The contents go to a temporary file in the same folder, flushed to the disk (fsync), then
// renamed over `path` (and the folder synced): a reader sees the old file or the new one, a
// process killed meanwhile leaves the old file (and at most a hidden temporary one).  Error,
// naming the file and the system's reason, when it cannot; the old file is then unchanged.
#pragma once

#include <filesystem>
#include <string_view>

namespace cunumpy {

// Replaces `path` with `contents` whole: written to a temporary file of the folder, flushed to
// the disk and renamed into place; Error naming the file otherwise (the old file unchanged).
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace cunumpy
