// Common subexpression elimination by hashing (op, inputs, attributes, control inputs).
#include "tern/passes/cse.h"

#include <algorithm>
#include <unordered_map>

#include "tern/ir/analysis/topo_order.h"
#include "tern/passes/pass_util.h"

namespace tern::passes {
namespace {

struct Key {
  std::string op;
  std::vector<const ir::Value*> inputs;
  std::vector<const ir::Node*> controls;
  const ops::Attrs* attrs;

  bool operator==(const Key& o) const {
    return op == o.op && inputs == o.inputs && controls == o.controls && *attrs == *o.attrs;
  }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = std::hash<std::string>()(k.op) ^ (k.attrs->hash() * 31);
    for (const ir::Value* v : k.inputs) h = h * 1000003 ^ std::hash<const void*>()(v);
    for (const ir::Node* c : k.controls) h = h * 1000033 ^ std::hash<const void*>()(c);
    return h;
  }
};

Key key_of(const ir::Node& n) {
  Key k{n.op_name(), {}, {}, &n.attrs()};
  for (const ir::Value* v : n.inputs()) k.inputs.push_back(v);
  if (n.op().has_trait(ops::kTraitCommutative) && k.inputs.size() == 2) {
    const ir::Value *a = k.inputs[0], *b = k.inputs[1];
    auto rank = [](const ir::Value* v) { return std::make_pair(v->node()->id(), v->index()); };
    if (rank(b) < rank(a)) std::swap(k.inputs[0], k.inputs[1]);
  }
  k.controls.assign(n.control_inputs().begin(), n.control_inputs().end());
  std::sort(k.controls.begin(), k.controls.end(),
            [](const ir::Node* a, const ir::Node* b) { return a->id() < b->id(); });
  return k;
}

}  // namespace

bool Cse::run(ir::Graph& g) {
  std::unordered_map<ir::Node*, std::vector<ir::Node*>> control_succ;
  for (ir::Node* n : g.nodes()) {
    for (ir::Node* c : n->control_inputs()) control_succ[c].push_back(n);
  }
  std::unordered_map<Key, ir::Node*, KeyHash> seen;
  bool changed = false;
  for (ir::Node* n : ir::topo_order(g)) {
    if (!is_pure(*n) && !is_constant(*n)) continue;
    auto [it, inserted] = seen.emplace(key_of(*n), n);
    if (inserted) continue;
    ir::Node* keep = it->second;
    for (int i = 0; i < n->num_outputs(); ++i) g.replace_all_uses(n->output(i), keep->output(i));
    for (ir::Node* s : control_succ[n]) {
      s->add_control_input(keep);
      control_succ[keep].push_back(s);
    }
    g.remove_node(n);
    changed = true;
  }
  return changed;
}

}  // namespace tern::passes
