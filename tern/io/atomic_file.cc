// Atomic file replacement with fsync.
#include "tern/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tern/base/error.h"

namespace tern::io {

void fsync_directory(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    throw_error(ErrorCode::kUnavailable, "cannot open directory '", dir,
                "': ", std::strerror(errno));
  ::fsync(fd);
  ::close(fd);
}

void write_file_atomically(const std::string& path, std::string_view contents) {
  std::filesystem::path p(path);
  std::string dir = p.parent_path().string();
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    throw_error(ErrorCode::kUnavailable, "cannot create '", tmp, "': ", std::strerror(errno));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t w = ::write(fd, contents.data() + done, contents.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw_error(ErrorCode::kUnavailable, "cannot write '", tmp, "': ", std::strerror(e));
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw_error(ErrorCode::kUnavailable, "cannot flush '", tmp, "': ", std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw_error(ErrorCode::kUnavailable, "cannot rename '", tmp, "' to '", path,
                "': ", std::strerror(e));
  }
  fsync_directory(dir);
}

std::string read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw_error(ErrorCode::kNotFound, "cannot open '", path, "': ", std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof(buf));
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      throw_error(ErrorCode::kDataLoss, "error reading '", path, "': ", std::strerror(e));
    }
    if (r == 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  return out;
}

void write_new_file_synced(const std::string& path, std::string_view contents) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw_error(ErrorCode::kUnavailable, "cannot create '", path, "': ", std::strerror(errno));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t w = ::write(fd, contents.data() + done, contents.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      int e = errno;
      ::close(fd);
      throw_error(ErrorCode::kUnavailable, "cannot write '", path, "': ", std::strerror(e));
    }
    done += static_cast<size_t>(w);
  }
  bool ok = ::fsync(fd) == 0;
  int e = errno;
  ::close(fd);
  if (!ok) throw_error(ErrorCode::kUnavailable, "cannot fsync '", path, "': ", std::strerror(e));
}

}  // namespace tern::io
