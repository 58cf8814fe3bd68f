// amp: automatic mixed precision. Rewrites an f32 graph so that its compute-heavy ops run in a
// 16-bit float type (bf16 for the Keras-style policy "mixed_bfloat16", f16 for "mixed_float16")
// while variables, the optimizer update, losses, reductions and normalizations stay f32:
//   - allow list (always converted): matmul, conv2d, conv2d_backprop_input and their fused forms,
//     attention and attention_grad: f32 inputs are cast down, the op runs in 16 bits, its result
//     is cast back up (attention's saved softmax stays f32, and attention_grad reads it as such).
//     conv2d_backprop_filter takes 16-bit inputs and produces its weight gradient in f32
//     (dfilter_dtype = "f32": accumulated and stored in f32, no cast): oneDNN's bf16
//     backward-weights kernel with an f32 result runs at its bf16 speed (3x3x64 at 32x32, batch
//     32: 6.2 ms vs 10.4 ms in f32), where a bf16 result would round every weight gradient.
//     bf16 matmuls whose result only f32 readers take (through the cast back up: weight
//     gradients for the f32 optimizer, logits for an f32 loss) store f32 directly (out_dtype =
//     "f32": accumulated and stored in f32, rounded once, no cast pass); f16 keeps the cast, as
//     Keras does, so that loss scaling sees f16 gradients.
//   - follow list (cheap ops that work in 16 bits: elementwise add/sub/mul, relu, gelu and their
//     grads, pooling and its grads, dropout, softmax and its grad (computed in f32, stored in 16
//     bits: attention's softmax between two matmuls, as Keras' MultiHeadAttention under
//     mixed_bfloat16 and PyTorch's CPU autocast run it; W6-bf16 145.8 -> 141.9 ms),
//     reshape/transpose and other pure data movement):
//     converted only when they sit between allow-listed ops, i.e. some input comes (through
//     follow-list ops) from an allow-listed op and some output reaches one. So a bias add and relu
//     between two matmuls stay in bf16 and no cast is spent on them, while e.g. a batch-norm
//     moving-average update fed by a conv stays f32.
//   - batch_norm_training and batch_norm_grad follow the same rule, in their mixed form (as Keras
//     and PyTorch do): only the activations (x; dy and x) are cast down and only y / dx are
//     16-bit; gamma, beta, mean and var are read in f32 and mean, var, dgamma, dbeta come out in
//     f32 with no cast, so the moving-average updates and everything reading the statistics stay
//     f32. Only those activation edges count for "between allow-listed ops".
//   - everything else (a softmax not between allow-listed ops, layer norm, batch_norm_inference,
//   reductions, losses, optimizer
//     updates, casts, integer ops, graph outputs) is untouched and sees f32 values.
// Casts are shared: each f32 value is cast down at most once, and a converted op's result is
// handed to the next converted op in 16 bits directly (the cast back up only feeds f32 readers;
// it is removed when there are none). A node's control edges move to its converted form.
// Run on the whole training step (after autodiff), so backward matmuls/convolutions convert too;
// weight gradients come back as f32 for the optimizer (f32 master weights).
// Allow-listed ops convert only where a fast 16-bit kernel exists (has_fast_kernel), unless
// convert_without_fast_kernel is set: the runtime sets it for f16 ("mixed_float16" is a policy
// for GPUs; on a CPU without f16 arithmetic it still converts, and the f16 matmuls and
// convolutions run on reference kernels, which is how the policy is tested on CPUs).
// With variable_copies, a cast down of an f32 variable (a weight, or its reshape, read by converted
// ops) becomes a read of the variable store's 16-bit copy of it (op variable_copy): the optimizer
// update that writes the variable writes the copy too, from the chunk it just updated (attribute
// copies), so a step reads no f32 weight for its 16-bit ops (ResNet-50: 25.6M weights, 8.5 ms of
// casts reading them cold). Only where every reader of the cast runs before the update and nothing
// else writes the variable; a graph that never writes it reads the copy as it is (the store casts
// it again whenever the variable changed: VariableStore).
// Does not: change f64 graphs, or scale losses (mixed_float16's loss scaling is added to the train
// step by tern/train, tern/optim/loss_scale.h, before this pass runs).
#pragma once

#include <functional>
#include <string_view>

#include "tern/passes/pass.h"

namespace tern::passes {

struct AmpOptions {
  DType dtype = DType::kBF16;  // the 16-bit compute type (kBF16 or kF16)
  // Whether a fast (non-reference) kernel exists for (op, dtype). A follow-list op is converted
  // only if its 16-bit kernel is not slower in kind than its f32 one (fast in 16 bits, or ref-only
  // in both). Empty: assume every op has one.
  std::function<bool(std::string_view op, DType dtype)> has_fast_kernel;
  // Convert allow-listed ops even when their 16-bit kernel is only the reference one.
  bool convert_without_fast_kernel = false;
  // Read the variable store's 16-bit copies of weights instead of casting them (see above).
  bool variable_copies = false;
};

class AutoMixedPrecision final : public Pass {
 public:
  explicit AutoMixedPrecision(AmpOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "amp"; }
  bool run(ir::Graph& g) override;

 private:
  AmpOptions options_;
};

// The compute dtype of a Keras-style precision policy: "float32" -> f32, "mixed_bfloat16" ->
// bf16, "mixed_float16" -> f16. InvalidArgument naming the valid policies otherwise.
DType policy_compute_dtype(std::string_view policy);

}  // namespace tern::passes
