// Kahn-style topological sort, preferring insertion order among ready nodes.
#include "tern/ir/analysis/topo_order.h"

#include <algorithm>
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

// Moves kTraitScheduleEarly nodes up and kTraitScheduleLate nodes down within a valid order.
void apply_schedule_hints(std::vector<Node*>& order) {
  bool any = false;
  for (Node* n : order) {
    any = any || n->op().has_trait(ops::kTraitScheduleEarly) ||
          n->op().has_trait(ops::kTraitScheduleLate);
  }
  if (!any) return;
  auto depends_on = [](Node* n, Node* p) {
    for (Value* v : n->inputs()) {
      if (v->node() == p) return true;
    }
    for (Node* c : n->control_inputs()) {
      if (c == p) return true;
    }
    return false;
  };
  for (size_t i = 0; i < order.size(); ++i) {
    Node* n = order[i];
    if (!n->op().has_trait(ops::kTraitScheduleEarly)) continue;
    size_t target = 0;  // just after the latest predecessor
    for (size_t j = i; j-- > 0;) {
      if (depends_on(n, order[j])) {
        target = j + 1;
        break;
      }
    }
    if (target < i) {
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(i));
      order.insert(order.begin() + static_cast<std::ptrdiff_t>(target), n);
    }
  }
  for (size_t i = order.size(); i-- > 0;) {
    Node* n = order[i];
    if (!n->op().has_trait(ops::kTraitScheduleLate)) continue;
    size_t target = order.size() - 1;  // just before the earliest successor
    for (size_t j = i + 1; j < order.size(); ++j) {
      if (depends_on(order[j], n)) {
        target = j - 1;
        break;
      }
    }
    if (target > i) {
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(i));
      order.insert(order.begin() + static_cast<std::ptrdiff_t>(target), n);
    }
  }
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
  std::vector<Node*> order = order_of(nodes);
  apply_schedule_hints(order);
  return order;
}

std::unordered_set<const Node*> ancestors(const Node* n) {
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> stack{n};
  while (!stack.empty()) {
    const Node* c = stack.back();
    stack.pop_back();
    for (Value* v : c->inputs()) {
      if (seen.insert(v->node()).second) stack.push_back(v->node());
    }
    for (Node* p : c->control_inputs()) {
      if (seen.insert(p).second) stack.push_back(p);
    }
  }
  return seen;
}

}  // namespace tern::ir
