// Epilogue fusion: match matmul/conv2d -> [bias add] -> [residual add] -> [activation].
#include "tern/passes/fuse_epilogue.h"

#include <unordered_set>

#include "tern/ir/analysis/topo_order.h"
#include "tern/ops/fused_program.h"
#include "tern/passes/pass_util.h"

namespace tern::passes {
namespace {

struct Chain {
  ir::Node* base = nullptr;
  std::vector<ir::Node*> absorbed;  // in order after base
  ir::Value* bias = nullptr;
  ir::Value* residual = nullptr;
  std::string activation = "none";
  ir::Node* pool = nullptr;     // conv2d: the max_pool2d folded in (fused_conv2d's pool)
  ir::Value* result = nullptr;  // the value the fused node replaces
};

// The fused node's inputs and attributes for chain `c`.
std::vector<ir::Value*> fused_inputs(const Chain& c) {
  std::vector<ir::Value*> inputs = {c.base->input(0), c.base->input(1)};
  if (c.bias) inputs.push_back(c.bias);
  if (c.residual) inputs.push_back(c.residual);
  return inputs;
}

ops::Attrs fused_attrs(const Chain& c) {
  ops::Attrs attrs = c.base->attrs();
  attrs.set("activation", c.activation);
  attrs.set("has_bias", c.bias != nullptr);
  attrs.set("has_residual", c.residual != nullptr);
  if (c.pool) {
    const bool argmax = c.pool->op_name() == "max_pool2d_argmax";
    attrs.set("pool", std::string(argmax ? "max_argmax" : "max"));
    for (const char* name : {"ksize", "strides", "padding"}) {  // those not set keep the defaults
      if (const ops::AttrValue* v = c.pool->attrs().find(name))
        attrs.set(str_cat("pool_", name), *v);
    }
  }
  return attrs;
}

// Whether chain `c`'s pool (a max_pool2d_argmax reading conv2d's result alone, nothing but a bias
// between them) joins as fused_conv2d's pool = "max_argmax": an f32 layer the device has a kernel
// for in that form (`fast_kernel`).
bool argmax_pool_joins(const Chain& c, const KernelQuery& fast_kernel) {
  if (!fast_kernel || c.base->output()->dtype() != DType::kF32) return false;
  std::vector<TensorType> inputs;
  for (const ir::Value* v : fused_inputs(c)) inputs.push_back(v->type());
  return fast_kernel("fused_conv2d", fused_attrs(c), inputs,
                     {c.pool->output(0)->type(), c.pool->output(1)->type()});
}

class Matcher {
 public:
  Matcher(const ir::Graph& g, const KernelQuery& fast_kernel) : g_(g), fast_kernel_(fast_kernel) {}

  ir::Node* sole_user(const ir::Value* v) const { return passes::sole_user(g_, v); }

  // If `n` is add(v, other) or add(other, v), the other operand.
  static ir::Value* other_add_operand(const ir::Node& n, const ir::Value* v) {
    if (n.op_name() != "add") return nullptr;
    if (n.input(0) == v) return n.input(1);
    if (n.input(1) == v) return n.input(0);
    return nullptr;
  }

  std::optional<Chain> match(ir::Node* base) const {
    Chain c;
    c.base = base;
    ir::Value* cur = base->output();
    const TensorType& type = cur->type();
    int64_t channels = type.shape.rank() > 0 ? type.shape.dim(type.shape.rank() - 1) : 1;
    ir::Node* u = sole_user(cur);
    if (u) {
      ir::Value* b = other_add_operand(*u, cur);
      if (b && b->dtype() == type.dtype && b->shape() == Shape{channels} &&
          u->output()->type() == type) {
        c.bias = b;
        c.absorbed.push_back(u);
        cur = u->output();
        u = sole_user(cur);
      }
    }
    if (u) {
      ir::Value* r = other_add_operand(*u, cur);
      if (r && r != cur && r->type() == type) {
        c.residual = r;
        c.absorbed.push_back(u);
        cur = u->output();
        u = sole_user(cur);
      }
    }
    if (u && u->num_inputs() == 1) {
      if (std::optional<ops::Activation> act =
              ops::epilogue_activation_for(u->op_name(), u->attrs())) {
        c.activation = std::string(ops::activation_info(*act).name);
        c.absorbed.push_back(u);
        cur = u->output();
      }
    }
    // conv2d: a max pooling that alone reads the result (no residual) joins as the pool; a relu
    // that alone reads the pooling's result joins as the activation when there is none (relu and
    // max pooling commute, NaN included: simplify moves relu after the pooling).
    if (base->op_name() == "conv2d" && !c.residual) {
      ir::Node* p = sole_user(cur);
      if (p && p->op_name() == "max_pool2d_argmax" && c.activation == "none") {
        c.pool = p;
        if (argmax_pool_joins(c, fast_kernel_)) {
          c.absorbed.push_back(p);
          c.result = cur;  // replaced by both of the pool's outputs (fuse)
          return c;
        }
        c.pool = nullptr;
      }
      if (p && p->op_name() == "max_pool2d") {
        c.pool = p;
        c.absorbed.push_back(p);
        cur = p->output();
        ir::Node* r = c.activation == "none" ? sole_user(cur) : nullptr;
        if (r && r->op_name() == "relu") {
          c.activation = "relu";
          c.absorbed.push_back(r);
          cur = r->output();
        }
      }
    }
    if (c.absorbed.empty()) return std::nullopt;
    c.result = cur;
    return c;
  }

 private:
  const ir::Graph& g_;
  const KernelQuery& fast_kernel_;
};

// Replaces the chain by one fused node; false (nothing changed) if moving the chain's control
// edges onto the fused node would close a cycle.
bool fuse(ir::Graph& g, const Chain& c) {
  std::vector<ir::Value*> inputs = fused_inputs(c);
  std::vector<ir::Node*> chain = {c.base};
  chain.insert(chain.end(), c.absorbed.begin(), c.absorbed.end());
  if (any_ancestor_of(inputs, control_successors_of(g, chain))) return false;
  ops::Attrs attrs = fused_attrs(c);
  const bool argmax = c.pool && c.pool->op_name() == "max_pool2d_argmax";
  std::string op = str_cat("fused_", c.base->op_name());
  ir::Node* fused = g.add_node(op, inputs, std::move(attrs), str_cat(c.base->name(), "/fused"));
  inherit_control_edges(g, chain, fused);
  if (argmax) {  // the pooled values and argmax
    g.replace_all_uses(c.pool->output(0), fused->output(0));
    g.replace_all_uses(c.pool->output(1), fused->output(1));
  } else {
    g.replace_all_uses(c.result, fused->output());
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) g.remove_node(*it);
  return true;
}

}  // namespace

bool FuseEpilogue::run(ir::Graph& g) {
  bool changed = false;
  std::unordered_set<const ir::Node*> removed;
  for (ir::Node* n : ir::topo_order(g)) {
    if (removed.count(n) || (n->op_name() != "matmul" && n->op_name() != "conv2d")) continue;
    std::optional<Chain> chain = Matcher(g, fast_kernel_).match(n);
    if (!chain || !fuse(g, *chain)) continue;
    removed.insert(chain->absorbed.begin(), chain->absorbed.end());
    changed = true;
  }
  return changed;
}

}  // namespace tern::passes
