// Read-only queries the passes share: purity, constants, control edges, graph outputs.
#pragma once

#include <optional>
#include <unordered_set>

#include "tern/ir/graph.h"

namespace tern::passes {

// A pure function of its inputs and attributes: not stateful, not mutating, not a source.
bool is_pure(const ir::Node& n);
bool is_constant(const ir::Node& n);
// The tensor of the constant node defining `v`, or nullptr.
const Tensor* constant_value(const ir::Value* v);
// If `v` is a constant whose elements all hold the same value (same sign for zeros), that value.
std::optional<double> constant_splat(const ir::Value* v);
// Nodes that are the control input of some node.
std::unordered_set<const ir::Node*> control_predecessors(const ir::Graph& g);
bool is_graph_output(const ir::Graph& g, const ir::Value* v);
// True if every use of `v` is by a node in `group` and `v` is not a graph output.
bool only_used_by(const ir::Graph& g, const ir::Value* v,
                  const std::unordered_set<const ir::Node*>& group);

}  // namespace tern::passes
