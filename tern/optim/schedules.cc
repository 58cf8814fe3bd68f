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

PiecewiseConstantDecay::PiecewiseConstantDecay(std::vector<int64_t> boundaries,
                                               std::vector<double> values)
    : boundaries_(std::move(boundaries)), values_(std::move(values)) {
  TERN_CHECK_ARG(values_.size() == boundaries_.size() + 1, "piecewise schedule: ", values_.size(),
                 " values for ", boundaries_.size(),
                 " boundaries (need one more value than boundaries)");
  TERN_CHECK_ARG(std::is_sorted(boundaries_.begin(), boundaries_.end()),
                 "piecewise schedule: boundaries must increase");
}

double PiecewiseConstantDecay::operator()(int64_t step) const {
  size_t i = 0;
  while (i < boundaries_.size() && step >= boundaries_[i]) ++i;
  return values_[i];
}

std::string PiecewiseConstantDecay::describe() const {
  return str_cat("piecewise(", values_.size(), " pieces)");
}

ExponentialDecay::ExponentialDecay(double initial, int64_t decay_steps, double decay_rate,
                                   bool staircase)
    : initial_(initial), decay_steps_(decay_steps), decay_rate_(decay_rate), staircase_(staircase) {
  TERN_CHECK_ARG(decay_steps > 0, "exponential decay: decay_steps must be positive, got ",
                 decay_steps);
}

double ExponentialDecay::operator()(int64_t step) const {
  double p = static_cast<double>(step) / static_cast<double>(decay_steps_);
  if (staircase_) p = std::floor(p);
  return initial_ * std::pow(decay_rate_, p);
}

std::string ExponentialDecay::describe() const {
  return str_cat("exponential_decay(", initial_, ", every ", decay_steps_, " x", decay_rate_, ")");
}

CosineDecay::CosineDecay(double initial, int64_t decay_steps, double alpha)
    : initial_(initial), decay_steps_(decay_steps), alpha_(alpha) {
  TERN_CHECK_ARG(decay_steps > 0, "cosine decay: decay_steps must be positive, got ", decay_steps);
}

double CosineDecay::operator()(int64_t step) const {
  double p = static_cast<double>(std::min(step, decay_steps_)) / static_cast<double>(decay_steps_);
  double cosine = 0.5 * (1 + std::cos(std::numbers::pi * p));
  return initial_ * ((1 - alpha_) * cosine + alpha_);
}

std::string CosineDecay::describe() const {
  return str_cat("cosine_decay(", initial_, ", ", decay_steps_, " steps)");
}

CosineDecayRestarts::CosineDecayRestarts(double initial, int64_t first_decay_steps, double t_mul,
                                         double m_mul, double alpha)
    : initial_(initial),
      first_decay_steps_(first_decay_steps),
      t_mul_(t_mul),
      m_mul_(m_mul),
      alpha_(alpha) {
  TERN_CHECK_ARG(first_decay_steps > 0, "cosine restarts: first_decay_steps must be positive");
  TERN_CHECK_ARG(t_mul > 0, "cosine restarts: t_mul must be positive");
}

double CosineDecayRestarts::operator()(int64_t step) const {
  double completed = static_cast<double>(step) / static_cast<double>(first_decay_steps_);
  double restarts, fraction;
  if (t_mul_ == 1.0) {
    restarts = std::floor(completed);
    fraction = completed - restarts;
  } else {
    restarts = std::floor(std::log(1 - completed * (1 - t_mul_)) / std::log(t_mul_));
    double sum_r = (1 - std::pow(t_mul_, restarts)) / (1 - t_mul_);
    fraction = (completed - sum_r) / std::pow(t_mul_, restarts);
  }
  double m = std::pow(m_mul_, restarts);
  double cosine = 0.5 * m * (1 + std::cos(std::numbers::pi * fraction));
  return initial_ * ((1 - alpha_) * cosine + alpha_);
}

std::string CosineDecayRestarts::describe() const {
  return str_cat("cosine_restarts(", initial_, ", first ", first_decay_steps_, " steps)");
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
