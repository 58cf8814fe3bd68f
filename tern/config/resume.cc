// checkpoint_dir and resume_from_checkpoint (the config-hash check).
#include "tern/config/resume.h"

#include "tern/train/checkpoint.h"

namespace tern::config {

std::string checkpoint_dir(const TrainConfig& cfg) {
  return cfg.callbacks.checkpoint ? cfg.callbacks.checkpoint->dir : cfg.output.dir + "/checkpoints";
}

std::optional<std::string> resume_from_checkpoint(nn::Model& model, const TrainConfig& cfg,
                                                  bool ignore_config_change) {
  std::string dir = checkpoint_dir(cfg);
  train::CheckpointScan scan = train::scan_checkpoints(dir);
  if (!scan.latest && scan.damaged.empty()) return std::nullopt;
  if (!scan.latest) {
    // Starting from scratch here would silently drop the run that --resume asked for.
    std::string list;
    for (const auto& [d, why] : scan.damaged) list += str_cat("\n  ", why);
    throw_error(ErrorCode::kDataLoss, "--resume: no checkpoint in ", dir, " reads back whole (",
                scan.damaged.size(), " damaged):", list,
                "\nRepair or remove them to train from scratch.");
  }
  const std::optional<std::string>& latest = scan.latest;
  train::Checkpoint ckpt = train::read_checkpoint(*latest);
  if (!ignore_config_change && !ckpt.state.config_sha256.empty() &&
      ckpt.state.config_sha256 != cfg.sha256) {
    throw_error(ErrorCode::kFailedPrecondition, "--resume: checkpoint '", *latest,
                "' was written under a different config (config_sha256 ", ckpt.state.config_sha256,
                ", ", cfg.path, " now hashes to ", cfg.sha256,
                "; [callbacks] and [output] do not count). "
                "Pass --ignore-config-change (ignore_config_change) to resume anyway.");
  }
  train::restore_checkpoint(model, ckpt);
  // The newer, damaged ones: this run continues from an older step and will write its own.
  train::set_aside_damaged(scan);
  return latest;
}

}  // namespace tern::config
