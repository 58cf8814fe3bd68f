// config::Trainer.
#include "tern/config/trainer.h"

#include "tern/config/builders.h"
#include "tern/config/resume.h"
#include "tern/runtime/runtime.h"

namespace tern::config {

Trainer::Trainer(TrainConfig config, bool with_train) : config_(std::move(config)) {
  runtime::set_intra_op_threads(config_.training.threads);
  data_ = make_training_data(config_, with_train);
  model_ = make_model(config_, data_.sample_shape);
  compile_model(*model_, config_, data_.steps_per_epoch);
}

std::optional<std::string> Trainer::resume(bool ignore_config_change) {
  return resume_from_checkpoint(*model_, config_, ignore_config_change);
}

train::History Trainer::fit() {
  TERN_CHECK_ARG(data_.train != nullptr, config_.path,
                 ": this Trainer was made without the training split (with_train = false)");
  nn::FitOptions options = config_.training.fit;
  options.validation_data = data_.validation;
  for (auto& cb : make_callbacks(config_)) options.callbacks.push_back(std::move(cb));
  return model_->fit(data_.train, options);
}

nn::EvaluateResult Trainer::evaluate() {
  return model_->evaluate(data_.test);
}

}  // namespace tern::config
