// SGD.
#include "tern/optim/sgd.h"

namespace tern::optim {

SGD::SGD(SchedulePtr lr, double momentum, bool nesterov, double weight_decay)
    : Optimizer(std::move(lr)),
      momentum_(momentum),
      nesterov_(nesterov),
      weight_decay_(weight_decay) {
  TERN_CHECK_ARG(momentum >= 0 && momentum < 1, "SGD: momentum must be in [0, 1), got ", momentum);
  TERN_CHECK_ARG(weight_decay >= 0, "SGD: weight_decay must be >= 0, got ", weight_decay);
}

ops::Attrs SGD::update_attrs() const {
  return {{"momentum", momentum_}, {"nesterov", nesterov_}, {"weight_decay", weight_decay_}};
}

}  // namespace tern::optim
