// Elementwise fusion: grow groups backwards from roots, then emit one program per group.
#include "tern/passes/fuse_elementwise.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "tern/ir/analysis/topo_order.h"
#include "tern/ops/fused_program.h"
#include "tern/passes/pass_util.h"

namespace tern::passes {
namespace {

class Grouper {
 public:
  explicit Grouper(ir::Graph& g) : g_(g) {
    std::vector<ir::Node*> order = ir::topo_order(g);
    for (size_t i = 0; i < order.size(); ++i) position_[order[i]] = i;
    order_ = std::move(order);
  }

  const std::vector<ir::Node*>& order() const { return order_; }
  size_t position(const ir::Node* n) const { return position_.at(n); }

  bool candidate(const ir::Node& n) const {
    if (!is_pure(n) || n.num_outputs() != 1 || n.num_inputs() == 0) return false;
    DType d = n.output()->dtype();
    if (!is_floating(d)) return false;
    for (const ir::Value* v : n.inputs()) {
      if (v->dtype() != d) return false;
    }
    return ops::fused_opcode_for(n.op_name(), n.attrs()).has_value();
  }

  // The group rooted at `root`, in topological order.
  std::vector<ir::Node*> grow(ir::Node* root,
                              const std::unordered_set<const ir::Node*>& taken) const {
    std::unordered_set<const ir::Node*> group{root};
    std::vector<ir::Node*> members{root};
    const TensorType& type = root->output()->type();
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t i = 0; i < members.size(); ++i) {
        for (ir::Value* v : members[i]->inputs()) {
          ir::Node* p = v->node();
          if (group.count(p) || taken.count(p) || !candidate(*p) || v->type() != type) continue;
          if (!only_used_by(g_, v, group)) continue;
          group.insert(p);
          members.push_back(p);
          grew = true;
        }
      }
    }
    std::sort(members.begin(), members.end(),
              [&](const ir::Node* a, const ir::Node* b) { return position(a) < position(b); });
    return members;
  }

 private:
  ir::Graph& g_;
  std::unordered_map<const ir::Node*, size_t> position_;
  std::vector<ir::Node*> order_;
};

// A scalar constant of `dtype` that can be an immediate.
bool immediate(const ir::Value* v, DType dtype) {
  const Tensor* t = constant_value(v);
  return t && t->dtype() == dtype && t->num_elements() == 1;
}

// Builds the program for `members` (topological order); `use_immediates` turns scalar constants
// into kImm. Returns false if the inputs would not broadcast to the root's shape.
bool build(const std::vector<ir::Node*>& members, bool use_immediates,
           std::vector<ir::Value*>* inputs, ops::FusedProgram* program) {
  const ir::Value* root = members.back()->output();
  std::unordered_set<const ir::Node*> in_group(members.begin(), members.end());
  std::unordered_map<const ir::Value*, int> slot;
  std::vector<const ir::Value*> imms;
  inputs->clear();
  for (ir::Node* m : members) {
    for (ir::Value* v : m->inputs()) {
      if (in_group.count(v->node()) || slot.count(v)) continue;
      if (use_immediates && immediate(v, root->dtype())) {
        if (std::find(imms.begin(), imms.end(), v) == imms.end()) imms.push_back(v);
        continue;
      }
      slot[v] = static_cast<int>(inputs->size());
      inputs->push_back(v);
    }
  }
  if (inputs->empty()) return false;
  Shape s = (*inputs)[0]->shape();
  for (const ir::Value* v : *inputs) s = broadcast_shapes(s, v->shape());
  if (s != root->shape()) return false;
  program->num_inputs = static_cast<int>(inputs->size());
  program->code.clear();
  auto next_slot = [&] { return program->num_inputs + static_cast<int>(program->code.size()); };
  for (const ir::Value* v : imms) {
    slot[v] = next_slot();
    program->code.push_back({ops::FusedOpcode::kImm, -1, -1, constant_value(v)->get(0)});
  }
  for (ir::Node* m : members) {
    ops::FusedInstruction ins;
    ins.op = *ops::fused_opcode_for(m->op_name(), m->attrs());
    ins.a = slot.at(m->input(0));
    if (m->num_inputs() > 1) ins.b = slot.at(m->input(1));
    slot[m->output()] = next_slot();
    program->code.push_back(ins);
  }
  return true;
}

// The program of `producer` (a fused_elementwise without column sums, or one fusable op) and its
// inputs; false if it has none.
bool program_of(const Grouper& grouper, ir::Node* producer, std::vector<ir::Value*>* inputs,
                ops::FusedProgram* program) {
  if (producer->op_name() == "fused_elementwise") {
    if (producer->attrs().get_bool("column_sum")) return false;
    *inputs = producer->inputs();
    return ops::decode_fused_program(producer->attrs(), producer->num_inputs(), program).empty();
  }
  if (!grouper.candidate(*producer)) return false;
  return build({producer}, true, inputs, program) || build({producer}, false, inputs, program);
}

// Whether `sum` adds `x` over every axis but the last into x's dtype.
bool sums_columns(const ir::Node& sum, const ir::Value* x) {
  const int rank = x->shape().rank();
  if (rank < 2) return false;
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : sum.attrs().get_ints("axes")) {
    if (a < -rank || a >= rank) return false;
    reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  for (int a = 0; a < rank; ++a) {
    if (reduced[static_cast<size_t>(a)] != (a < rank - 1)) return false;
  }
  return sum.output()->dtype() == x->dtype();
}

