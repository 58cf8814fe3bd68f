// TrainingState: what compile() sets up and fit/evaluate/predict share: the optimizer, loss and
// metrics, and the compiled step executables (one per kind and batch signature, compiled once;
// a partial last batch gets its own).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tern/dist/data_parallel.h"
#include "tern/nn/losses.h"
#include "tern/nn/metrics.h"
#include "tern/nn/model.h"
#include "tern/optim/loss_scale.h"
#include "tern/optim/optimizer.h"
#include "tern/runtime/executable.h"
#include "tern/train/fit_progress.h"

namespace tern::train {

enum class StepKind { kTrain, kAccumulate, kEval, kPredict };

// One compiled step: the executable plus where its inputs and outputs are.
struct CompiledStep {
  std::unique_ptr<runtime::Executable> exe;
  int x = -1, y = -1, lr = -1, step = -1, rng = -1;  // input indices (-1: absent)
  int loss_output = -1;
  int pred_output = -1;
  // Train steps under dynamic loss scaling: the bool output "loss_scale/finite" (false: the
  // update was skipped and is not an optimizer iteration).
  int finite_output = -1;
  // Metric i's statistics are outputs [metric_begin[i], metric_begin[i + 1]).
  std::vector<size_t> metric_begin;
};

struct TrainingState {
  std::shared_ptr<optim::Optimizer> optimizer;
  std::shared_ptr<nn::Loss> loss;
  std::vector<std::shared_ptr<nn::Metric>> metrics;
  runtime::CompileOptions compile_options;
  // Loss scaling of the train steps (set with the "mixed_float16" policy; see
  // tern/train/mixed_precision.h).
  std::optional<optim::LossScaleOptions> loss_scale;
  int gradient_accumulation_steps = 1;
  int64_t micro_step = 0;  // micro-batches seen since the last update (accumulation)
  std::map<std::string, CompiledStep> steps;
  // Where fit() is (kept current by fit), and where the next fit() starts when set.
  FitProgress progress;
  std::optional<ResumePoint> resume;
  // Data-parallel training (enable_data_parallel): train steps scale the loss by 1/N and
  // all-reduce the gradients in buckets; fit() shards nothing itself (the dataset is this
  // worker's shard) but checks and sums across workers.
  std::shared_ptr<dist::DataParallel> data_parallel;
  int64_t non_trainable_synced_step = -1;  // global step of the last average_non_trainable

  // The compiled step for this kind and batch types (compiling it on first use).
  CompiledStep& get(nn::Model& model, StepKind kind, const TensorType& x, const TensorType* y);
};

// Makes the model's training data-parallel over `dp` (compile() first): every worker must call
// it, with the same model, before fit. Compiled steps are rebuilt.
void enable_data_parallel(nn::Model& model, std::shared_ptr<dist::DataParallel> dp);

// Builds the graph of one step (exposed for tests and `tern profile`).
std::unique_ptr<ir::Graph> build_step_graph(nn::Model& model, TrainingState& state, StepKind kind,
                                            const TensorType& x, const TensorType* y);

}  // namespace tern::train
