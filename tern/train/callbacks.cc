// Built-in callbacks.
#include "tern/train/callbacks.h"

#include <cmath>

#include "tern/base/logging.h"
#include "tern/nn/model.h"
#include "tern/train/training_state.h"

namespace tern::train {
namespace {

bool maximize_for(const std::string& monitor, const std::string& mode) {
  if (mode == "max") return true;
  if (mode == "min") return false;
  TERN_CHECK_ARG(mode == "auto", "callback mode must be \"min\", \"max\" or \"auto\", got \"", mode,
                 "\"");
  return monitor.find("acc") != std::string::npos || monitor.find("auc") != std::string::npos ||
         monitor.find("precision") != std::string::npos ||
         monitor.find("recall") != std::string::npos;
}

const double* find_log(const Logs& logs, const std::string& name) {
  auto it = logs.find(name);
  return it == logs.end() ? nullptr : &it->second;
}

}  // namespace

const std::vector<double>& History::at(const std::string& name) const {
  auto it = history.find(name);
  if (it != history.end()) return it->second;
  std::string keys;
  for (const auto& [k, _] : history) keys += (keys.empty() ? "" : ", ") + k;
  throw_error(ErrorCode::kNotFound, "history has no '", name, "' (has: ", keys, ")");
}

double current_learning_rate(const nn::Model& model) {
  TrainingState* s = model.training_state();
  TERN_CHECK_ARG(s && s->optimizer, "model is not compiled");
  return s->optimizer->learning_rate(s->optimizer->iterations);
}

void set_learning_rate(nn::Model& model, double lr) {
  TrainingState* s = model.training_state();
  TERN_CHECK_ARG(s && s->optimizer, "model is not compiled");
  s->optimizer->set_schedule(std::make_shared<optim::ConstantSchedule>(lr));
}

// --- EarlyStopping ---

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
  maximize_ = maximize_for(options_.monitor, options_.mode);
}

bool EarlyStopping::improved(double v) const {
  if (best_epoch_ < 0 && !options_.baseline) return true;
  double delta = std::fabs(options_.min_delta);
  return maximize_ ? v - delta > best_ : v + delta < best_;
}

void EarlyStopping::on_train_begin(Logs&) {
  wait_ = 0;
  best_epoch_ = -1;
  stopped_epoch_ = -1;
  best_ = options_.baseline ? *options_.baseline : (maximize_ ? -INFINITY : INFINITY);
  best_weights_.clear();
}

void EarlyStopping::on_epoch_end(int epoch, Logs& logs) {
  const double* v = find_log(logs, options_.monitor);
  if (!v) {
    log_warning("EarlyStopping: monitored metric '", options_.monitor, "' is not in the logs");
    return;
  }
  if (epoch < options_.start_from_epoch) return;
  ++wait_;
  if (improved(*v)) {
    best_ = *v;
    best_epoch_ = epoch;
    wait_ = 0;
    if (options_.restore_best_weights) {
      best_weights_.clear();
      const runtime::VariableStore& store = model()->variables();
      for (const auto& w : model()->weights()) best_weights_[w.name] = store.get(w.name).clone();
    }
    return;
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    model()->stop_training = true;
  }
}

void EarlyStopping::on_train_end(Logs&) {
  if (stopped_epoch_ >= 0 && options_.restore_best_weights && !best_weights_.empty()) {
    for (const auto& [name, t] : best_weights_) model()->variables().assign(name, t);
  }
}

// --- LearningRateScheduler ---

void LearningRateScheduler::on_epoch_begin(int epoch, Logs& logs) {
  double lr = schedule_(epoch, current_learning_rate(*model()));
  TERN_CHECK_ARG(std::isfinite(lr),
                 "LearningRateScheduler returned a non-finite learning rate at epoch ", epoch);
  set_learning_rate(*model(), lr);
  logs["lr"] = lr;
}

// --- ReduceLROnPlateau ---

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options)
    : options_(std::move(options)) {
  TERN_CHECK_ARG(options_.factor > 0 && options_.factor < 1,
                 "ReduceLROnPlateau: factor must be in (0, 1), got ", options_.factor);
  maximize_ = maximize_for(options_.monitor, options_.mode);
}

void ReduceLROnPlateau::on_train_begin(Logs&) {
  best_ = maximize_ ? -INFINITY : INFINITY;
  wait_ = 0;
  cooldown_counter_ = 0;
}

void ReduceLROnPlateau::on_epoch_end(int, Logs& logs) {
  const double* v = find_log(logs, options_.monitor);
  if (!v) {
    log_warning("ReduceLROnPlateau: monitored metric '", options_.monitor, "' is not in the logs");
    return;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    wait_ = 0;
  }
  bool better = maximize_ ? *v > best_ + options_.min_delta : *v < best_ - options_.min_delta;
  if (better) {
    best_ = *v;
    wait_ = 0;
    return;
  }
  if (cooldown_counter_ > 0) return;
  if (++wait_ >= options_.patience) {
    double lr = current_learning_rate(*model());
    if (lr > options_.min_lr) {
      double next = std::max(lr * options_.factor, options_.min_lr);
      set_learning_rate(*model(), next);
      logs["lr"] = next;
      cooldown_counter_ = options_.cooldown;
      wait_ = 0;
    }
  }
}

// --- TerminateOnNaN ---

void TerminateOnNaN::on_train_batch_end(int64_t step, Logs& logs) {
  const double* loss = find_log(logs, "loss");
  if (loss && !std::isfinite(*loss)) {
    log_warning("TerminateOnNaN: batch ", step, " has loss ", *loss, "; stopping training");
    model()->stop_training = true;
  }
}

}  // namespace tern::train
