// content_hash: SHA-256 (tern/base/sha256.h) over a file or a directory tree.
#include "tern/pipeline/content_hash.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <vector>

#include "tern/base/error.h"
#include "tern/base/sha256.h"

namespace tern::pipeline {

namespace fs = std::filesystem;

namespace {

void hash_file_bytes(const fs::path& p, Sha256& h) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw_error(ErrorCode::kUnavailable, p.string(), ": cannot open for hashing");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) h.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw_error(ErrorCode::kUnavailable, p.string(), ": read error while hashing");
}

}  // namespace

std::string content_hash(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw_error(ErrorCode::kNotFound, path, ": does not exist");
  Sha256 h;
  if (fs::is_regular_file(st)) {
    hash_file_bytes(path, h);
    return h.hex_digest();
  }
  if (!fs::is_directory(st))
    throw_error(ErrorCode::kInvalidArgument, path, ": neither a file nor a directory");
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->path().filename().string().starts_with(".")) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) files.push_back(fs::relative(it->path(), path).generic_string());
  }
  if (ec) throw_error(ErrorCode::kUnavailable, path, ": cannot list: ", ec.message());
  std::sort(files.begin(), files.end());
  for (const std::string& rel : files) {
    const fs::path p = fs::path(path) / rel;
    const uint64_t size = fs::file_size(p, ec);
    if (ec) throw_error(ErrorCode::kUnavailable, p.string(), ": ", ec.message());
    uint8_t le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(size >> (8 * i));
    h.update(rel);
    h.update("\0", 1);
    h.update(le, 8);
    hash_file_bytes(p, h);
  }
  return h.hex_digest();
}

std::optional<std::string> content_hash_if_present(const std::string& path) {
  try {
    return content_hash(path);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace tern::pipeline
