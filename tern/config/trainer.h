// config::Trainer: what `tern train` does, as a library object. It reads the data a config
// describes, builds the model from the zoo, compiles it with the optimizer, schedule, loss and
// precision policy, and fits it with the config's FitOptions, validation data and callbacks.
//
//   config::TrainConfig cfg = config::load_config("examples/fashion_mnist.toml", overrides);
//   config::Trainer trainer(cfg);
//   train::History history = trainer.fit();
//   nn::EvaluateResult test = trainer.evaluate();
//   trainer.model().save_weights(trainer.weights_path());
//
// Under an MPI launcher (mpirun -np N tern train ...) the Trainer is one of N data-parallel
// workers ([distribute]): it reads its shard of the training data with global batch / N per step,
// checks that every worker runs the same config, and fits with the gradients summed over workers.
// A Trainer made for training holds its checkpoint directories' locks (rank 0): a second Trainer
// (in any process) on the same directory fails in its constructor.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tern/config/config.h"
#include "tern/config/training_data.h"
#include "tern/dist/data_parallel.h"
#include "tern/nn/model.h"
#include "tern/train/callbacks.h"
#include "tern/train/checkpoint_lock.h"

namespace tern::config {

class Trainer {
 public:
  // Sets the intra-op thread count (training.threads), reads the test split (and the training and
  // validation splits when `with_train`), builds the model and compiles it.
  explicit Trainer(TrainConfig config, bool with_train = true);

  // The resume policy (resume.h): restores the newest complete checkpoint of
  // [callbacks.checkpoint] written under this config; nullopt when there is none.
  std::optional<std::string> resume(bool ignore_config_change = false);

  // Fits on the training split: config().training.fit (its callbacks first), then the validation
  // data and every callback [callbacks] enables.
  train::History fit();
  // Evaluates on the test split.
  nn::EvaluateResult evaluate();

  nn::Model& model() { return *model_; }
  // Data-parallel training (the process runs under mpirun): this worker's rank and the count.
  int workers() const { return data_parallel_ ? data_parallel_->size() : 1; }
  int rank() const { return data_parallel_ ? data_parallel_->rank() : 0; }
  bool is_chief() const { return rank() == 0; }
  const TrainConfig& config() const { return config_; }
  const TrainingData& data() const { return data_; }
  // <output.dir>/weights.safetensors, where `tern train` saves and `tern eval` reads.
  std::string weights_path() const { return config_.output.dir + "/weights.safetensors"; }

 private:
  TrainConfig config_;
  TrainingData data_;
  std::shared_ptr<nn::Model> model_;
  std::shared_ptr<dist::DataParallel> data_parallel_;
  // The checkpoint directories' locks, held for the Trainer's life on rank 0 when training.
  std::vector<std::shared_ptr<train::CheckpointDirLock>> locks_;
};

}  // namespace tern::config
