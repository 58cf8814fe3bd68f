// Atomic file replacement with fsync (through symlinks; devices and FIFOs written in place), and
// whole reads of regular files.
#include "tern/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
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

namespace {

// errno of the first failed write of `contents` to fd, 0 if all of it was written.
int write_all(int fd, std::string_view contents) {
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t w = ::write(fd, contents.data() + done, contents.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<size_t>(w);
  }
  return 0;
}

// What a file that is not a regular one is, for messages.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// The end of `path`'s symlink chain when that end does not exist yet (a dangling link: the write
// creates its target), resolved hop by hop; `path` itself when it is no link.
std::string dangling_target(const std::string& path) {
  std::filesystem::path p(path);
  for (int hops = 0;; ++hops) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p.string();
    if (hops == 40) {
      throw_error(ErrorCode::kInvalidArgument, "cannot write '", path,
                  "': too many levels of symbolic links");
    }
    std::error_code ec;
    std::filesystem::path target = std::filesystem::read_symlink(p, ec);
    if (ec) {
      throw_error(ErrorCode::kUnavailable, "cannot read symlink '", p.string(),
                  "': ", ec.message());
    }
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
}

// A device or FIFO: the bytes go to it, nothing is created or renamed.
void write_in_place(const std::string& path, std::string_view contents) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    throw_error(ErrorCode::kUnavailable, "cannot open '", path, "': ", std::strerror(errno));
  }
  int e = write_all(fd, contents);
  if (::close(fd) != 0 && e == 0) e = errno;
  if (e != 0) throw_error(ErrorCode::kUnavailable, "cannot write '", path, "': ", std::strerror(e));
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view contents) {
  std::string target = path;
  mode_t mode = 0644;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      throw_error(ErrorCode::kInvalidArgument, "cannot write '", path, "': it is a directory");
    }
    if (!S_ISREG(st.st_mode)) return write_in_place(path, contents);
    // The file the link chain ends at (realpath also resolves /proc's fd links).
    char* real = ::realpath(path.c_str(), nullptr);
    if (real != nullptr) {
      target = real;
      std::free(real);
    }
    mode = st.st_mode & 07777;
  } else if (errno == ELOOP) {
    throw_error(ErrorCode::kInvalidArgument, "cannot write '", path,
                "': too many levels of symbolic links");
  } else if (errno == ENOENT) {
    target = dangling_target(path);
  }
  std::string dir = std::filesystem::path(target).parent_path().string();
  std::string tmp = target + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw_error(ErrorCode::kUnavailable, "cannot create '", tmp, "': ", std::strerror(errno));
  int e = write_all(fd, contents);
  if (e == 0 && mode != 0644 && ::fchmod(fd, mode) != 0) e = errno;
  if (e != 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw_error(ErrorCode::kUnavailable, "cannot write '", tmp, "': ", std::strerror(e));
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw_error(ErrorCode::kUnavailable, "cannot flush '", tmp, "': ", std::strerror(errno));
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    e = errno;
    ::unlink(tmp.c_str());
    throw_error(ErrorCode::kUnavailable, "cannot rename '", tmp, "' to '", target,
                "': ", std::strerror(e));
  }
  fsync_directory(dir);
}

std::string read_file(const std::string& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (regular files ignore the flag).
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw_error(ErrorCode::kNotFound, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw_error(ErrorCode::kDataLoss, "cannot stat '", path, "': ", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_error(ErrorCode::kInvalidArgument, "'", path, "' is not a regular file (",
                file_kind(st.st_mode), ")");
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw_error(ErrorCode::kResourceExhausted, "'", path, "' is ", st.st_size,
                " bytes, more than the ", max_bytes, " expected");
  }
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
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
    if (out.size() + static_cast<uint64_t>(r) > max_bytes) {
      ::close(fd);
      throw_error(ErrorCode::kResourceExhausted, "'", path, "' grew past the ", max_bytes,
                  " bytes expected");
    }
    out.append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  return out;
}

void check_writable_directory(const std::string& dir, const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw_error(ErrorCode::kUnavailable, what, " '", dir, "': cannot create it: ", ec.message());
  }
  const std::string probe = str_cat(dir, "/.tern-write-check-", ::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw_error(ErrorCode::kUnavailable, what, " '", dir,
                "' is not writable: ", std::strerror(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
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
