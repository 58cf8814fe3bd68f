// widen_contractions: bf16 matmuls computed as f32 matmuls on widened operands, with the widening
// written into the graph. For devices whose bf16 matmuls run that way anyway (a CPU without AMX
// whose bf16 dot products run at the f32 FLOP rate, i.e. not an AMD one: oneDNN's f32 kernels are
// faster there than its bf16 ones, tern/backends/cpu/onednn_widen.cc),
// where a kernel that widens its own operands converts the same tensor again for every matmul
// that reads it: an activation read by the forward matmul and by the weight gradient, a gradient
// read by the input and the weight gradients, a weight's bf16 copy read forward and backward.
//
// Each matmul / fused_matmul with a bf16 operand or result becomes the same op on f32 operands:
// every bf16 operand is read through one cast to f32 per value (shared by all the matmuls that
// read it), and a bf16 result is the f32 result cast to bf16 (out_dtype "f32" results need no
// cast). An operand that is a cast of an f32 value to bf16 (amp's cast of an input, a matmul
// result another matmul reads) is widened as one rounding to bf16 values in f32 (fused_elementwise
// round_bf16) instead of a cast down and a cast up; the cast down goes where nothing else reads it.
// A weight's bf16 copy (amp's variable_copy, written by the optimizer update) that only
// contractions and its update read becomes the store's f32 copy rounded to bf16 (variable_copy
// with dtype f32): the update writes it rounded, and the widened contractions read it with no
// cast per step (W2-bf16's step ~6% faster); a copy that any other op reads stays bf16.
// The values are those of the widening kernel bit for bit: bf16 products are exact in f32, both
// accumulate in f32, and the result is rounded once.
//
// Does not: touch convolutions (their kernels widen into blocked layouts of their own), ops
// without a bf16 operand, or f16 (no kernel widens f16). Runs after the fusions, on the ops they
// made, so a fused epilogue stays inside the f32 matmul.
#pragma once

#include "tern/passes/pass.h"

namespace tern::passes {

class WidenContractions final : public Pass {
 public:
  std::string name() const override { return "widen_contractions"; }
  bool run(ir::Graph& g) override;
};

}  // namespace tern::passes
