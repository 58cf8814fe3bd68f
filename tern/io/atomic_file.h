// Whole-file reads and crash-safe writes: write to a temp file in the same directory, fsync it,
// rename over the target, fsync the directory. A kill at any moment leaves the old file or the new.
#pragma once

#include <string>
#include <string_view>

namespace tern::io {

void write_file_atomically(const std::string& path, std::string_view contents);
// NotFound naming the path if it cannot be opened; DataLoss on a read error.
std::string read_file(const std::string& path);
// Writes a new file (an existing one is an error) and fsyncs it: the files of a directory that is
// renamed into place afterwards (checkpoints, model versions). Unavailable naming the path.
void write_new_file_synced(const std::string& path, std::string_view contents);
// fsync a directory (after renames inside it).
void fsync_directory(const std::string& dir);

}  // namespace tern::io
