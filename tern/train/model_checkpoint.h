// Checkpointing callbacks over tern/train/checkpoint.h:
//   ModelCheckpoint  saves a full checkpoint every N batches or each epoch, optionally only when a
//                    monitored metric improves, keeping the newest `keep_last`; and always when an
//                    interrupt stops fit (interrupt.h), so `--resume` continues from that step;
//   BackupAndRestore restores the newest backup when training starts (the run continues at the
//                    exact batch it was saved at), backs up as it goes, and deletes the backups
//                    when training finishes (Keras semantics); an interrupted fit backs up at its
//                    last step and keeps the backups.
// Both hold their directory's CheckpointDirLock (checkpoint_lock.h) from on_train_begin to
// on_train_end on the worker that writes (rank 0): a second run on the same directory fails there,
// before its first step.
#pragma once

#include <memory>
#include <string>

#include "tern/train/callbacks.h"

namespace tern::train {

class CheckpointDirLock;

struct ModelCheckpointOptions {
  std::string dir = "checkpoints";
  int64_t save_freq = 0;  // 0: at the end of each epoch; N: every N batches
  bool save_best_only = false;
  std::string monitor = "val_loss";  // batch-frequency saves see only "loss"
  std::string mode = "auto";         // "min", "max", "auto"
  int keep_last = 0;                 // 0: keep every checkpoint
  std::string config_sha256;         // recorded in each manifest
};

class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(ModelCheckpointOptions options);
  void on_train_begin(Logs&) override;
  void on_train_batch_end(int64_t step, Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_interrupted(Logs& logs) override;
  void on_train_end(Logs& logs) override;
  // The newest checkpoint this callback wrote ("" if none).
  const std::string& last_saved() const { return last_saved_; }

 private:
  void maybe_save(const Logs& logs, bool always = false);
  ModelCheckpointOptions options_;
  std::shared_ptr<CheckpointDirLock> lock_;
  bool maximize_ = false;
  bool have_best_ = false;
  double best_ = 0;
  std::string last_saved_;
};

struct BackupAndRestoreOptions {
  std::string backup_dir;
  int64_t save_freq = 0;  // 0: each epoch; N: every N batches
  bool delete_checkpoint = true;
  int keep_last = 2;
  std::string config_sha256;  // a backup written under another config is refused
};

class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(BackupAndRestoreOptions options);
  void on_train_begin(Logs&) override;
  void on_train_batch_end(int64_t step, Logs& logs) override;
  void on_epoch_end(int epoch, Logs& logs) override;
  void on_train_interrupted(Logs&) override;
  void on_train_end(Logs&) override;
  // The checkpoint restored by the last on_train_begin ("" if training started fresh).
  const std::string& restored_from() const { return restored_from_; }

 private:
  std::string save();
  BackupAndRestoreOptions options_;
  std::shared_ptr<CheckpointDirLock> lock_;
  std::string restored_from_;
};

}  // namespace tern::train
