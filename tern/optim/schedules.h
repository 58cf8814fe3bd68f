// Learning-rate schedules (Keras semantics): a function of the 0-based optimizer step. The
// trainer evaluates the schedule on the host every step and feeds the rate as a scalar input, so
// a schedule never recompiles the training graph.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace tern::optim {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  virtual double operator()(int64_t step) const = 0;
  virtual std::string describe() const = 0;
};

using SchedulePtr = std::shared_ptr<LearningRateSchedule>;

class ConstantSchedule : public LearningRateSchedule {
 public:
  explicit ConstantSchedule(double lr) : lr_(lr) {}
  double operator()(int64_t) const override { return lr_; }
  std::string describe() const override;

 private:
  double lr_;
};

// values[i] while step < boundaries[i]; values.size() == boundaries.size() + 1.
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values);
  double operator()(int64_t step) const override;
  std::string describe() const override;

 private:
  std::vector<int64_t> boundaries_;
  std::vector<double> values_;
};

// initial * decay_rate ^ (step / decay_steps), floored exponent if staircase.
class ExponentialDecay : public LearningRateSchedule {
 public:
  ExponentialDecay(double initial, int64_t decay_steps, double decay_rate, bool staircase = false);
  double operator()(int64_t step) const override;
  std::string describe() const override;

 private:
  double initial_;
  int64_t decay_steps_;
  double decay_rate_;
  bool staircase_;
};

// initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha).
class CosineDecay : public LearningRateSchedule {
 public:
  CosineDecay(double initial, int64_t decay_steps, double alpha = 0.0);
  double operator()(int64_t step) const override;
  std::string describe() const override;

 private:
  double initial_;
  int64_t decay_steps_;
  double alpha_;
};

// SGDR: cosine periods starting at first_decay_steps, each t_mul times longer and m_mul times
// lower than the previous.
class CosineDecayRestarts : public LearningRateSchedule {
 public:
  CosineDecayRestarts(double initial, int64_t first_decay_steps, double t_mul = 2.0,
                      double m_mul = 1.0, double alpha = 0.0);
  double operator()(int64_t step) const override;
  std::string describe() const override;

 private:
  double initial_;
  int64_t first_decay_steps_;
  double t_mul_, m_mul_, alpha_;
};

// Linear warmup from `start` to after(0) over warmup_steps, then after(step - warmup_steps).
class LinearWarmup : public LearningRateSchedule {
 public:
  LinearWarmup(int64_t warmup_steps, SchedulePtr after, double start = 0.0);
  double operator()(int64_t step) const override;
  std::string describe() const override;

 private:
  int64_t warmup_steps_;
  SchedulePtr after_;
  double start_;
};

}  // namespace tern::optim
