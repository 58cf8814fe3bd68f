// dce: dead code elimination. Removes every node that neither computes a graph output nor has an
// effect, found by walking data and control edges back from the roots.
// Roots (always kept): producers of graph outputs, stateful nodes (inputs, variables, random ops)
// and nodes that mutate their inputs (optimizer updates, assign).
// Does not: drop unused outputs of a multi-output node (the node stays whole), fold or merge
// anything, or remove a node some live node waits for through a control edge.
#pragma once

#include "tern/passes/pass.h"

namespace tern::passes {

class Dce final : public Pass {
 public:
  std::string name() const override { return "dce"; }
  bool run(ir::Graph& g) override;
};

}  // namespace tern::passes
