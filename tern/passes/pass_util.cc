// Shared pass queries.
#include "tern/passes/pass_util.h"

#include <cmath>

namespace tern::passes {

bool is_pure(const ir::Node& n) {
  const ops::OpDef& op = n.op();
  return !op.has_trait(ops::kTraitStateful) && !op.has_trait(ops::kTraitMutatesInputs) &&
         !op.has_trait(ops::kTraitSource);
}

bool is_constant(const ir::Node& n) {
  return n.op_name() == "constant";
}

const Tensor* constant_value(const ir::Value* v) {
  if (!is_constant(*v->node())) return nullptr;
  return &v->node()->attrs().get_tensor("value");
}

std::optional<double> constant_splat(const ir::Value* v) {
  const Tensor* t = constant_value(v);
  if (!t || t->num_elements() == 0) return std::nullopt;
  double first = t->get(0);
  for (int64_t i = 1; i < t->num_elements(); ++i) {
    double x = t->get(i);
    if (x != first || std::signbit(x) != std::signbit(first)) return std::nullopt;
  }
  if (std::isnan(first)) return std::nullopt;
  return first;
}

std::unordered_set<const ir::Node*> control_predecessors(const ir::Graph& g) {
  std::unordered_set<const ir::Node*> out;
  for (ir::Node* n : g.nodes()) {
    for (ir::Node* c : n->control_inputs()) out.insert(c);
  }
  return out;
}

bool is_graph_output(const ir::Graph& g, const ir::Value* v) {
  for (const auto& o : g.outputs()) {
    if (o.value == v) return true;
  }
  return false;
}

ir::Node* sole_user(const ir::Graph& g, const ir::Value* v) {
  if (v->uses().size() != 1 || is_graph_output(g, v)) return nullptr;
  return v->uses()[0].node;
}

bool only_used_by(const ir::Graph& g, const ir::Value* v,
                  const std::unordered_set<const ir::Node*>& group) {
  if (is_graph_output(g, v)) return false;
  for (const ir::Use& u : v->uses()) {
    if (!group.count(u.node)) return false;
  }
  return true;
}

std::vector<ir::Node*> control_successors_of(const ir::Graph& g,
                                             const std::vector<ir::Node*>& nodes) {
  std::unordered_set<const ir::Node*> set(nodes.begin(), nodes.end());
  std::vector<ir::Node*> out;
  for (ir::Node* n : g.nodes()) {
    if (set.count(n)) continue;
    for (ir::Node* c : n->control_inputs()) {
      if (set.count(c)) {
        out.push_back(n);
        break;
      }
    }
  }
  return out;
}

bool any_ancestor_of(const std::vector<ir::Value*>& values, const std::vector<ir::Node*>& targets) {
  if (targets.empty()) return false;
  std::unordered_set<const ir::Node*> want(targets.begin(), targets.end());
  std::unordered_set<const ir::Node*> seen;
  std::vector<const ir::Node*> stack;
  for (const ir::Value* v : values) stack.push_back(v->node());
  while (!stack.empty()) {
    const ir::Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (want.count(n)) return true;
    for (const ir::Value* v : n->inputs()) stack.push_back(v->node());
    for (const ir::Node* c : n->control_inputs()) stack.push_back(c);
  }
  return false;
}

void inherit_control_edges(ir::Graph& g, const std::vector<ir::Node*>& merged, ir::Node* into) {
  std::unordered_set<const ir::Node*> set(merged.begin(), merged.end());
  for (ir::Node* m : merged) {
    for (ir::Node* c : m->control_inputs()) {
      if (!set.count(c) && c != into) into->add_control_input(c);
    }
  }
  for (ir::Node* s : control_successors_of(g, merged)) {
    if (s != into) s->add_control_input(into);
  }
}

}  // namespace tern::passes
