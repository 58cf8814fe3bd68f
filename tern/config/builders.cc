// Model, schedule, optimizer, loss and compilation from a TrainConfig.
#include "tern/config/builders.h"

#include <algorithm>

#include "tern/models/zoo.h"
#include "tern/optim/adam.h"
#include "tern/optim/rmsprop.h"
#include "tern/optim/sgd.h"
#include "tern/train/mixed_precision.h"
#include "tern/train/training_state.h"

namespace tern::config {
namespace {

// Runs `fn`, naming the config file in errors that do not already.
template <typename Fn>
auto naming_config(const TrainConfig& c, const char* section, Fn&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    if (e.message().rfind(c.path, 0) == 0) throw;
    throw_error(e.code(), c.path, section, e.message());
  }
}

}  // namespace

std::shared_ptr<nn::Model> make_model(const TrainConfig& c, const Shape& sample_shape) {
  std::shared_ptr<nn::Model> m = naming_config(c, ": [model]: ", [&] {
    return models::build_model(c.model.name, sample_shape, c.data.num_classes, c.model.args);
  });
  m->set_seed(c.training.fit.seed);
  m->build();
  return m;
}

optim::SchedulePtr make_schedule(const TrainConfig& c, int64_t steps_per_epoch) {
  const ScheduleConfig& s = c.schedule;
  const double lr = c.optimizer.learning_rate;
  optim::SchedulePtr schedule;
  if (s.name == "constant") {
    schedule = std::make_shared<optim::ConstantSchedule>(lr);
  } else if (s.name == "piecewise") {
    schedule = std::make_shared<optim::PiecewiseConstantDecay>(s.piecewise);
  } else if (s.name == "exponential") {
    schedule = std::make_shared<optim::ExponentialDecay>(lr, s.exponential);
  } else if (s.name == "cosine") {
    optim::CosineDecayOptions o = s.cosine;
    if (steps_per_epoch > 0) {
      o.decay_steps =
          std::max<int64_t>(1, steps_per_epoch * c.training.fit.epochs - s.warmup_steps);
    }
    schedule = std::make_shared<optim::CosineDecay>(lr, o);
  } else if (s.name == "cosine_restarts") {
    schedule = std::make_shared<optim::CosineDecayRestarts>(lr, s.cosine_restarts);
  } else {
    throw_error(ErrorCode::kInvalidArgument, c.path, ": key 'schedule.name' = '", s.name,
                "' is not one of constant, piecewise, exponential, cosine, cosine_restarts");
  }
  if (s.warmup_steps > 0)
    schedule = std::make_shared<optim::LinearWarmup>(s.warmup_steps, schedule);
  return schedule;
}

std::shared_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c, int64_t steps_per_epoch) {
  const OptimizerConfig& o = c.optimizer;
  optim::SchedulePtr schedule = make_schedule(c, steps_per_epoch);
  std::shared_ptr<optim::Optimizer> opt;
  if (o.name == "sgd") {
    opt = std::make_shared<optim::SGD>(schedule, o.sgd);
  } else if (o.name == "adam") {
    opt = std::make_shared<optim::Adam>(schedule, o.adam);
  } else if (o.name == "adamw") {
    opt = std::make_shared<optim::AdamW>(schedule, o.adam);
  } else if (o.name == "rmsprop") {
    opt = std::make_shared<optim::RMSprop>(schedule, o.rmsprop);
  } else {
    throw_error(ErrorCode::kInvalidArgument, c.path, ": key 'optimizer.name' = '", o.name,
                "' is not one of sgd, adam, adamw, rmsprop");
  }
  opt->clip = o.clip;
  return opt;
}

std::shared_ptr<nn::Loss> make_loss(const TrainConfig& c) {
  return naming_config(c, ": [loss]: ", [&] {
    return nn::loss_by_name(c.loss.name, c.loss.from_logits, c.loss.label_smoothing);
  });
}

void compile_model(nn::Model& model, const TrainConfig& c, int64_t steps_per_epoch) {
  naming_config(c, ": ", [&] {
    model.compile(make_optimizer(c, steps_per_epoch), make_loss(c), c.loss.metrics);
    return 0;
  });
  runtime::CompileOptions& options = model.training_state()->compile_options;
  options.deterministic = c.training.deterministic;
  options.check_numerics = c.training.check_numerics;
  if (c.training.precision == "mixed_float16") {
    train::set_precision_policy(model, c.training.precision, c.training.loss_scale);
  } else {
    train::set_precision_policy(model, c.training.precision);
  }
}

}  // namespace tern::config
