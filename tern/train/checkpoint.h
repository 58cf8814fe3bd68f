// Training checkpoints: one directory per checkpoint, written so that a kill -9 at any moment
// leaves every earlier checkpoint intact and never exposes a partial one.
//
//   <root>/ckpt-0000000120/
//     weights.safetensors    model weights (trainable and not)
//     optimizer.safetensors  every other variable: optimizer slots, gradient accumulators
//     data_iterator.bin      the training iterator's saved state (mid-epoch checkpoints)
//     manifest.json          step, epoch, optimizer iterations, LR schedule, loss scale, RNG
//                            offset, config hash, logs, and bytes + SHA-256 of every file above
//     manifest.json.sha256   SHA-256 of manifest.json as a `sha256sum` line
//                            ("<hex>  manifest.json"; `sha256sum -c manifest.json.sha256` checks
//                            it; the bare hex digest of older checkpoints is still read)
//
// Writing: files go to <root>/.tmp-ckpt-<step>-<pid>/, each fsync'ed, the manifest last; the
// directory is fsync'ed, renamed to ckpt-<step>, and <root> is fsync'ed. Reading validates every
// hash and every safetensors header; any mismatch is DataLoss naming the file.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tern/io/safetensors.h"
#include "tern/train/fit_progress.h"

namespace tern::nn {
class Model;
}

namespace tern::train {

// Dynamic loss scaling ("mixed_float16"): recorded in the manifest for people and tools; the
// scale and counter themselves are variables, saved and restored with optimizer.safetensors.
struct LossScaleRecord {
  bool enabled = false;
  bool dynamic = true;
  double scale = 0;
  int64_t good_steps = 0;
};

struct CheckpointState {
  ResumePoint position;  // epoch, step, iterator blob
  std::string optimizer_name;
  int64_t optimizer_iterations = 0;
  int64_t micro_step = 0;    // gradient accumulation
  double learning_rate = 0;  // the rate at the next step
  std::string lr_schedule;   // LearningRateSchedule::describe()
  int64_t rng_offset = 0;    // the dropout RNG offset of the next step
  LossScaleRecord loss_scale;
  std::string config_sha256;  // set by the caller (tern train hashes the effective config)
  std::vector<std::string> weight_order;     // model.weights() names, in model order
  std::map<std::string, double> logs;        // e.g. the monitored metric at save time
  std::map<std::string, std::string> extra;  // callback state
};

struct Checkpoint {
  std::string dir;
  CheckpointState state;
  io::NamedTensors weights;
  io::NamedTensors optimizer;
  std::string manifest;  // manifest.json as stored
};

constexpr const char* kCheckpointPrefix = "ckpt-";

// The state of a compiled model inside fit() (or after it): TrainingState::progress, the
// optimizer, and the live iterator's state for a mid-epoch position.
CheckpointState capture_checkpoint_state(nn::Model& model);

// Writes <root>/ckpt-<global step> atomically and returns its path. A directory of that step that
// already exists (damaged, or left by an earlier run) is replaced: renamed out of the way once the
// new one is complete, then removed. Before, it was kept and this run's checkpoint silently not
// written (bad-input report F5).
std::string save_checkpoint(const std::string& root, nn::Model& model,
                            const CheckpointState& state);

// Reads and validates a checkpoint directory (DataLoss naming the file on any mismatch).
Checkpoint read_checkpoint(const std::string& dir);

// Complete checkpoints (renamed into place) under `root`, oldest first; none if root is missing.
std::vector<std::string> list_checkpoints(const std::string& root);
// The newest complete checkpoint that validates; older ones are tried (with a warning) when a
// newer one is damaged. nullopt if there is none.
std::optional<std::string> latest_checkpoint(const std::string& root);

// What resuming from `root` finds: the newest checkpoint that validates (nullopt if none) and the
// newer ones that did not, newest first, each with why.
struct CheckpointScan {
  std::optional<std::string> latest;
  std::vector<std::pair<std::string, std::string>> damaged;  // (dir, error message)
};
CheckpointScan scan_checkpoints(const std::string& root);
// Renames each damaged checkpoint directory ckpt-N to damaged-ckpt-N-<pid> beside it: kept for a
// look, no longer listed, so that a run continuing from an older checkpoint neither resumes from
// it later nor lets keep_last prune its own good checkpoints in its favour.
void set_aside_damaged(const CheckpointScan& scan);
// Deletes all but the newest `keep_last` checkpoints (rename out of the way first, then remove).
void prune_checkpoints(const std::string& root, int keep_last);

// Loads weights, optimizer variables, iterations and the LR schedule into a compiled model and
// sets TrainingState::resume, so the next fit() continues at the saved data position.
// Weights match by name; when the names differ (auto-generated layer names depend on how many
// layers a process created before) but the saved weight order has the same count and types, they
// match by position, optimizer slots following their parameter. InvalidArgument when the
// checkpoint does not fit the model (names the tensor and both types).
void restore_checkpoint(nn::Model& model, const Checkpoint& checkpoint);

}  // namespace tern::train
