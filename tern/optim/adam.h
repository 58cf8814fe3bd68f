// Adam and AdamW (decoupled weight decay), Keras semantics (adam_update / adamw_update).
#pragma once

#include "tern/optim/optimizer.h"

namespace tern::optim {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  double weight_decay = 0.004;  // AdamW only (Keras' default)
};

class Adam : public Optimizer {
 public:
  explicit Adam(SchedulePtr lr, AdamOptions options = {}, bool decoupled_weight_decay = false);
  explicit Adam(double lr = 1e-3, AdamOptions options = {})
      : Adam(std::make_shared<ConstantSchedule>(lr), options) {}
  std::string name() const override { return decoupled_ ? "AdamW" : "Adam"; }

 protected:
  std::string update_op() const override { return decoupled_ ? "adamw_update" : "adam_update"; }
  ops::Attrs update_attrs() const override;

 private:
  AdamOptions options_;
  bool decoupled_;
};

class AdamW : public Adam {
 public:
  explicit AdamW(SchedulePtr lr, AdamOptions options = {}) : Adam(std::move(lr), options, true) {}
  explicit AdamW(double lr = 1e-3, AdamOptions options = {})
      : Adam(std::make_shared<ConstantSchedule>(lr), options, true) {}
};

}  // namespace tern::optim
