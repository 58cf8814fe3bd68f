// Graph verifier.
#include "tern/ir/verifier.h"

#include <unordered_map>
#include <unordered_set>

#include "tern/ir/analysis/topo_order.h"

namespace tern::ir {
namespace {

template <typename... Args>
[[noreturn]] void fail(std::string_view after, const Args&... args) {
  throw_error(ErrorCode::kInternal, "graph verification failed",
              after.empty() ? "" : str_cat(" after ", after), ": ", args...);
}

}  // namespace

void verify(const Graph& g, std::string_view after) {
  std::unordered_set<const Node*> nodes;
  std::unordered_set<std::string> names;
  for (Node* n : g.nodes()) {
    nodes.insert(n);
    if (!names.insert(n->name()).second) fail(after, "duplicate node name '", n->name(), "'");
  }
  for (Node* n : g.nodes()) {
    std::vector<TensorType> in_types;
    for (int i = 0; i < n->num_inputs(); ++i) {
      Value* v = n->input(i);
      if (!v || !nodes.count(v->node()))
        fail(after, "node '", n->name(), "' input ", i, " is not in the graph");
      bool found = false;
      for (const Use& u : v->uses()) found = found || (u.node == n && u.input_index == i);
      if (!found) fail(after, "use list of ", v->ref(), " misses node '", n->name(), "'");
      in_types.push_back(v->type());
    }
    for (Node* c : n->control_inputs()) {
      if (!nodes.count(c))
        fail(after, "node '", n->name(), "' has a control input outside the graph");
    }
    for (int i = 0; i < n->num_outputs(); ++i) {
      for (const Use& u : n->output(i)->uses()) {
        if (!nodes.count(u.node) || u.node->input(u.input_index) != n->output(i)) {
          fail(after, "stale use of ", n->output(i)->ref());
        }
      }
    }
    ops::Attrs attrs = n->attrs();
    std::vector<TensorType> inferred;
    try {
      inferred = n->op().check_and_infer(n->name(), in_types, attrs);
    } catch (const Error& e) {
      fail(after, "node '", n->name(), "' no longer type-checks: ", e.message());
    }
    if (inferred.size() != static_cast<size_t>(n->num_outputs())) {
      fail(after, "node '", n->name(), "' has ", n->num_outputs(), " outputs, op infers ",
           inferred.size());
    }
    for (size_t i = 0; i < inferred.size(); ++i) {
      if (inferred[i] != n->output(static_cast<int>(i))->type()) {
        fail(after, "node '", n->name(), "' output ", i, " is ",
             n->output(static_cast<int>(i))->type().to_string(), " but infers ",
             inferred[i].to_string());
      }
    }
  }
  for (const auto& o : g.outputs()) {
    if (!o.value || !nodes.count(o.value->node()))
      fail(after, "graph output '", o.name, "' is not defined");
  }
  try {
    topo_order(g);  // throws on a cycle
  } catch (const Error& e) {
    fail(after, e.message());
  }
  // Mutations of variables run after every other reader of the variable.
  for (Node* n : g.nodes()) {
    if (!n->op().has_trait(ops::kTraitMutatesInputs)) continue;
    std::unordered_set<const Node*> before = ancestors(n);
    for (Value* v : n->inputs()) {
      const std::string& source = v->node()->op_name();
      if (source != "variable" && source != "variable_copy") continue;
      for (const Use& u : v->uses()) {
        if (u.node == n || u.node->op().has_trait(ops::kTraitMutatesInputs)) continue;
        if (!before.count(u.node)) {
          fail(after, "node '", n->name(), "' mutates variable '",
               v->node()->attrs().get_string("name"), "' but reader '", u.node->name(),
               "' is not ordered before it");
        }
      }
    }
  }
}

}  // namespace tern::ir
