// Adam / AdamW.
#include "tern/optim/adam.h"

namespace tern::optim {

Adam::Adam(SchedulePtr lr, AdamOptions options, bool decoupled)
    : Optimizer(std::move(lr)), options_(options), decoupled_(decoupled) {
  TERN_CHECK_ARG(options.beta1 >= 0 && options.beta1 < 1, name(), ": beta1 must be in [0, 1), got ",
                 options.beta1);
  TERN_CHECK_ARG(options.beta2 >= 0 && options.beta2 < 1, name(), ": beta2 must be in [0, 1), got ",
                 options.beta2);
  TERN_CHECK_ARG(options.epsilon > 0, name(), ": epsilon must be positive, got ", options.epsilon);
}

ops::Attrs Adam::update_attrs() const {
  ops::Attrs a{{"beta1", options_.beta1},
               {"beta2", options_.beta2},
               {"epsilon", options_.epsilon},
               {"amsgrad", options_.amsgrad}};
  if (decoupled_) a.set("weight_decay", options_.weight_decay);
  return a;
}

}  // namespace tern::optim
