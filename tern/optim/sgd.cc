// SGD.
#include "tern/optim/sgd.h"

namespace tern::optim {

SGD::SGD(SchedulePtr lr, SGDOptions options) : Optimizer(std::move(lr)), options_(options) {
  TERN_CHECK_ARG(options.momentum >= 0 && options.momentum < 1,
                 "SGD: momentum must be in [0, 1), got ", options.momentum);
  TERN_CHECK_ARG(options.weight_decay >= 0, "SGD: weight_decay must be >= 0, got ",
                 options.weight_decay);
}

ops::Attrs SGD::update_attrs() const {
  return {{"momentum", options_.momentum},
          {"nesterov", options_.nesterov},
          {"weight_decay", options_.weight_decay}};
}

}  // namespace tern::optim
