// Graph deep copy in topological order.
#include "tern/ir/clone.h"

#include "tern/ir/analysis/topo_order.h"

namespace tern::ir {

std::unique_ptr<Graph> clone_graph(const Graph& g,
                                   std::unordered_map<const Value*, Value*>* value_map) {
  auto out = std::make_unique<Graph>(g.name());
  std::unordered_map<const Value*, Value*> local;
  auto& map = value_map ? *value_map : local;
  std::unordered_map<const Node*, Node*> node_map;
  for (Node* n : topo_order(g)) {
    std::vector<Value*> inputs;
    for (Value* v : n->inputs()) inputs.push_back(map.at(v));
    Node* c = out->add_node(n->op_name(), inputs, n->attrs(), n->name());
    node_map[n] = c;
    for (int i = 0; i < n->num_outputs(); ++i) map[n->output(i)] = c->output(i);
  }
  for (Node* n : g.nodes()) {
    for (Node* ctl : n->control_inputs()) node_map.at(n)->add_control_input(node_map.at(ctl));
  }
  for (const auto& o : g.outputs()) out->add_output(o.name, map.at(o.value));
  return out;
}

}  // namespace tern::ir
