// CheckpointDirLock: one run writes a checkpoint directory at a time. An advisory lock (flock) on
// <dir>/.lock, held while a run may write there and released by the kernel when the process ends,
// however it ends (kill -9 included): a lock file left by a killed run blocks nothing. The file
// holds the holder's pid, which the refusal names. Before, a second run on the same directory
// swept the first one's temporary checkpoint and died mid-run with "cannot create
// '.../.tmp-ckpt-...'" (bad-input report F20).
//
// Within a process the lock is shared: acquiring a directory this process already holds returns
// the same lock (ModelCheckpoint, save_checkpoint and config::Trainer all take it). The file is
// opened close-on-exec, so child processes (mpirun, sweep trials) never inherit it.
#pragma once

#include <memory>
#include <string>

namespace tern::train {

class CheckpointDirLock {
 public:
  // Creates `dir` if needed and locks it. FailedPrecondition naming the directory and the other
  // run's pid when another process holds it; Unavailable when the directory or the lock file
  // cannot be made.
  static std::shared_ptr<CheckpointDirLock> acquire(const std::string& dir);

  ~CheckpointDirLock();  // unlocks (the file stays: removing it would race with a new holder)
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;

  const std::string& dir() const { return dir_; }

  // Whether this process holds the lock of `dir` now.
  static bool held(const std::string& dir);

 private:
  CheckpointDirLock(std::string dir, std::string key, int fd);

  std::string dir_;
  std::string key_;  // the canonical path: the same directory under any name
  int fd_;
};

constexpr const char* kCheckpointLockFile = ".lock";

}  // namespace tern::train
