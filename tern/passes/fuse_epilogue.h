// fuse_epilogue: folds what follows a matmul or conv2d into the op's epilogue:
//   act(add(add(op(a, b), bias), residual))  ->  fused_matmul / fused_conv2d(a, b, bias, residual)
// bias: a rank-1 [N] add along the output's last dim (either operand order); residual: an add of
// a value with the output's type; act: relu, gelu (either form), sigmoid or tanh. Each part is
// optional, in that order, but at least one must be there. The result keeps the base op's
// attributes plus activation, has_bias and has_residual (tern/ops/fused_ops.cc).
// conv2d also folds a following max_pool2d (and a relu after that pool) into fused_conv2d's pool
// (tern/ops/fused_ops.cc): in an inference graph the convolution's output is then pooled chunk by
// chunk while in cache instead of being written whole and read again; a training graph's
// convolution output is usually also read by its gradients, so it is not folded there.
// With a kernel query (PipelineOptions::fast_kernel), a training graph's conv2d [+ bias] read
// only by a max_pool2d_argmax (pass pool_argmax) becomes fused_conv2d with pool = "max_argmax",
// which returns both of the pooling's outputs, where the device has a kernel for that node (on
// the CPU: the grayscale CNN's one-channel first layer, and layers tern's fused Winograd runs,
// pooling each output tile in cache): the convolution-sized output is never written.
// Only values nothing else reads are folded in: an intermediate that is a graph output or has a
// second user ends the chain there. The fused node takes over the chain's control edges (it runs
// after whatever they ran after; whatever waited for them waits for it); a chain whose control
// successors feed the fused node's inputs is left alone, as fusing it would close a cycle.
// Does not: reorder adds (a residual add before the bias add ends the chain), fuse ops other
// than matmul / conv2d, or fuse in deterministic pipelines (the fused kernel rounds differently).
#pragma once

#include <utility>

#include "tern/passes/pass.h"

namespace tern::passes {

class FuseEpilogue final : public Pass {
 public:
  // fast_kernel: asked before a convolution takes a max_pool2d_argmax (unset: none does).
  explicit FuseEpilogue(KernelQuery fast_kernel = {}) : fast_kernel_(std::move(fast_kernel)) {}
  std::string name() const override { return "fuse_epilogue"; }
  bool run(ir::Graph& g) override;

 private:
  KernelQuery fast_kernel_;
};

}  // namespace tern::passes
