// CheckpointDirLock: flock on <dir>/.lock, shared within the process through a registry keyed by
// the directory's canonical path.
#include "tern/train/checkpoint_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "tern/base/error.h"
#include "tern/base/strings.h"

namespace tern::train {
namespace fs = std::filesystem;
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<CheckpointDirLock>> held;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: locks may be released after main
  return *r;
}

std::string canonical_dir(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::canonical(dir, ec);
  return ec ? fs::absolute(dir).lexically_normal().string() : p.string();
}

// The pid the holder wrote ("" if unreadable or not written yet).
std::string holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return "";
  std::string text(buf, static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (char c : text)
    if (c < '0' || c > '9') return "";
  return text;
}

}  // namespace

CheckpointDirLock::CheckpointDirLock(std::string dir, std::string key, int fd)
    : dir_(std::move(dir)), key_(std::move(key)), fd_(fd) {}

CheckpointDirLock::~CheckpointDirLock() {
  Registry& r = registry();
  std::lock_guard<std::mutex> guard(r.mu);
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
  auto it = r.held.find(key_);
  if (it != r.held.end() && it->second.expired()) r.held.erase(it);
}

std::shared_ptr<CheckpointDirLock> CheckpointDirLock::acquire(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw_error(ErrorCode::kUnavailable, "cannot create checkpoint directory '", printable(dir),
                "': ", ec.message());
  }
  const std::string key = canonical_dir(dir);
  Registry& r = registry();
  std::unique_lock<std::mutex> guard(r.mu);
  for (auto it = r.held.find(key); it != r.held.end(); it = r.held.find(key)) {
    if (std::shared_ptr<CheckpointDirLock> mine = it->second.lock()) return mine;
    // Being released on another thread: its destructor unlocks, then drops the entry.
    guard.unlock();
    std::this_thread::yield();
    guard.lock();
  }
  const std::string path = (fs::path(dir) / kCheckpointLockFile).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw_error(ErrorCode::kUnavailable, "cannot open the checkpoint lock file '", printable(path),
                "': ", std::strerror(errno));
  }
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EINTR) continue;
    const std::string pid = err == EWOULDBLOCK ? holder_pid(fd) : "";
    ::close(fd);
    if (err != EWOULDBLOCK) {
      throw_error(ErrorCode::kUnavailable, "cannot lock '", printable(path),
                  "': ", std::strerror(err));
    }
    throw_error(ErrorCode::kFailedPrecondition, "checkpoint directory '", printable(dir),
                "' is in use by another run (", pid.empty() ? "pid unknown" : "pid " + pid,
                ", holding ", printable(path),
                "): two runs writing one directory would delete each other's checkpoints; wait "
                "for that run to end, or give this one another checkpoint directory");
  }
  // Ours: record the pid for the next run that finds it locked.
  const std::string text = str_cat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    // The lock holds without the pid; a refused run then says "pid unknown".
  }
  std::shared_ptr<CheckpointDirLock> lock(new CheckpointDirLock(dir, key, fd));
  r.held[key] = lock;
  return lock;
}

bool CheckpointDirLock::held(const std::string& dir) {
  const std::string key = canonical_dir(dir);
  Registry& r = registry();
  std::lock_guard<std::mutex> guard(r.mu);
  auto it = r.held.find(key);
  return it != r.held.end() && !it->second.expired();
}

}  // namespace tern::train
