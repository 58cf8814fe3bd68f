// Topological order of a graph's nodes (data and control edges), stable with respect to
// insertion order. Read-only.
#pragma once

#include <unordered_set>
#include <vector>

#include "tern/ir/graph.h"

namespace tern::ir {

// All nodes, every node after its inputs and control inputs. Internal error on a cycle.
std::vector<Node*> topo_order(const Graph& g);
// Only the nodes needed to compute the graph outputs and every stateful / mutating node. Nodes
// whose op has kTraitScheduleEarly move up to just after their last input's producer, and those
// with kTraitScheduleLate down to just before their first consumer, so that asynchronous work
// (a gradient bucket's all-reduce) starts early and is awaited late.
std::vector<Node*> live_topo_order(const Graph& g);
// Every node `n` depends on, through data and control edges (not `n` itself, unless on a cycle).
std::unordered_set<const Node*> ancestors(const Node* n);

}  // namespace tern::ir
