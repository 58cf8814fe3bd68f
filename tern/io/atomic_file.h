// Whole-file reads and crash-safe writes: write to a temp file in the same directory, fsync it,
// rename over the target, fsync the directory. A kill at any moment leaves the old file or the new.
// The target is where `path` leads: a symlink is followed (its final target is replaced, the link
// stays), and a target that is not a regular file (a device such as /dev/null or /dev/stdout, a
// FIFO) is written in place, never replaced. Reads take regular files only.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace tern::io {

// Replaces the regular file `path` leads to (or creates it) atomically, keeping an existing file's
// permission bits; writes in place to a device or FIFO. Unavailable naming the path on any
// failure (including a failed write or close: ENOSPC on /dev/full); InvalidArgument for a
// directory or a symlink loop.
void write_file_atomically(const std::string& path, std::string_view contents);
// The whole regular file `path` (symlinks followed). NotFound if it cannot be opened;
// InvalidArgument if it is not a regular file (a directory, a device such as /dev/zero, a FIFO:
// opened without blocking, never read); ResourceExhausted if it is larger than `max_bytes`;
// DataLoss on a read error.
std::string read_file(const std::string& path,
                      uint64_t max_bytes = std::numeric_limits<uint64_t>::max());
// Writes a new file (an existing one is an error) and fsyncs it: the files of a directory that is
// renamed into place afterwards (checkpoints, model versions). Unavailable naming the path.
void write_new_file_synced(const std::string& path, std::string_view contents);
// fsync a directory (after renames inside it).
void fsync_directory(const std::string& dir);
// Creates `dir` (and its parents) if missing and checks that a file can be created in it, for a
// check before long work whose output goes there. Unavailable naming `what` (a config key), the
// folder and the reason (a read-only file system, permissions).
void check_writable_directory(const std::string& dir, const std::string& what);

}  // namespace tern::io
