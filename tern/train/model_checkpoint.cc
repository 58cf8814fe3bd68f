// ModelCheckpoint and BackupAndRestore.
#include "tern/train/model_checkpoint.h"

#include "tern/train/distributed.h"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "tern/base/logging.h"
#include "tern/nn/model.h"
#include "tern/train/checkpoint.h"
#include "tern/train/checkpoint_lock.h"
#include "tern/train/distributed.h"
#include "tern/train/model_weights.h"
#include "tern/train/training_state.h"

namespace tern::train {
namespace {

constexpr const char* kBestKey = "model_checkpoint/best";

bool maximize(const std::string& monitor, const std::string& mode) {
  if (mode == "max") return true;
  if (mode == "min") return false;
  TERN_CHECK_ARG(mode == "auto",
                 "ModelCheckpoint: mode must be \"min\", \"max\" or \"auto\", got \"", mode, "\"");
  for (const char* up : {"acc", "auc", "precision", "recall"}) {
    if (monitor.find(up) != std::string::npos) return true;
  }
  return false;
}

std::string exact(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// True (after a warning) if the model's weights hold NaN or Inf: such a checkpoint would be
// restored by --resume and, with keep_last, prune the good ones (bad-input report F4).
bool weights_ruined(const nn::Model& model, const char* who) {
  std::string bad = first_non_finite_weight(model);
  if (bad.empty()) return false;
  log_warning(who, ": not saving step ", model.training_state()->progress.global_step, ": weight ",
              bad, "; the checkpoints written before are kept");
  return true;
}

}  // namespace

// --- ModelCheckpoint ---

ModelCheckpoint::ModelCheckpoint(ModelCheckpointOptions options) : options_(std::move(options)) {
  TERN_CHECK_ARG(!options_.dir.empty(), "ModelCheckpoint: dir is empty");
  TERN_CHECK_ARG(options_.save_freq >= 0, "ModelCheckpoint: save_freq must be >= 0, got ",
                 options_.save_freq);
  TERN_CHECK_ARG(options_.keep_last >= 0, "ModelCheckpoint: keep_last must be >= 0, got ",
                 options_.keep_last);
  maximize_ = maximize(options_.monitor, options_.mode);
}

void ModelCheckpoint::on_train_begin(Logs&) {
  have_best_ = false;
  if (is_chief(*model())) lock_ = CheckpointDirLock::acquire(options_.dir);
  // A run that does not continue from a checkpoint would mix its checkpoints with an earlier
  // run's, and --resume would later pick whichever is newest (bad-input report F5).
  if (!model()->training_state()->resume && is_chief(*model())) {
    std::vector<std::string> earlier = list_checkpoints(options_.dir);
    if (!earlier.empty()) {
      throw_error(ErrorCode::kFailedPrecondition, "ModelCheckpoint: ", options_.dir, " holds ",
                  earlier.size(), " checkpoint(s) of an earlier run (newest ",
                  std::filesystem::path(earlier.back()).filename().string(),
                  "): continue that run (tern train --resume), or remove them or choose another "
                  "callbacks.checkpoint.dir to start a new one");
    }
  }
  // A resumed run keeps comparing against the best value saved before the interruption.
  if (!options_.save_best_only) return;
  std::vector<std::string> all = list_checkpoints(options_.dir);
  if (all.empty()) return;
  try {
    Checkpoint c = read_checkpoint(all.back());
    auto it = c.state.extra.find(kBestKey);
    if (it != c.state.extra.end()) {
      best_ = std::stod(it->second);
      have_best_ = true;
    }
  } catch (const std::exception& e) {
    log_warning("ModelCheckpoint: cannot read the best value from '", all.back(), "': ", e.what());
  }
}

void ModelCheckpoint::maybe_save(const Logs& logs, bool always) {
  CheckpointState state = capture_checkpoint_state(*model());
  if (options_.save_best_only && always) {
    if (have_best_) state.extra[kBestKey] = exact(best_);  // carried on to the resumed run
  } else if (options_.save_best_only) {
    auto it = logs.find(options_.monitor);
    if (it == logs.end()) {
      log_warning("ModelCheckpoint: monitored metric '", options_.monitor,
                  "' is not in the logs; not saving");
      return;
    }
    double v = it->second;
    bool better = !have_best_ || (maximize_ ? v > best_ : v < best_);
    if (!std::isfinite(v) || !better) return;
    best_ = v;
    have_best_ = true;
    state.extra[kBestKey] = exact(v);
  }
  state.config_sha256 = options_.config_sha256;
  for (const auto& [k, v] : logs) state.logs[k] = v;
  if (!is_chief(*model())) return;  // rank 0 writes for every worker
  if (weights_ruined(*model(), "ModelCheckpoint")) return;
  last_saved_ = save_checkpoint(options_.dir, *model(), state);
  prune_checkpoints(options_.dir, options_.keep_last);
}

void ModelCheckpoint::on_train_batch_end(int64_t, Logs& logs) {
  if (options_.save_freq <= 0) return;
  if (model()->training_state()->progress.global_step % options_.save_freq == 0) maybe_save(logs);
}

void ModelCheckpoint::on_epoch_end(int, Logs& logs) {
  if (options_.save_freq == 0) maybe_save(logs);
}

void ModelCheckpoint::on_train_end(Logs&) {
  lock_.reset();
}

void ModelCheckpoint::on_train_interrupted(Logs& logs) {
  maybe_save(logs, /*always=*/true);
  // ModelCheckpoint's is the checkpoint `tern train --resume` reads: it names the interrupt's.
  if (!last_saved_.empty()) model()->training_state()->progress.interrupt_checkpoint = last_saved_;
}

// --- BackupAndRestore ---

BackupAndRestore::BackupAndRestore(BackupAndRestoreOptions options) : options_(std::move(options)) {
  TERN_CHECK_ARG(!options_.backup_dir.empty(), "BackupAndRestore: backup_dir is empty");
  TERN_CHECK_ARG(options_.save_freq >= 0, "BackupAndRestore: save_freq must be >= 0, got ",
                 options_.save_freq);
}

void BackupAndRestore::on_train_begin(Logs&) {
  restored_from_.clear();
  if (is_chief(*model())) lock_ = CheckpointDirLock::acquire(options_.backup_dir);
  CheckpointScan scan = scan_checkpoints(options_.backup_dir);
  for (const auto& [dir, why] : scan.damaged) log_warning("skipping damaged backup: ", why);
  const std::optional<std::string>& latest = scan.latest;
  if (!latest) {
    if (!scan.damaged.empty()) {
      throw_error(ErrorCode::kDataLoss, "BackupAndRestore: every backup in ", options_.backup_dir,
                  " is damaged (newest: ", scan.damaged.front().second,
                  "); repair or remove them to start over");
    }
    return;
  }
  Checkpoint c = read_checkpoint(*latest);
  if (!options_.config_sha256.empty() && !c.state.config_sha256.empty() &&
      c.state.config_sha256 != options_.config_sha256) {
    throw_error(ErrorCode::kFailedPrecondition, "BackupAndRestore: backup '", *latest,
                "' was written under a different config (config_sha256 ", c.state.config_sha256,
                ", now ", options_.config_sha256, "); remove ", options_.backup_dir,
                " to start over");
  }
  restore_checkpoint(*model(), c);
  restored_from_ = *latest;
  set_aside_damaged(scan);
  log_info("BackupAndRestore: continuing from ", *latest, " (epoch ", c.state.position.epoch,
           ", step ", c.state.position.global_step, ")");
}

std::string BackupAndRestore::save() {
  CheckpointState state = capture_checkpoint_state(*model());
  state.config_sha256 = options_.config_sha256;
  if (!is_chief(*model())) return "";  // rank 0 writes for every worker
  if (weights_ruined(*model(), "BackupAndRestore")) return "";
  std::string path = save_checkpoint(options_.backup_dir, *model(), state);
  prune_checkpoints(options_.backup_dir, options_.keep_last);
  return path;
}

void BackupAndRestore::on_train_batch_end(int64_t, Logs&) {
  if (options_.save_freq > 0 &&
      model()->training_state()->progress.global_step % options_.save_freq == 0)
    save();
}

void BackupAndRestore::on_epoch_end(int, Logs&) {
  if (options_.save_freq == 0) save();
}

void BackupAndRestore::on_train_interrupted(Logs&) {
  const std::string path = save();
  std::string& named = model()->training_state()->progress.interrupt_checkpoint;
  if (named.empty()) named = path;
}

void BackupAndRestore::on_train_end(Logs&) {
  // Released when this returns (the backups deleted first, while it is held).
  std::shared_ptr<CheckpointDirLock> lock = std::move(lock_);
  // An interrupted run keeps its backups: the next run continues from them.
  if (model()->training_state()->progress.interrupted_by != 0) return;
  if (!options_.delete_checkpoint || !is_chief(*model())) return;
  // Training that ruined the weights did not finish: its last good backup is what is left.
  if (!first_non_finite_weight(*model()).empty()) {
    log_warning("BackupAndRestore: the weights hold NaN or Inf; keeping the backups in ",
                options_.backup_dir);
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(options_.backup_dir, ec);
  if (ec)
    log_warning("BackupAndRestore: could not delete '", options_.backup_dir, "': ", ec.message());
}

}  // namespace tern::train
