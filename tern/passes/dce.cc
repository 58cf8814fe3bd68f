// Dead code elimination: mark from the roots, sweep in reverse topological order.
#include "tern/passes/dce.h"

#include <unordered_set>

#include "tern/ir/analysis/topo_order.h"

namespace tern::passes {

bool Dce::run(ir::Graph& g) {
  std::unordered_set<ir::Node*> live;
  std::vector<ir::Node*> stack;
  for (const auto& o : g.outputs()) stack.push_back(o.value->node());
  for (ir::Node* n : g.nodes()) {
    if (n->op().has_trait(ops::kTraitStateful) || n->op().has_trait(ops::kTraitMutatesInputs)) {
      stack.push_back(n);
    }
  }
  while (!stack.empty()) {
    ir::Node* n = stack.back();
    stack.pop_back();
    if (!live.insert(n).second) continue;
    for (ir::Value* v : n->inputs()) stack.push_back(v->node());
    for (ir::Node* c : n->control_inputs()) stack.push_back(c);
  }
  if (live.size() == g.num_nodes()) return false;
  std::vector<ir::Node*> order = ir::topo_order(g);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (!live.count(*it)) g.remove_node(*it);
  }
  return true;
}

}  // namespace tern::passes
