// Deep copy of a graph (same node names, attributes, outputs and control edges).
#pragma once

#include <memory>
#include <unordered_map>

#include "tern/ir/graph.h"

namespace tern::ir {

// `value_map`, if given, receives old value -> new value.
std::unique_ptr<Graph> clone_graph(const Graph& g,
                                   std::unordered_map<const Value*, Value*>* value_map = nullptr);

}  // namespace tern::ir
