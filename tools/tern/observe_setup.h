// The observability and durability callbacks a config asks for ([callbacks.tensorboard],
// [callbacks.checkpoint], [callbacks.backup_and_restore], [callbacks.csv_logger],
// [callbacks.profiler]) and `tern train --resume`.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tern/nn/model.h"
#include "tern/train/callbacks.h"
#include "tools/tern/config.h"

namespace tern::tools {

std::vector<std::shared_ptr<train::Callback>> make_observe_callbacks(const TrainConfig& c);

// Where [callbacks.checkpoint] writes (default <output.dir>/checkpoints).
std::string checkpoint_dir(const TrainConfig& c);

// `--resume`: restores the newest complete checkpoint of checkpoint_dir(c) into the compiled
// model (fit then continues at its exact data position) and returns its path; nullopt when there
// is none. FailedPrecondition if it was written under a config that trains differently, unless
// `ignore_config_change`.
std::optional<std::string> resume_from_checkpoint(nn::Model& model, const TrainConfig& c,
                                                  bool ignore_config_change);

}  // namespace tern::tools
