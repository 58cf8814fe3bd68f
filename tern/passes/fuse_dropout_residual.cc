// fuse_dropout_residual: add(dropout(x, offset)#0, r) -> dropout(x, offset, r).
#include "tern/passes/fuse_dropout_residual.h"

#include "tern/passes/pass_util.h"

namespace tern::passes {

bool FuseDropoutResidual::run(ir::Graph& g) {
  bool changed = false;
  for (ir::Node* add : g.nodes_of("add")) {
    for (int k = 0; k < 2; ++k) {
      ir::Value* y = add->input(k);
      ir::Value* r = add->input(1 - k);
      ir::Node* drop = y->node();
      if (!drop || drop->op_name() != "dropout" || y->index() != 0 || drop->num_inputs() != 2 ||
          sole_user(g, y) != add || r == y || r->type() != y->type() ||
          add->output()->type() != y->type()) {
        continue;
      }
      std::vector<ir::Value*> inputs = {drop->input(0), drop->input(1), r};
      const std::vector<ir::Node*> chain = {drop, add};
      if (any_ancestor_of(inputs, control_successors_of(g, chain))) continue;
      ir::Node* fused =
          g.add_node("dropout", inputs, drop->attrs(), str_cat(add->name(), "/dropout"));
      inherit_control_edges(g, chain, fused);
      g.replace_all_uses(add->output(), fused->output(0));
      g.replace_all_uses(drop->output(1), fused->output(1));
      g.remove_node(add);
      g.remove_node(drop);
      changed = true;
      break;
    }
  }
  return changed;
}

}  // namespace tern::passes
