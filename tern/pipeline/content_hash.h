// Content hashes of artifacts: SHA-256 over what an artifact's uri holds, so that the cache and
// lineage can tell whether an artifact on disk is still the one the store recorded.
//
//   - a regular file: the SHA-256 of its bytes (what `sha256sum` prints);
//   - a directory: the SHA-256 over its regular files in sorted relative-path order, each as the
//     path, a NUL byte, the size as 8 little-endian bytes and the bytes (symlinked folders are not
//     followed; files whose name starts with '.' are skipped: temporaries).
#pragma once

#include <optional>
#include <string>

namespace tern::pipeline {

// NotFound when `path` does not exist; Unavailable naming the file on a read error.
std::string content_hash(const std::string& path);
// nullopt when `path` does not exist or cannot be read (for "is it still there?" checks).
std::optional<std::string> content_hash_if_present(const std::string& path);

}  // namespace tern::pipeline
