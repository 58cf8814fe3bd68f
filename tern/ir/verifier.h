// Verifier: structural and type invariants of a graph. Runs after every pass.
// Checks: unique node names; inputs and control inputs belong to the graph; use lists agree with
// inputs; output types equal re-inferred types; no cycles; graph outputs are defined; every node
// that mutates a variable runs after all other readers of that variable.
#pragma once

#include <string_view>

#include "tern/ir/graph.h"

namespace tern::ir {

// Internal error naming the broken invariant and `after` (e.g. the pass that just ran).
void verify(const Graph& g, std::string_view after = "");

}  // namespace tern::ir
