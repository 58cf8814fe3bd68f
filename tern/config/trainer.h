// config::Trainer: what `tern train` does, as a library object. It reads the data a config
// describes, builds the model from the zoo, compiles it with the optimizer, schedule, loss and
// precision policy, and fits it with the config's FitOptions, validation data and callbacks.
//
//   config::TrainConfig cfg = config::load_config("examples/fashion_mnist.toml", overrides);
//   config::Trainer trainer(cfg);
//   train::History history = trainer.fit();
//   nn::EvaluateResult test = trainer.evaluate();
//   trainer.model().save_weights(trainer.weights_path());
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "tern/config/config.h"
#include "tern/config/training_data.h"
#include "tern/nn/model.h"
#include "tern/train/callbacks.h"

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
  const TrainConfig& config() const { return config_; }
  const TrainingData& data() const { return data_; }
  // <output.dir>/weights.safetensors, where `tern train` saves and `tern eval` reads.
  std::string weights_path() const { return config_.output.dir + "/weights.safetensors"; }

 private:
  TrainConfig config_;
  TrainingData data_;
  std::shared_ptr<nn::Model> model_;
};

}  // namespace tern::config
