// fuse_norm_activation: folds a relu into the batch norm it follows, both ways of a training step:
//   relu(batch_norm_training(x, gamma, beta).y)
//       -> batch_norm_training(x, gamma, beta) {activation = "relu"}
//   batch_norm_grad(relu_grad(dy, y), x, gamma, mean, var)
//       -> batch_norm_grad(dy, x, gamma, mean, var, y) {activation = "relu"}
// and a ResNet block's residual add (with its relu, if the relu alone reads the sum):
//   relu(add(batch_norm_training(x, gamma, beta).y, shortcut))
//       -> batch_norm_training(x, gamma, beta, shortcut) {activation = "relu"}
// (relu's gradient reads relu's output, which the fused node returns; ResNet-50 (64x64) bf16
// forward: the blocks' add + relu passes, 3.7 ms per step, go)
// (tern/ops/norm_ops.cc). Each saves a pass over the activations: the relu is applied in the
// normalization's output pass, and the gradient reads dy where y > 0 instead of a masked copy
// being written and read back. The results are the unfused graph's, bit for bit (the same
// rounding of y, the same masked values summed in the same order; one exception: a bf16 y that
// rounds to -0 from a negative subnormal is +0 when the relu comes first). Folds only what nothing
// else reads: a batch norm output that is also a graph output or read by another node keeps its
// relu, as does a masked gradient with a second reader. The fused node takes over the pair's
// control edges; a pair whose control successors feed its inputs is left alone (a cycle).
#pragma once

#include "tern/passes/pass.h"

namespace tern::passes {

class FuseNormActivation final : public Pass {
 public:
  std::string name() const override { return "fuse_norm_activation"; }
  bool run(ir::Graph& g) override;
};

}  // namespace tern::passes
