// Building TensorBoard / checkpoint / backup / CSV / profiler callbacks from a config; --resume.
#include "tools/tern/observe_setup.h"

#include <iostream>

#include "tern/train/checkpoint.h"
#include "tern/train/csv_logger.h"
#include "tern/train/model_checkpoint.h"
#include "tern/train/profiler.h"
#include "tern/train/tensorboard.h"

namespace tern::tools {
namespace {

std::string or_default(const std::string& value, const TrainConfig& c, const std::string& name) {
  return value.empty() ? c.output_dir + "/" + name : value;
}

}  // namespace

std::string checkpoint_dir(const TrainConfig& c) {
  return or_default(c.callbacks.ckpt_dir, c, "checkpoints");
}

std::vector<std::shared_ptr<train::Callback>> make_observe_callbacks(const TrainConfig& c) {
  const CallbackConfig& k = c.callbacks;
  std::vector<std::shared_ptr<train::Callback>> cbs;
  if (k.backup) {
    cbs.push_back(std::make_shared<train::BackupAndRestore>(
        train::BackupAndRestoreOptions{.backup_dir = or_default(k.backup_dir, c, "backup"),
                                       .save_freq = k.backup_save_freq,
                                       .config_sha256 = c.sha256}));
  }
  if (k.tensorboard) {
    train::TensorBoardOptions o{.log_dir = or_default(k.tb_log_dir, c, "logs"),
                                .update_freq = k.tb_update_freq,
                                .histogram_freq = k.tb_histogram_freq};
    o.hparams = c.effective;
    o.hparams["config_sha256"] = c.sha256;
    cbs.push_back(std::make_shared<train::TensorBoard>(o));
  }
  if (k.checkpoint) {
    cbs.push_back(std::make_shared<train::ModelCheckpoint>(
        train::ModelCheckpointOptions{.dir = checkpoint_dir(c),
                                      .save_freq = k.ckpt_save_freq,
                                      .save_best_only = k.ckpt_save_best_only,
                                      .monitor = k.ckpt_monitor,
                                      .mode = k.ckpt_mode,
                                      .keep_last = k.ckpt_keep_last,
                                      .config_sha256 = c.sha256}));
  }
  if (k.csv_logger) {
    cbs.push_back(std::make_shared<train::CSVLogger>(or_default(k.csv_path, c, "training.csv"), ',',
                                                     k.csv_append));
  }
  if (k.profiler) {
    cbs.push_back(std::make_shared<train::Profiler>(
        train::ProfilerOptions{.trace_path = or_default(k.profiler_trace, c, "trace.json"),
                               .start_step = k.profiler_start_step,
                               .num_steps = k.profiler_steps}));
  }
  return cbs;
}

std::optional<std::string> resume_from_checkpoint(nn::Model& model, const TrainConfig& c,
                                                  bool ignore_config_change) {
  std::string dir = checkpoint_dir(c);
  std::optional<std::string> latest = train::latest_checkpoint(dir);
  if (!latest) return std::nullopt;
  train::Checkpoint ckpt = train::read_checkpoint(*latest);
  if (!ignore_config_change && !ckpt.state.config_sha256.empty() &&
      ckpt.state.config_sha256 != c.sha256) {
    throw_error(ErrorCode::kFailedPrecondition, "--resume: checkpoint '", *latest,
                "' was written under a different config (config_sha256 ", ckpt.state.config_sha256,
                ", ", c.path, " now hashes to ", c.sha256,
                "; [callbacks] and [output] do not count). "
                "Pass --ignore-config-change to resume anyway.");
  }
  train::restore_checkpoint(model, ckpt);
  return latest;
}

}  // namespace tern::tools
