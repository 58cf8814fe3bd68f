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

}  // namespace

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
