// The resume policy of `tern train --resume`: continue from the newest complete checkpoint of
// [callbacks.checkpoint], but only if it was written under a config that trains the same way
// (the config's sha256, which leaves out [callbacks] and [output]).
#pragma once

#include <optional>
#include <string>

#include "tern/config/config.h"
#include "tern/nn/model.h"

namespace tern::config {

// Where [callbacks.checkpoint] writes (default <output.dir>/checkpoints, also without the table).
std::string checkpoint_dir(const TrainConfig& cfg);

// Restores the newest complete checkpoint of checkpoint_dir(cfg) into the compiled model (fit then
// continues at its exact data position) and returns its path; nullopt when there is none at all.
// Newer checkpoints that are damaged are set aside (train::set_aside_damaged); DataLoss listing
// them when every checkpoint is damaged (the run asked for would otherwise silently restart).
// FailedPrecondition if it was written under a config that trains differently, unless
// `ignore_config_change`.
std::optional<std::string> resume_from_checkpoint(nn::Model& model, const TrainConfig& cfg,
                                                  bool ignore_config_change);

}  // namespace tern::config
