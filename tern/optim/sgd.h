// SGD with optional momentum, Nesterov momentum and L2 weight decay (sgd_update).
#pragma once

#include "tern/optim/optimizer.h"

namespace tern::optim {

struct SGDOptions {
  double momentum = 0.0;  // [0, 1)
  bool nesterov = false;
  double weight_decay = 0.0;  // L2 penalty added to the gradient, >= 0
};

class SGD : public Optimizer {
 public:
  explicit SGD(SchedulePtr lr, SGDOptions options = {});
  explicit SGD(double lr = 0.01, SGDOptions options = {})
      : SGD(std::make_shared<ConstantSchedule>(lr), options) {}
  std::string name() const override { return "SGD"; }

 protected:
  std::string update_op() const override { return "sgd_update"; }
  ops::Attrs update_attrs() const override;

 private:
  SGDOptions options_;
};

}  // namespace tern::optim
