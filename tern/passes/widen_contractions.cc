#include "tern/passes/widen_contractions.h"

#include <unordered_map>

#include "tern/ir/analysis/topo_order.h"
#include "tern/ops/fused_program.h"
#include "tern/passes/pass_util.h"

namespace tern::passes {
namespace {

bool is_contraction(const ir::Node& n) {
  return n.op_name() == "matmul" || n.op_name() == "fused_matmul";
}

bool reads_or_writes_bf16(const ir::Node& n) {
  for (const ir::Value* v : n.inputs()) {
    if (v->dtype() == DType::kBF16) return true;
  }
  return n.output()->dtype() == DType::kBF16;
}

class Widener {
 public:
  explicit Widener(ir::Graph& g) : g_(g) {}

  void rewrite(ir::Node* n) {
    std::vector<ir::Value*> inputs;
    for (ir::Value* v : n->inputs()) inputs.push_back(widened(v));
    ops::Attrs attrs = n->attrs();
    attrs.set("out_dtype", std::string());  // f32 operands give an f32 result
    ir::Node* wide =
        g_.add_node(n->op_name(), inputs, std::move(attrs), str_cat(n->name(), "/widened"));
    inherit_control_edges(g_, {n}, wide);
    ir::Value* result = wide->output();
    if (n->output()->dtype() == DType::kBF16) {
      result = g_.add("cast", {result}, {{"dtype", DType::kBF16}}, str_cat(n->name(), "/round"));
    }
    g_.replace_all_uses(n->output(), result);
    g_.remove_node(n);
  }

  // Removes the casts to bf16 that only widened operands read (now read by the roundings).
  void remove_dead_casts() {
    for (ir::Node* c : rounded_) {
      if (c->output()->uses().empty() && !is_graph_output(g_, c->output()) &&
          control_successors_of(g_, {c}).empty()) {
        g_.remove_node(c);
      }
    }
  }

 private:
  // `v` as f32: one conversion per bf16 value, whichever matmul asks first. A cast of an f32 value
  // to bf16 becomes its rounding to bf16 values in f32 (one pass instead of casting down and up).
  ir::Value* widened(ir::Value* v) {
    if (v->dtype() != DType::kBF16) return v;
    auto [it, fresh] = f32_.try_emplace(v);
    if (!fresh) return it->second;
    ir::Node* producer = v->node();
    if (producer->op_name() == "cast" && producer->input(0)->dtype() == DType::kF32 &&
        producer->control_inputs().empty()) {
      ops::FusedProgram round;
      round.num_inputs = 1;
      round.code.push_back({ops::FusedOpcode::kRoundBF16, 0});
      ops::Attrs attrs;
      round.to_attrs(attrs);
      it->second = g_.add("fused_elementwise", {producer->input(0)}, std::move(attrs),
                          str_cat(producer->name(), "/rounded"));
      rounded_.push_back(producer);
    } else {
      it->second = g_.add("cast", {v}, {{"dtype", DType::kF32}}, str_cat(producer->name(), "/f32"));
    }
    return it->second;
  }

  ir::Graph& g_;
  std::unordered_map<const ir::Value*, ir::Value*> f32_;
  std::vector<ir::Node*> rounded_;  // casts to bf16 whose readers may now all be roundings
};

}  // namespace

bool WidenContractions::run(ir::Graph& g) {
  Widener w(g);
  bool changed = false;
  for (ir::Node* n : ir::topo_order(g)) {
    if (!is_contraction(*n) || !reads_or_writes_bf16(*n)) continue;
    w.rewrite(n);
    changed = true;
  }
  w.remove_dead_casts();
  return changed;
}

}  // namespace tern::passes
