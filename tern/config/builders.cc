// Model, schedule, optimizer, loss and compilation from a TrainConfig.
#include "tern/config/builders.h"

#include <algorithm>

#include "tern/base/checked_math.h"
#include "tern/models/zoo.h"
#include "tern/optim/adam.h"
#include "tern/optim/rmsprop.h"
#include "tern/optim/sgd.h"
#include "tern/train/mixed_precision.h"
#include "tern/train/training_state.h"

namespace tern::config {
namespace {

// Runs `fn`, naming the config file in errors that do not already; what the config asks for
// cannot be built: a ConfigError.
template <typename Fn>
auto naming_config(const TrainConfig& cfg, const char* section, Fn&& fn) {
  try {
    return fn();
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    if (e.message().rfind(cfg.path, 0) == 0) throw ConfigError(e.code(), e.message());
    throw ConfigError(e.code(), str_cat(cfg.path, section, e.message()));
  }
}

}  // namespace

std::shared_ptr<nn::Model> make_model(const TrainConfig& cfg, const Shape& sample_shape) {
  std::shared_ptr<nn::Model> model = naming_config(cfg, ": [model]: ", [&] {
    return models::build_model(cfg.model.name, sample_shape, cfg.data.num_classes, cfg.model.args);
  });
  model->set_seed(cfg.training.fit.seed);
  model->build();
  return model;
}

optim::SchedulePtr make_schedule(const TrainConfig& cfg, int64_t steps_per_epoch) {
  const ScheduleConfig& schedule_cfg = cfg.schedule;
  const double lr = cfg.optimizer.learning_rate;
  optim::SchedulePtr schedule;
  if (schedule_cfg.name == "constant") {
    schedule = std::make_shared<optim::ConstantSchedule>(lr);
  } else if (schedule_cfg.name == "piecewise") {
    schedule = std::make_shared<optim::PiecewiseConstantDecay>(schedule_cfg.piecewise);
  } else if (schedule_cfg.name == "exponential") {
    schedule = std::make_shared<optim::ExponentialDecay>(lr, schedule_cfg.exponential);
  } else if (schedule_cfg.name == "cosine") {
    optim::CosineDecayOptions cosine = schedule_cfg.cosine;
    if (steps_per_epoch > 0) {
      cosine.decay_steps =
          std::max<int64_t>(1, checked_mul(steps_per_epoch, cfg.training.fit.epochs,
                                           "schedule: training.steps_per_epoch * training.epochs") -
                                   schedule_cfg.warmup_steps);
    }
    schedule = std::make_shared<optim::CosineDecay>(lr, cosine);
  } else if (schedule_cfg.name == "cosine_restarts") {
    schedule = std::make_shared<optim::CosineDecayRestarts>(lr, schedule_cfg.cosine_restarts);
  } else {
    throw ConfigError(
        ErrorCode::kInvalidArgument,
        str_cat(cfg.path, ": key 'schedule.name' = '", schedule_cfg.name,
                "' is not one of constant, piecewise, exponential, cosine, cosine_restarts"));
  }
  if (schedule_cfg.warmup_steps > 0)
    schedule = std::make_shared<optim::LinearWarmup>(schedule_cfg.warmup_steps, schedule);
  return schedule;
}

std::shared_ptr<optim::Optimizer> make_optimizer(const TrainConfig& cfg, int64_t steps_per_epoch) {
  const OptimizerConfig& optimizer = cfg.optimizer;
  optim::SchedulePtr schedule = make_schedule(cfg, steps_per_epoch);
  std::shared_ptr<optim::Optimizer> opt;
  if (optimizer.name == "sgd") {
    opt = std::make_shared<optim::SGD>(schedule, optimizer.sgd);
  } else if (optimizer.name == "adam") {
    opt = std::make_shared<optim::Adam>(schedule, optimizer.adam);
  } else if (optimizer.name == "adamw") {
    opt = std::make_shared<optim::AdamW>(schedule, optimizer.adam);
  } else if (optimizer.name == "rmsprop") {
    opt = std::make_shared<optim::RMSprop>(schedule, optimizer.rmsprop);
  } else {
    throw ConfigError(ErrorCode::kInvalidArgument,
                      str_cat(cfg.path, ": key 'optimizer.name' = '", optimizer.name,
                              "' is not one of sgd, adam, adamw, rmsprop"));
  }
  opt->clip = optimizer.clip;
  return opt;
}

std::shared_ptr<nn::Loss> make_loss(const TrainConfig& cfg) {
  return naming_config(cfg, ": [loss]: ", [&] {
    return nn::loss_by_name(cfg.loss.name, cfg.loss.from_logits, cfg.loss.label_smoothing);
  });
}

void compile_model(nn::Model& model, const TrainConfig& cfg, int64_t steps_per_epoch) {
  naming_config(cfg, ": ", [&] {
    model.compile(make_optimizer(cfg, steps_per_epoch), make_loss(cfg), cfg.loss.metrics);
    return 0;
  });
  runtime::CompileOptions& options = model.training_state()->compile_options;
  options.deterministic = cfg.training.deterministic;
  options.check_numerics = cfg.training.check_numerics;
  if (cfg.training.precision == "mixed_float16") {
    train::set_precision_policy(model, cfg.training.precision, cfg.training.loss_scale);
  } else {
    train::set_precision_policy(model, cfg.training.precision);
  }
}

}  // namespace tern::config
