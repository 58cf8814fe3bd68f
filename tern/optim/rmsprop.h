// RMSprop with optional momentum and centering, Keras semantics (rmsprop_update).
#pragma once

#include "tern/optim/optimizer.h"

namespace tern::optim {

struct RMSpropOptions {
  double rho = 0.9;
  double momentum = 0.0;
  double epsilon = 1e-7;
  bool centered = false;
};

class RMSprop : public Optimizer {
 public:
  explicit RMSprop(SchedulePtr lr, RMSpropOptions options = {});
  explicit RMSprop(double lr = 1e-3, RMSpropOptions options = {})
      : RMSprop(std::make_shared<ConstantSchedule>(lr), options) {}
  std::string name() const override { return "RMSprop"; }

 protected:
  std::string update_op() const override { return "rmsprop_update"; }
  ops::Attrs update_attrs() const override;

 private:
  RMSpropOptions options_;
};

}  // namespace tern::optim
