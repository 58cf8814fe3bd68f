// Turning a TrainConfig into the objects training needs: the model from the zoo, the optimizer
// with its learning-rate schedule and clipping, the loss, the compiled model (precision policy,
// determinism, check-numerics) and the callbacks. Shared by config::Trainer and the `tern`
// subcommands; errors name the config file.
#pragma once

#include <memory>
#include <vector>

#include "tern/config/config.h"
#include "tern/nn/losses.h"
#include "tern/nn/model.h"
#include "tern/optim/optimizer.h"
#include "tern/optim/schedules.h"
#include "tern/train/callbacks.h"

namespace tern::config {

// [model] for per-sample inputs of `sample_shape` and data.num_classes outputs, seeded with
// training.seed and built (weights created).
std::shared_ptr<nn::Model> make_model(const TrainConfig& cfg, const Shape& sample_shape);

// [schedule] starting at optimizer.learning_rate. cosine decays over every training step
// (epochs x steps_per_epoch, warmup excluded) when steps_per_epoch > 0.
optim::SchedulePtr make_schedule(const TrainConfig& cfg, int64_t steps_per_epoch);
// [optimizer] with make_schedule's rate and the clipping options.
std::shared_ptr<optim::Optimizer> make_optimizer(const TrainConfig& cfg, int64_t steps_per_epoch);
std::shared_ptr<nn::Loss> make_loss(const TrainConfig& cfg);

// Compiles `model` with the config's optimizer, loss and metrics, then applies training.precision
// (with [training.loss_scale]), training.deterministic and training.check_numerics.
void compile_model(nn::Model& model, const TrainConfig& cfg, int64_t steps_per_epoch);

// Every callback [callbacks] enables, in the order they run: TerminateOnNaN, EarlyStopping,
// ReduceLROnPlateau, BackupAndRestore, TensorBoard, ModelCheckpoint, CSVLogger, Profiler
// (build_callbacks.cc). A data-parallel worker other than rank 0 (`chief` false) gets only those
// that decide (stop, learning rate, checkpoints, which gather every worker's data position), not
// those that only write logs.
std::vector<std::shared_ptr<train::Callback>> make_callbacks(const TrainConfig& cfg,
                                                             bool chief = true);

}  // namespace tern::config
