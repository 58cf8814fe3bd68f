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
// With a kernel query (PipelineOptions::fast_kernel), then, where the routed gradient dx of an
// f32 pooling over a convolution's output is read only by that convolution's filter gradient,
// its input gradient and sums over its spatial axes (the bias gradient):
//   conv2d_backprop_filter(x, dx) -> conv2d_backprop_filter_pooled(x, dy, argmax)
//   conv2d_backprop_input(dx, filter) -> conv2d_backprop_input_pooled(dy, filter, argmax)
//   sum(dx){axes covering H and W} -> sum(dy){same axes}   (each dy lands on one element of dx)
// so dx is never written, where the device has a kernel for every pooled node (else none is
// formed: dx would be written anyway). On the CPU: the grayscale CNN's one-channel first layer
// (its filter gradient alone; pooled_filter_grad_cpu.cc reads dy and argmax once) and layers
// tern's fused Winograd runs (pooled_winograd_cpu.cc expands each dy tile from dy and argmax as
// it reads it). Where both gradients are formed and a kernel takes them together, one node makes
// both (each expanded tile read once for the two products):
//   conv2d_backprop_input_pooled + conv2d_backprop_filter_pooled
//   -> dx, dfilter = conv2d_backprop_pooled(x, dy, filter, argmax)
#pragma once

#include <utility>

#include "tern/passes/pass.h"

namespace tern::passes {

class PoolArgmax final : public Pass {
 public:
  // fast_kernel: asked before a pooled gradient is formed (unset: none is).
  explicit PoolArgmax(KernelQuery fast_kernel = {}) : fast_kernel_(std::move(fast_kernel)) {}
  std::string name() const override { return "pool_argmax"; }
  bool run(ir::Graph& g) override;

 private:
  bool fuse_pooled_gradients(ir::Graph& g, ir::Node* route) const;
  bool join_gradients(ir::Graph& g, ir::Node* route, ir::Node* a, ir::Node* b) const;

  KernelQuery fast_kernel_;
};

}  // namespace tern::passes
