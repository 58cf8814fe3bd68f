// Memory planning: assigns every value computed by a kernel a byte offset in one arena, so a
// compiled graph runs with no allocation per step.
//   - Liveness over the execution order: a value lives from the step that defines it to its last
//     reader; graph outputs live to the end (the caller reads them after the run).
//   - Values whose lifetimes do not overlap share bytes: blocks are placed largest first, each at
//     the best-fitting gap (the smallest one it fits) among the blocks live at the same time,
//     every offset aligned to kArenaAlignment.
//   - In place: an output may take an input's block when the OpDef lists the (output, input)
//     pair, the input dies at that node, both have the same dtype and element count, and the
//     input is itself planned (never a variable, graph input or constant, which the runtime
//     binds) and not a graph output.
//   - Views: the output of a kTraitView op (reshape, expand_dims, squeeze) takes its input's
//     block even when the input lives on; the block then lives until both are dead, and nothing
//     is written in place into it before that.
// Sources (inputs, variables, constants) are not planned: the runtime binds them. This is an
// analysis with a result, not a rewrite.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <vector>

#include "tern/ir/graph.h"

namespace tern::passes {

struct Lifetime {
  int first = 0;  // step (index in the order) that defines the value
  int last = 0;   // last step that reads it (order.size() for graph outputs)
  size_t bytes = 0;
};

struct MemoryPlan {
  size_t arena_bytes = 0;
  size_t naive_bytes = 0;  // sum of all planned values' aligned sizes (what no reuse would cost)
  std::unordered_map<const ir::Value*, size_t> offsets;
  std::unordered_map<const ir::Value*, Lifetime> lifetimes;
  // Output -> the input whose bytes it was written into.
  std::unordered_map<const ir::Value*, const ir::Value*> inplace_of;
  int inplace_count = 0;
};

constexpr size_t kArenaAlignment = 64;

// Plans the values defined by `order` (a topological order of the nodes that run).
MemoryPlan plan_memory(const ir::Graph& g, const std::vector<ir::Node*>& order);

}  // namespace tern::passes
