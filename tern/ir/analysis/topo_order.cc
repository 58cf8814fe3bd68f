// Kahn-style topological sort, preferring insertion order among ready nodes.
#include "tern/ir/analysis/topo_order.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace tern::ir {
namespace {

std::vector<Node*> order_of(const std::vector<Node*>& nodes) {
  std::unordered_map<Node*, int> pending;
  std::unordered_map<Node*, std::vector<Node*>> succ;
  std::unordered_set<Node*> in_set(nodes.begin(), nodes.end());
  for (Node* n : nodes) {
    int count = 0;
    std::unordered_set<Node*> preds;
    for (Value* v : n->inputs()) preds.insert(v->node());
    for (Node* c : n->control_inputs()) preds.insert(c);
    for (Node* p : preds) {
      if (!in_set.count(p)) continue;
      succ[p].push_back(n);
      ++count;
    }
    pending[n] = count;
  }
  auto cmp = [](Node* a, Node* b) { return a->id() > b->id(); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(cmp)> ready(cmp);
  for (Node* n : nodes) {
    if (pending[n] == 0) ready.push(n);
  }
  std::vector<Node*> out;
  out.reserve(nodes.size());
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    out.push_back(n);
    for (Node* s : succ[n]) {
      if (--pending[s] == 0) ready.push(s);
    }
  }
  if (out.size() != nodes.size()) throw_error(ErrorCode::kInternal, "graph has a cycle");
  return out;
}

}  // namespace

std::vector<Node*> topo_order(const Graph& g) {
  return order_of(g.nodes());
}

std::vector<Node*> live_topo_order(const Graph& g) {
  std::unordered_set<Node*> live;
  std::vector<Node*> stack;
  for (const auto& o : g.outputs()) stack.push_back(o.value->node());
  for (Node* n : g.nodes()) {
    if (n->op().has_trait(ops::kTraitMutatesInputs)) stack.push_back(n);
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (!live.insert(n).second) continue;
    for (Value* v : n->inputs()) stack.push_back(v->node());
    for (Node* c : n->control_inputs()) stack.push_back(c);
  }
  std::vector<Node*> nodes;
  for (Node* n : g.nodes()) {
    if (live.count(n)) nodes.push_back(n);
  }
  return order_of(nodes);
}

}  // namespace tern::ir
