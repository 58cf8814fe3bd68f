// fuse_elementwise: merges connected elementwise ops that produce values of one type into a
// single fused_elementwise node whose program (tern/ops/fused_program.h) evaluates them in one
// loop, so intermediates never go to memory.
// A group grows backwards from its last node (the root) over producers that are elementwise ops
// with a fused opcode (unary math, add/sub/mul/div/pow/maximum/minimum, the *_grad helpers), on
// floating values of the root's exact type, and whose results only the group reads. Scalar
// constants become immediates; every other value the group reads becomes an input (it may
// broadcast). Groups of one node are left alone. The fused node takes over the members' control
// edges (a group whose control successors feed its inputs is left alone: that would be a cycle).
// Does not: fuse comparisons, where, cast or reductions; fuse across a shape change, a value
// with users outside the group or a graph output; merge with
// existing fused nodes; or run in deterministic pipelines (intermediates stay in the compute
// type, which may round differently from the unfused ops for 16-bit floats).
#pragma once

#include "tern/passes/pass.h"

namespace tern::passes {

class FuseElementwise final : public Pass {
 public:
  std::string name() const override { return "fuse_elementwise"; }
  bool run(ir::Graph& g) override;
};

// fuse_column_sum: a `sum` over every axis but the last of an f32 value that an elementwise
// producer computes (a fused_elementwise, or one op fuse_elementwise could take), directly or
// through a reshape that keeps the last dim, joins that producer: one fused_elementwise with
// column_sum = true returns both, summing the rows while they are in L1 instead of reading the
// value again (a dense layer's bias gradient after its activation's gradient: sum(gelu_grad(dy,
// x), axes = [0]); with keepdims, a reshape of the fused node's sums follows). The value keeps its
// other users. f32 only: a 16-bit value's sum reads half the bytes, and the fused loop's
// conversions cost more than that (bf16 [4096, 1024] on 2 Zen 5 cores: gelu_grad with its sum
// 1.39 ms fused against 1.13 + 0.11 apart; f32: 1.06-1.12 against 0.99 + 0.48-0.52). Also an
// attention_grad output flattened to rows [B T, H D] and summed into f32 (the q, k, v projections'
// bias gradients; bf16 heads' too, read with out_dtype f32): the attention_grad takes bias_sums
// and sums each (batch, head) block while in cache (W6's 12 such sums, ~1.3 ms per step, read
// their 4 MB cold; in W6-bf16 the 0.95 ms they took and the attention gradients' sums measured
// even). Runs after
// fuse_elementwise, outside deterministic pipelines (the sum's order of additions changes; it
// stays independent of the thread count).
class FuseColumnSum final : public Pass {
 public:
  std::string name() const override { return "fuse_column_sum"; }
  bool run(ir::Graph& g) override;
};

}  // namespace tern::passes
