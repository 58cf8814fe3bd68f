// cse: common subexpression elimination. Two pure nodes applying the same op, with equal
// attributes, to the same input values and after the same control inputs compute the same
// thing: uses of the later one (in topological order) move to the earlier one, which also
// inherits its control successors, and the later one is removed. Constants with the same type
// and bytes merge the same way. Inputs of commutative binary ops are compared as a set.
// Does not: merge stateful or mutating nodes, inputs or variables (each read is its own event),
// or prove equalities beyond identical inputs (no algebra: that is simplify's job).
#pragma once

#include "tern/passes/pass.h"

namespace tern::passes {

class Cse final : public Pass {
 public:
  std::string name() const override { return "cse"; }
  bool run(ir::Graph& g) override;
};

}  // namespace tern::passes
