// fuse_norm_activation (see the header).
#include "tern/passes/fuse_norm_activation.h"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "tern/ir/analysis/topo_order.h"
#include "tern/passes/pass_util.h"

namespace tern::passes {
namespace {

// Replaces the batch norm node `bn` and the nodes `others` folded into it (relu, relu_grad, add)
// by a copy of `bn` with `inputs` and `activation`, whose output 0 stands for `result` and outputs
// 1, 2 for `bn`'s. False (nothing changed) if taking over their control edges would close a cycle.
bool replace(ir::Graph& g, ir::Node* bn, const std::vector<ir::Node*>& others,
             std::vector<ir::Value*> inputs, ir::Value* result, const std::string& activation) {
  std::vector<ir::Node*> merged = {bn};
  merged.insert(merged.end(), others.begin(), others.end());
  if (any_ancestor_of(inputs, control_successors_of(g, merged))) return false;
  const bool residual =
      inputs.size() > bn->inputs().size() && bn->op_name() == "batch_norm_training";
  ops::Attrs attrs = bn->attrs();
  attrs.set("activation", activation);
  std::string suffix = residual ? "/residual" : "";
  if (activation == "relu") suffix += "/relu";
  ir::Node* fused =
      g.add_node(bn->op_name(), std::move(inputs), std::move(attrs), str_cat(bn->name(), suffix));
  inherit_control_edges(g, merged, fused);
  g.replace_all_uses(result, fused->output(0));
  for (int k = 1; k < bn->num_outputs(); ++k) g.replace_all_uses(bn->output(k), fused->output(k));
  // Readers go first: remove whatever nothing reads any more until all are gone.
  while (!merged.empty()) {
    auto unread = std::find_if(merged.begin(), merged.end(), [](const ir::Node* m) {
      for (int k = 0; k < m->num_outputs(); ++k) {
        if (!m->output(k)->uses().empty()) return false;
      }
      return true;
    });
    TERN_CHECK(unread != merged.end(), "fuse_norm_activation: a folded node is still read");
    g.remove_node(*unread);
    merged.erase(unread);
  }
  return true;
}

}  // namespace

bool FuseNormActivation::run(ir::Graph& g) {
  bool changed = false;
  std::unordered_set<const ir::Node*> removed;
  for (ir::Node* n : ir::topo_order(g)) {
    if (removed.count(n)) continue;
    const bool forward = n->op_name() == "batch_norm_training";
    if ((!forward && n->op_name() != "batch_norm_grad") ||
        n->attrs().get_string("activation") != "none") {
      continue;
    }
    std::vector<ir::Node*> others;
    std::vector<ir::Value*> inputs = n->inputs();
    ir::Value* result = n->output(0);
    std::string activation = "relu";
    if (forward) {
      ir::Node* user = sole_user(g, n->output(0));
      if (!user) continue;
      if (user->op_name() == "add" && n->num_inputs() == 3) {  // [relu](add(y, residual))
        ir::Value* y = n->output(0);
        ir::Value* residual = user->input(0) == y ? user->input(1) : user->input(0);
        if (residual == y || residual->type() != y->type()) continue;  // add(y, y), a broadcast
        inputs.push_back(residual);
        others.push_back(user);
        result = user->output();
        ir::Node* relu = sole_user(g, user->output());
        if (relu && relu->op_name() == "relu") {
          others.push_back(relu);
          result = relu->output();
        } else {
          activation = "none";
        }
      } else if (user->op_name() == "relu") {  // relu(y)
        others.push_back(user);
        result = user->output();
      } else {
        continue;
      }
    } else {  // batch_norm_grad(relu_grad(dy, y), ...)
      ir::Node* other = n->input(0)->node();
      if (other->op_name() != "relu_grad" || sole_user(g, other->output()) != n) continue;
      inputs[0] = other->input(0);
      inputs.push_back(other->input(1));
      others.push_back(other);
    }
    if (replace(g, n, others, std::move(inputs), result, activation)) {
      removed.insert(n);
      removed.insert(others.begin(), others.end());
      changed = true;
    }
  }
  return changed;
}

}  // namespace tern::passes
