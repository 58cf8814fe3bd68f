// Memory planning (first version: every value gets its own aligned slot; no reuse yet).
#include "tern/passes/memory_plan.h"

namespace tern::passes {

MemoryPlan plan_memory(const ir::Graph& g, const std::vector<ir::Node*>& order) {
  (void)g;
  MemoryPlan plan;
  for (ir::Node* n : order) {
    if (n->is_source()) continue;
    for (int i = 0; i < n->num_outputs(); ++i) {
      const ir::Value* v = n->output(i);
      size_t bytes = static_cast<size_t>(v->shape().num_elements()) * dtype_size(v->dtype());
      size_t aligned = (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
      plan.offsets[v] = plan.arena_bytes;
      plan.arena_bytes += aligned;
      plan.naive_bytes += aligned;
    }
  }
  return plan;
}

}  // namespace tern::passes
