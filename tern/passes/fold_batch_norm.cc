// fold_batch_norm (see the header).
#include "tern/passes/fold_batch_norm.h"

#include <unordered_set>
#include <vector>

#include "tern/ir/analysis/topo_order.h"
#include "tern/passes/pass_util.h"

namespace tern::passes {
namespace {

bool is_f32_constant(const ir::Value* v) {
  return v->dtype() == DType::kF32 && constant_value(v) != nullptr;
}

// The weight operand whose last dim is the output channel, or nullptr if `n` is not a conv2d or
// a plain matmul (no transposed b, no out_dtype) with a constant rank-2 b.
ir::Value* channel_weight(const ir::Node& n) {
  if (n.op_name() == "conv2d") return n.input(1);
  if (n.op_name() == "matmul" && !n.attrs().get_bool("transpose_b") &&
      n.attrs().get_string("out_dtype").empty() && n.input(1)->shape().rank() == 2) {
    return n.input(1);
  }
  return nullptr;
}

bool has_control_edges(const ir::Node& n, const std::unordered_set<const ir::Node*>& preds) {
  return !n.control_inputs().empty() || preds.count(&n) > 0;
}

}  // namespace

bool FoldBatchNorm::run(ir::Graph& g) {
  bool changed = false;
  const std::unordered_set<const ir::Node*> preds = control_predecessors(g);
  for (ir::Node* bn : ir::topo_order(g)) {
    if (bn->op_name() != "batch_norm_inference" || has_control_edges(*bn, preds)) continue;
    bool params_constant = true;  // gamma, beta, mean, var
    for (int i = 1; i < bn->num_inputs(); ++i) params_constant &= is_f32_constant(bn->input(i));
    if (!params_constant || bn->input(0)->dtype() != DType::kF32) continue;
    // [add(producer, b)] -> bn, each value read by the next node only.
    ir::Node* producer = bn->input(0)->node();
    ir::Node* bias_add = nullptr;
    ir::Value* bias = nullptr;
    if (producer->op_name() == "add") {
      for (int k = 0; k < 2; ++k) {
        ir::Value* other = producer->input(1 - k);
        ir::Node* p = producer->input(k)->node();
        if (channel_weight(*p) && other->shape() == bn->input(1)->shape() &&
            is_f32_constant(other) && sole_user(g, p->output()) == producer) {
          bias_add = producer, bias = other, producer = p;
          break;
        }
      }
    }
    ir::Value* w = channel_weight(*producer);
    if (!w || !is_f32_constant(w) || producer->output()->dtype() != DType::kF32 ||
        has_control_edges(*producer, preds) || (bias_add && has_control_edges(*bias_add, preds)) ||
        sole_user(g, bn->input(0)) != bn) {
      continue;
    }
    const std::string& name = bn->name();
    ir::Value* eps = g.scalar(DType::kF32, bn->attrs().get_float("epsilon"));
    ir::Value* rstd = g.add("rsqrt", {g.add("add", {bn->input(4), eps})});
    ir::Value* scale = g.add("mul", {bn->input(1), rstd}, {}, str_cat(name, "/scale"));
    ir::Value* centered = bias ? g.add("sub", {bias, bn->input(3)}) : g.add("neg", {bn->input(3)});
    ir::Value* shift =
        g.add("add", {bn->input(2), g.add("mul", {centered, scale})}, {}, str_cat(name, "/shift"));
    ir::Value* folded_w = g.add("mul", {w, scale}, {}, str_cat(name, "/folded_weight"));
    ir::Value* y = g.add(producer->op_name(), {producer->input(0), folded_w}, producer->attrs(),
                         str_cat(producer->name(), "/bn_folded"));
    ir::Value* out = g.add("add", {y, shift}, {}, str_cat(name, "/folded"));
    g.replace_all_uses(bn->output(0), out);
    g.remove_node(bn);
    if (bias_add) g.remove_node(bias_add);
    g.remove_node(producer);
    changed = true;
  }
  return changed;
}

}  // namespace tern::passes
