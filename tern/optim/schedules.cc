// Learning-rate schedules.
#include "tern/optim/schedules.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "tern/base/error.h"

namespace tern::optim {

std::string ConstantSchedule::describe() const {
  return str_cat("constant(", lr_, ")");
}

PiecewiseConstantDecay::PiecewiseConstantDecay(PiecewiseConstantDecayOptions options)
    : options_(std::move(options)) {
  const auto& [boundaries, values] = options_;
  TERN_CHECK_ARG(values.size() == boundaries.size() + 1, "piecewise schedule: ", values.size(),
                 " values for ", boundaries.size(),
                 " boundaries (need one more value than boundaries)");
  TERN_CHECK_ARG(std::is_sorted(boundaries.begin(), boundaries.end()),
                 "piecewise schedule: boundaries must increase");
}

double PiecewiseConstantDecay::operator()(int64_t step) const {
  size_t i = 0;
  while (i < options_.boundaries.size() && step >= options_.boundaries[i]) ++i;
  return options_.values[i];
}

std::string PiecewiseConstantDecay::describe() const {
  return str_cat("piecewise(", options_.values.size(), " pieces)");
}

ExponentialDecay::ExponentialDecay(double initial, ExponentialDecayOptions options)
    : initial_(initial), options_(options) {
  TERN_CHECK_ARG(options.decay_steps > 0, "exponential decay: decay_steps must be positive, got ",
                 options.decay_steps);
}

double ExponentialDecay::operator()(int64_t step) const {
  double p = static_cast<double>(step) / static_cast<double>(options_.decay_steps);
  if (options_.staircase) p = std::floor(p);
  return initial_ * std::pow(options_.decay_rate, p);
}

std::string ExponentialDecay::describe() const {
  return str_cat("exponential_decay(", initial_, ", every ", options_.decay_steps, " x",
                 options_.decay_rate, ")");
}

CosineDecay::CosineDecay(double initial, CosineDecayOptions options)
    : initial_(initial), options_(options) {
  TERN_CHECK_ARG(options.decay_steps > 0, "cosine decay: decay_steps must be positive, got ",
                 options.decay_steps);
}

double CosineDecay::operator()(int64_t step) const {
  const int64_t n = options_.decay_steps;
  double p = static_cast<double>(std::min(step, n)) / static_cast<double>(n);
  double cosine = 0.5 * (1 + std::cos(std::numbers::pi * p));
  return initial_ * ((1 - options_.alpha) * cosine + options_.alpha);
}

std::string CosineDecay::describe() const {
  return str_cat("cosine_decay(", initial_, ", ", options_.decay_steps, " steps)");
}

CosineDecayRestarts::CosineDecayRestarts(double initial, CosineDecayRestartsOptions options)
    : initial_(initial), options_(options) {
  TERN_CHECK_ARG(options.first_decay_steps > 0,
                 "cosine restarts: first_decay_steps must be positive");
  TERN_CHECK_ARG(options.t_mul > 0, "cosine restarts: t_mul must be positive");
}

double CosineDecayRestarts::operator()(int64_t step) const {
  const auto& [first_decay_steps, t_mul, m_mul, alpha] = options_;
  double completed = static_cast<double>(step) / static_cast<double>(first_decay_steps);
  double restarts, fraction;
  if (t_mul == 1.0) {
    restarts = std::floor(completed);
    fraction = completed - restarts;
  } else {
    restarts = std::floor(std::log(1 - completed * (1 - t_mul)) / std::log(t_mul));
    double sum_r = (1 - std::pow(t_mul, restarts)) / (1 - t_mul);
    fraction = (completed - sum_r) / std::pow(t_mul, restarts);
  }
  double m = std::pow(m_mul, restarts);
  double cosine = 0.5 * m * (1 + std::cos(std::numbers::pi * fraction));
  return initial_ * ((1 - alpha) * cosine + alpha);
}

std::string CosineDecayRestarts::describe() const {
  return str_cat("cosine_restarts(", initial_, ", first ", options_.first_decay_steps, " steps)");
}

LinearWarmup::LinearWarmup(int64_t warmup_steps, SchedulePtr after, double start)
    : warmup_steps_(warmup_steps), after_(std::move(after)), start_(start) {
  TERN_CHECK_ARG(warmup_steps >= 0, "warmup: warmup_steps must be >= 0");
  TERN_CHECK_ARG(after_ != nullptr, "warmup: no schedule after the warmup");
}

double LinearWarmup::operator()(int64_t step) const {
  if (step < warmup_steps_) {
    double target = (*after_)(0);
    return start_ +
           (target - start_) * static_cast<double>(step + 1) / static_cast<double>(warmup_steps_);
  }
  return (*after_)(step - warmup_steps_);
}

std::string LinearWarmup::describe() const {
  return str_cat("warmup(", warmup_steps_, ") then ", after_->describe());
}

}  // namespace tern::optim
