// fuse_norm_activation (see the header).
#include "tern/passes/fuse_norm_activation.h"

#include <unordered_set>

#include "tern/ir/analysis/topo_order.h"
#include "tern/passes/pass_util.h"

namespace tern::passes {
namespace {

// Replaces the batch norm node `bn` and the relu (or relu_grad) node `other` by a copy of `bn` with
// `inputs` and activation = "relu", whose output 0 stands for `result` and outputs 1, 2 for
// `bn`'s. False (nothing changed) if taking over their control edges would close a cycle.
bool replace(ir::Graph& g, ir::Node* bn, ir::Node* other, std::vector<ir::Value*> inputs,
             ir::Value* result) {
  const std::vector<ir::Node*> pair = {bn, other};
  if (any_ancestor_of(inputs, control_successors_of(g, pair))) return false;
  ops::Attrs attrs = bn->attrs();
  attrs.set("activation", std::string("relu"));
  ir::Node* fused =
      g.add_node(bn->op_name(), std::move(inputs), std::move(attrs), str_cat(bn->name(), "/relu"));
  inherit_control_edges(g, pair, fused);
  g.replace_all_uses(result, fused->output(0));
  for (int k = 1; k < bn->num_outputs(); ++k) g.replace_all_uses(bn->output(k), fused->output(k));
  // The reader of the pair's inner value goes first.
  const bool other_reads_bn = other->input(0) == bn->output(0);
  g.remove_node(other_reads_bn ? other : bn);
  g.remove_node(other_reads_bn ? bn : other);
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
    ir::Node* other = nullptr;
    std::vector<ir::Value*> inputs = n->inputs();
    ir::Value* result = n->output(0);
    if (forward) {  // relu(y)
      other = sole_user(g, n->output(0));
      if (!other || other->op_name() != "relu") continue;
      result = other->output();
    } else {  // batch_norm_grad(relu_grad(dy, y), ...)
      other = n->input(0)->node();
      if (other->op_name() != "relu_grad" || sole_user(g, other->output()) != n) continue;
      inputs[0] = other->input(0);
      inputs.push_back(other->input(1));
    }
    if (replace(g, n, other, std::move(inputs), result)) {
      removed.insert({n, other});
      changed = true;
    }
  }
  return changed;
}

}  // namespace tern::passes
