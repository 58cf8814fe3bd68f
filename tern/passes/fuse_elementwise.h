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

}  // namespace tern::passes
