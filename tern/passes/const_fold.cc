// Constant folding in one topological sweep (folded results feed later folds).
#include "tern/passes/const_fold.h"

#include <algorithm>

#include "tern/base/logging.h"
#include "tern/ir/analysis/topo_order.h"
#include "tern/passes/pass_util.h"

namespace tern::passes {

bool ConstFold::run(ir::Graph& g) {
  TERN_CHECK(static_cast<bool>(evaluator_), "const_fold needs an evaluator");
  bool changed = false;
  for (ir::Node* n : ir::topo_order(g)) {
    // A node ordered after others through control edges passes that order on to its users;
    // replacing it by a constant would drop it, so such nodes stay.
    if (!is_pure(*n) || n->num_outputs() == 0 || !n->control_inputs().empty() ||
        std::find(keep_ops_.begin(), keep_ops_.end(), n->op_name()) != keep_ops_.end()) {
      continue;
    }
    std::vector<Tensor> inputs;
    size_t in_bytes = 0;
    for (ir::Value* v : n->inputs()) {
      const Tensor* t = constant_value(v);
      if (!t) break;
      inputs.push_back(*t);
      in_bytes += t->nbytes();
    }
    if (inputs.size() != static_cast<size_t>(n->num_inputs())) continue;
    size_t out_bytes = 0;
    for (int i = 0; i < n->num_outputs(); ++i) {
      const ir::Value* v = n->output(i);
      out_bytes += static_cast<size_t>(v->shape().num_elements()) * dtype_size(v->dtype());
    }
    if (out_bytes > std::max(in_bytes, max_bytes_)) continue;
    std::vector<Tensor> outputs;
    try {
      outputs = evaluator_(*n, inputs);
    } catch (const Error& e) {
      log_verbose("passes", "const_fold: leaving '", n->name(), "' (", n->op_name(),
                  "): ", e.message());
      continue;
    }
    TERN_CHECK(outputs.size() == static_cast<size_t>(n->num_outputs()), "evaluator returned ",
               outputs.size(), " outputs for ", n->op_name());
    for (int i = 0; i < n->num_outputs(); ++i) {
      ir::Value* out = n->output(i);
      if (out->uses().empty() && !is_graph_output(g, out)) continue;
      TERN_CHECK(outputs[static_cast<size_t>(i)].type() == out->type(), "evaluator output ", i,
                 " of '", n->name(), "' is ", outputs[static_cast<size_t>(i)].type().to_string());
      ir::Value* c =
          g.constant(outputs[static_cast<size_t>(i)].clone(), str_cat(n->name(), "/folded"));
      g.replace_all_uses(out, c);
    }
    g.remove_node(n);
    changed = true;
  }
  return changed;
}

}  // namespace tern::passes
