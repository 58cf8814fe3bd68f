#include "tern/passes/widen_contractions.h"

#include <algorithm>
#include <unordered_map>

#include "tern/ir/analysis/topo_order.h"
#include "tern/ops/fused_program.h"
#include "tern/ops/optimizer_layout.h"
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

// A bf16 variable copy that only contractions (all widened here) and optimizer updates (which
// write it) read: it becomes the store's f32 copy rounded to bf16, which the update writes and the
// widened contractions read as it is, with no cast per step.
bool only_contractions_read(const ir::Graph& g, const ir::Node& n) {
  if (n.op_name() != "variable_copy" || n.output()->dtype() != DType::kBF16 ||
      is_graph_output(g, n.output())) {
    return false;
  }
  bool contraction = false;
  for (const ir::Use& u : n.output()->uses()) {
    if (is_contraction(*u.node)) {
      contraction = true;
    } else if (!ops::is_optimizer_update(u.node->op_name())) {
      return false;
    }
  }
  return contraction;
}

class Widener {
 public:
  explicit Widener(ir::Graph& g) : g_(g) {
    for (ir::Node* n : g.nodes()) {
      if (only_contractions_read(g, *n)) copies_.emplace(n, nullptr);
    }
  }

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

  // The optimizer updates write the f32 copies in place of the bf16 ones, now read by nothing else:
  // each update that writes one is rebuilt once, on its new inputs.
  void replace_copies() {
    std::unordered_map<ir::Value*, ir::Value*> wide;
    std::vector<ir::Node*> updates, dead;  // in graph order
    for (ir::Node* n : g_.nodes()) {
      auto c = copies_.find(n);
      if (c == copies_.end() || c->second == nullptr) continue;
      inherit_control_edges(g_, {n}, c->second->node());
      wide[n->output()] = c->second;
      dead.push_back(n);
      for (const ir::Use& u : n->output()->uses()) {
        if (std::find(updates.begin(), updates.end(), u.node) == updates.end()) {
          updates.push_back(u.node);
        }
      }
    }
    for (ir::Node* update : updates) {
      std::vector<ir::Value*> inputs = update->inputs();
      for (ir::Value*& v : inputs) {
        if (auto w = wide.find(v); w != wide.end()) v = w->second;
      }
      ir::Node* rebuilt = g_.add_node(update->op_name(), std::move(inputs), update->attrs(),
                                      str_cat(update->name(), "/f32_copies"));
      inherit_control_edges(g_, {update}, rebuilt);
      g_.remove_node(update);
    }
    for (ir::Node* n : dead) g_.remove_node(n);
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
    if (auto c = copies_.find(producer); c != copies_.end()) {
      ops::Attrs attrs = producer->attrs();
      attrs.set("dtype", DType::kF32);
      c->second = g_.add("variable_copy", {}, std::move(attrs), str_cat(producer->name(), "/f32"));
      it->second = c->second;
    } else if (producer->op_name() == "cast" && producer->input(0)->dtype() == DType::kF32 &&
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
  // bf16 variable copies read only by contractions and updates -> their f32 copy (once made)
  std::unordered_map<ir::Node*, ir::Value*> copies_;
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
  w.replace_copies();
  w.remove_dead_casts();
  return changed;
}

}  // namespace tern::passes
