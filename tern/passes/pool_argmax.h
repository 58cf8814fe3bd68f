// pool_argmax: a max pooling whose gradient is also taken records where each maximum was, so the
// gradient need not read the pooled input again:
//   y = max_pool2d(x), dx = max_pool2d_grad(x, dy)   (the same pooling attributes)
//   -> y, argmax = max_pool2d_argmax(x), dx = max_pool2d_grad_argmax(dy, argmax)
// Both forms route each dy to its window's first maximum (a NaN being the maximum): the values
// and dx are the same bits (each element of dx gets one dy or +0). The CNN's [128, 26, 26, 32]
// 2x2 / 2 pooling, forward and gradient, 2 threads: f32 0.97 -> 0.62 ms, bf16 0.62 -> 0.37.
// Applies to f32 and bf16 pools whose windows do not overlap (stride >= ksize: overlapping ones
// sum their dy, slower this way), without control edges. The pipeline runs it only where the device
// has fast kernels for both argmax ops (PipelineOptions::pool_argmax) and not in deterministic
// pipelines.
#pragma once

#include "tern/passes/pass.h"

namespace tern::passes {

class PoolArgmax final : public Pass {
 public:
  std::string name() const override { return "pool_argmax"; }
  bool run(ir::Graph& g) override;
};

}  // namespace tern::passes
