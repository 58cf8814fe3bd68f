// RMSprop.
#include "tern/optim/rmsprop.h"

namespace tern::optim {

RMSprop::RMSprop(SchedulePtr lr, RMSpropOptions options)
    : Optimizer(std::move(lr)), options_(options) {
  TERN_CHECK_ARG(options.rho >= 0 && options.rho < 1, "RMSprop: rho must be in [0, 1), got ",
                 options.rho);
  TERN_CHECK_ARG(options.momentum >= 0 && options.momentum < 1,
                 "RMSprop: momentum must be in [0, 1)");
  TERN_CHECK_ARG(options.epsilon > 0, "RMSprop: epsilon must be positive");
}

ops::Attrs RMSprop::update_attrs() const {
  return {{"rho", options_.rho},
          {"momentum", options_.momentum},
          {"epsilon", options_.epsilon},
          {"centered", options_.centered}};
}

}  // namespace tern::optim
