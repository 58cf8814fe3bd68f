// SGD with optional momentum, Nesterov momentum and L2 weight decay (sgd_update).
#pragma once

#include "tern/optim/optimizer.h"

namespace tern::optim {

class SGD : public Optimizer {
 public:
  explicit SGD(SchedulePtr lr, double momentum = 0.0, bool nesterov = false,
               double weight_decay = 0.0);
  explicit SGD(double lr = 0.01, double momentum = 0.0, bool nesterov = false,
               double weight_decay = 0.0)
      : SGD(std::make_shared<ConstantSchedule>(lr), momentum, nesterov, weight_decay) {}
  std::string name() const override { return "SGD"; }

 protected:
  std::string update_op() const override { return "sgd_update"; }
  ops::Attrs update_attrs() const override;

 private:
  double momentum_;
  bool nesterov_;
  double weight_decay_;
};

}  // namespace tern::optim
