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
  std::optional<std::string> latest = train::latest_checkpoint(dir);
  if (!latest) return std::nullopt;
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
  return latest;
}

}  // namespace tern::config
