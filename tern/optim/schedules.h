// Learning-rate schedules (Keras semantics): a function of the 0-based optimizer step. The
// trainer evaluates the schedule on the host every step and feeds the rate as a scalar input, so
// a schedule never recompiles the training graph. Each schedule with parameters takes them as one
// options struct (ExponentialDecayOptions, ...), which configs embed as they are.
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
struct PiecewiseConstantDecayOptions {
  std::vector<int64_t> boundaries;  // increasing steps
  std::vector<double> values;       // one more than boundaries
};

class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  explicit PiecewiseConstantDecay(PiecewiseConstantDecayOptions options);
  double operator()(int64_t step) const override;
  std::string describe() const override;

 private:
  PiecewiseConstantDecayOptions options_;
};

// initial * decay_rate ^ (step / decay_steps), floored exponent if staircase.
struct ExponentialDecayOptions {
  int64_t decay_steps = 1000;  // > 0
  double decay_rate = 0.96;
  bool staircase = false;
};

class ExponentialDecay : public LearningRateSchedule {
 public:
  ExponentialDecay(double initial, ExponentialDecayOptions options);
  double operator()(int64_t step) const override;
  std::string describe() const override;

 private:
  double initial_;
  ExponentialDecayOptions options_;
};

// initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha).
struct CosineDecayOptions {
  int64_t decay_steps = 1000;  // > 0
  double alpha = 0.0;          // the final fraction of the initial rate
};

class CosineDecay : public LearningRateSchedule {
 public:
  CosineDecay(double initial, CosineDecayOptions options);
  double operator()(int64_t step) const override;
  std::string describe() const override;

 private:
  double initial_;
  CosineDecayOptions options_;
};

// SGDR: cosine periods starting at first_decay_steps, each t_mul times longer and m_mul times
// lower than the previous.
struct CosineDecayRestartsOptions {
  int64_t first_decay_steps = 1000;  // > 0
  double t_mul = 2.0;                // > 0
  double m_mul = 1.0;
  double alpha = 0.0;
};

class CosineDecayRestarts : public LearningRateSchedule {
 public:
  CosineDecayRestarts(double initial, CosineDecayRestartsOptions options);
  double operator()(int64_t step) const override;
  std::string describe() const override;

 private:
  double initial_;
  CosineDecayRestartsOptions options_;
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
