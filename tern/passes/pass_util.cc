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

bool only_used_by(const ir::Graph& g, const ir::Value* v,
                  const std::unordered_set<const ir::Node*>& group) {
  if (is_graph_output(g, v)) return false;
  for (const ir::Use& u : v->uses()) {
    if (!group.count(u.node)) return false;
  }
  return true;
}

}  // namespace tern::passes
