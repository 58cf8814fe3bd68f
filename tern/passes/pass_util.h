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
// The single reader of `v` if `v` has exactly one use and is not a graph output, else nullptr.
ir::Node* sole_user(const ir::Graph& g, const ir::Value* v);
// True if every use of `v` is by a node in `group` and `v` is not a graph output.
bool only_used_by(const ir::Graph& g, const ir::Value* v,
                  const std::unordered_set<const ir::Node*>& group);

// --- control edges across rewrites ---

// Nodes that list one of `nodes` as a control input (excluding `nodes` themselves).
std::vector<ir::Node*> control_successors_of(const ir::Graph& g,
                                             const std::vector<ir::Node*>& nodes);
// True if a node in `targets` is an ancestor (through data or control edges) of a value in
// `values`: making `targets` wait for the values' consumer would then close a cycle.
bool any_ancestor_of(const std::vector<ir::Value*>& values, const std::vector<ir::Node*>& targets);
// `into` replaces the `merged` nodes in the control order: it runs after everything any of them
// ran after, and everything that waited for one of them now waits for `into`.
void inherit_control_edges(ir::Graph& g, const std::vector<ir::Node*>& merged, ir::Node* into);

}  // namespace tern::passes
