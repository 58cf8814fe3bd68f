// Memory planning: assigns every intermediate value a byte offset in one arena, so a compiled
// graph runs with no allocation per step. Values whose lifetimes do not overlap share bytes;
// an op's output may take its input's bytes in place when the OpDef allows it and the input dies
// there. Graph outputs, sources (inputs, variables, constants) are not planned: the runtime binds
// them. This is an analysis with a result, not a rewrite.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "tern/ir/graph.h"

namespace tern::passes {

struct MemoryPlan {
  size_t arena_bytes = 0;
  size_t naive_bytes = 0;  // sum of all planned values' sizes (what no reuse would cost)
  std::unordered_map<const ir::Value*, size_t> offsets;
  int inplace_count = 0;
};

constexpr size_t kArenaAlignment = 64;

// Plans the values defined by `order` (a topological order of the nodes that run).
MemoryPlan plan_memory(const ir::Graph& g, const std::vector<ir::Node*>& order);

}  // namespace tern::passes
