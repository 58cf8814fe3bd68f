// GradientProbe: the gradients of a compiled model's loss with respect to every trainable weight
// on one batch, computed by a separate small executable (forward in training mode, dropout
// offset 0, no updates applied). For gradient histograms; training itself never outputs them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tern/runtime/executable.h"

namespace tern::nn {
class Model;
}

namespace tern::train {

class GradientProbe {
 public:
  // (weight name, gradient) for every trainable weight, in model order.
  std::vector<std::pair<std::string, Tensor>> compute(nn::Model& model, const Tensor& x,
                                                      const Tensor& y);

 private:
  std::map<std::string, std::unique_ptr<runtime::Executable>> executables_;  // by batch types
};

}  // namespace tern::train
