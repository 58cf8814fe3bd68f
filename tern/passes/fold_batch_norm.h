// fold_batch_norm: folds an inference batch norm into the convolution or matmul before it, when
// the weights and the norm's statistics are constants (a served model: CompileOptions::
// frozen_variables turns its variables into constants):
//   batch_norm_inference(conv2d(x, w) [+ b], gamma, beta, mean, var)
//       -> add(conv2d(x, w * scale), beta + ([b] - mean) * scale),
//   scale = gamma * rsqrt(var + epsilon), one value per output channel (w's last dim: conv2d's
//   HWIO filter, matmul's [K, N] b without transpose_b).
// The new weight and shift are graph arithmetic on constants that const_fold (run next) computes
// once; fuse_epilogue then turns the shift into the convolution's bias and takes the residual add
// and relu that follow, so a ResNet block's conv -> bn -> [add] -> relu becomes one fused_conv2d
// at inference, as TensorFlow's Grappler and onnxruntime do. The result differs from the unfused
// graph by rounding only (the norm is applied to the weights before the sum instead of after).
// Does not: fold when any of w, b, gamma, beta, mean, var is not a constant (the weight product
// would then be computed at every run), for dtypes other than f32, when the producer's output has
// another reader or is a graph output, or when either node has control edges; run in
// deterministic pipelines (it changes bits).
#pragma once

#include "tern/passes/pass.h"

namespace tern::passes {

class FoldBatchNorm final : public Pass {
 public:
  std::string name() const override { return "fold_batch_norm"; }
  bool run(ir::Graph& g) override;
};

}  // namespace tern::passes
