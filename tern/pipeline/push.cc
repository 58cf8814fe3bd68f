// push_model: copy a model directory into the serving base path as the next version, atomically.
#include "tern/pipeline/push.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "tern/base/error.h"
#include "tern/io/atomic_file.h"

namespace tern::pipeline {

namespace fs = std::filesystem;

std::vector<int64_t> served_versions(const std::string& base) {
  std::vector<int64_t> out;
  std::error_code ec;
  if (!fs::is_directory(base, ec)) return out;
  for (const auto& e : fs::directory_iterator(base, ec)) {
    const std::string name = e.path().filename().string();
    int64_t v = 0;
    auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), v);
    if (err == std::errc() && end == name.data() + name.size() && v > 0 && e.is_directory(ec))
      out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<int64_t> latest_served_version(const std::string& base) {
  std::vector<int64_t> v = served_versions(base);
  if (v.empty()) return std::nullopt;
  return v.back();
}

namespace {

// Copies the tree `from` into the new folder `to`, every file written and fsync'ed.
void copy_tree_synced(const fs::path& from, const fs::path& to) {
  fs::create_directory(to);
  for (const auto& e : fs::directory_iterator(from)) {
    const fs::path target = to / e.path().filename();
    if (e.is_directory()) {
      copy_tree_synced(e.path(), target);
    } else if (e.is_regular_file()) {
      io::write_new_file_synced(target.string(), io::read_file(e.path().string()));
    }
  }
  io::fsync_directory(to.string());
}

}  // namespace

PushResult push_model(const std::string& model_dir, const std::string& base) {
  std::error_code ec;
  if (!fs::is_directory(model_dir, ec))
    throw_error(ErrorCode::kNotFound, "push: the model directory '", model_dir, "' does not exist");
  fs::create_directories(base, ec);
  if (ec)
    throw_error(ErrorCode::kUnavailable, "push: cannot create the serving base path '", base,
                "': ", ec.message());
  static std::atomic<int> counter{0};
  const fs::path tmp =
      fs::path(base) / str_cat(".tern-push-", ::getpid(), "-", counter.fetch_add(1));
  fs::remove_all(tmp, ec);
  try {
    copy_tree_synced(model_dir, tmp);
    io::fsync_directory(base);
    for (int attempt = 0; attempt < 100; ++attempt) {
      const int64_t version = latest_served_version(base).value_or(0) + 1;
      const fs::path final_path = fs::path(base) / std::to_string(version);
      if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final_path.c_str(), RENAME_NOREPLACE) == 0) {
        io::fsync_directory(base);
        return {version, final_path.string()};
      }
      if (errno != EEXIST && errno != ENOTEMPTY)
        throw_error(ErrorCode::kUnavailable, "push: cannot rename '", tmp.string(), "' to '",
                    final_path.string(), "': ", std::strerror(errno));
    }
    throw_error(ErrorCode::kUnavailable, "push: versions keep appearing under '", base,
                "': gave up after 100 tries");
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace tern::pipeline