// An attention_grad's output k, [B, T, H, D], flattened to rows [B T, H D] and summed over them
// into f32 (a q, k or v projection's bias gradient; a bf16 one's sum reads it with out_dtype
// f32): the sum becomes output 3 + k of the same attention_grad with bias_sums (one node takes
// all three; the sums of the gradients before their rounding to 16 bits), reshaped to the sum's
// shape. False if `sum` is not that.
bool fuse_attention_sum(ir::Graph& g, ir::Node* sum) {
  if (sum->num_inputs() != 1 || sum->output()->dtype() != DType::kF32) return false;
  ir::Value* x = sum->input(0);
  ir::Node* flat = x->node();
  if (!flat || flat->op_name() != "reshape" || x->shape().rank() != 2) return false;
  const std::vector<int64_t>& axes = sum->attrs().get_ints("axes");
  if (axes.size() != 1 || (axes[0] != 0 && axes[0] != -2)) return false;
  ir::Value* grad = flat->input(0);
  ir::Node* att = grad->node();
  if (!att || att->op_name() != "attention_grad" ||
      (grad->dtype() != DType::kF32 && grad->dtype() != DType::kBF16)) {
    return false;
  }
  const Shape& s = grad->shape();  // [B, T, H, D]
  if (x->shape()[1] != s[2] * s[3]) return false;
  const int k = grad->index();
  if (!att->attrs().get_bool("bias_sums")) {
    const std::vector<ir::Node*> merged = {att};
    if (!control_successors_of(g, merged).empty() || !att->control_inputs().empty()) return false;
    ops::Attrs attrs = att->attrs();
    attrs.set("bias_sums", true);
    ir::Node* with_sums = g.add_node("attention_grad", att->inputs(), std::move(attrs),
                                     str_cat(att->name(), "/sums"));
    for (int i = 0; i < 3; ++i) g.replace_all_uses(att->output(i), with_sums->output(i));
    g.remove_node(att);
    att = with_sums;
  }
  ir::Value* sums =
      g.add("reshape", {att->output(3 + k)}, {{"shape", sum->output()->shape().dims()}},
            str_cat(sum->name(), "/sums"));
  g.replace_all_uses(sum->output(), sums);
  g.remove_node(sum);
  return true;
}

}  // namespace

bool FuseColumnSum::run(ir::Graph& g) {
  bool changed = false;
  for (ir::Node* sum : g.nodes_of("sum")) changed = fuse_attention_sum(g, sum) || changed;
  Grouper grouper(g);  // after the rewrites above (its order holds the graph's nodes)
  for (ir::Node* sum : grouper.order()) {
    if (sum->op_name() != "sum" || sum->num_inputs() != 1) continue;
    ir::Value* x = sum->input(0);
    if (!is_floating(x->dtype()) || !sums_columns(*sum, x)) continue;
    // The summed value, or what a reshape keeping the last dim made it from (a dense layer's
    // [batch, steps, N] flattened to rows): the columns are the same elements.
    ir::Value* y = x;
    if (x->node() && x->node()->op_name() == "reshape" &&
        x->node()->input(0)->shape().rank() >= 1 &&
        x->node()->input(0)->shape().dims().back() == x->shape().dims().back()) {
      y = x->node()->input(0);
    }
    ir::Node* producer = y->node();
    if (!producer || producer->num_outputs() != 1 || y->dtype() != DType::kF32) continue;
    std::vector<ir::Value*> inputs;
    ops::FusedProgram program;
    if (!program_of(grouper, producer, &inputs, &program)) continue;
    const std::vector<ir::Node*> merged = {producer, sum};
    if (any_ancestor_of(inputs, control_successors_of(g, merged))) continue;
    ops::Attrs attrs;
    program.to_attrs(attrs);
    attrs.set("column_sum", true);  // f32 sums of an f32 value: sum_dtype stays ""
    ir::Node* fused = g.add_node("fused_elementwise", inputs, std::move(attrs),
                                 str_cat(producer->name(), "/column_sum"));
    inherit_control_edges(g, merged, fused);
    ir::Value* sums = fused->output(1);
    if (sum->attrs().get_bool("keepdims")) {  // [1, ..., 1, N], as autodiff's bias gradients
      sums = g.add("reshape", {sums}, {{"shape", sum->output()->shape().dims()}},
                   str_cat(sum->name(), "/keepdims"));
    }
    g.replace_all_uses(y, fused->output(0));
    g.replace_all_uses(sum->output(), sums);
    g.remove_node(sum);
    g.remove_node(producer);
    changed = true;
  }
  return changed;
}

bool FuseElementwise::run(ir::Graph& g) {
  Grouper grouper(g);
  std::vector<std::vector<ir::Node*>> groups;
  std::unordered_set<const ir::Node*> taken;
  const std::vector<ir::Node*>& order = grouper.order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::Node* root = *it;
    if (taken.count(root) || !grouper.candidate(*root)) continue;
    std::vector<ir::Node*> members = grouper.grow(root, taken);
    if (members.size() < 2) continue;
    taken.insert(members.begin(), members.end());
    groups.push_back(std::move(members));
  }
  bool changed = false;
  for (const auto& members : groups) {
    std::vector<ir::Value*> inputs;
    ops::FusedProgram program;
    if (!build(members, true, &inputs, &program) && !build(members, false, &inputs, &program))
      continue;
    ops::Attrs attrs;
    program.to_attrs(attrs);
    ir::Node* root = members.back();
    ir::Value* fused =
        g.add("fused_elementwise", inputs, std::move(attrs), str_cat(root->name(), "/fused"));
    inherit_control_edges(g, members, fused->node());
    g.replace_all_uses(root->output(), fused);
    for (auto it = members.rbegin(); it != members.rend(); ++it) g.remove_node(*it);
    changed = true;
  }
  return changed;
}

}  // namespace tern::passes
