// Reverse-mode traversal: find the nodes between wrt and loss, visit them in reverse topological
// order, apply each op's rule, and sum gradients that meet at a value.
#include "tern/autodiff/autodiff.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "tern/ir/analysis/topo_order.h"

namespace tern::autodiff {

// --- GradContext ---

GradContext::GradContext(ir::Graph& g, ir::Node& node, std::vector<ir::Value*> output_grads,
                         std::vector<bool> needs_input_grad)
    : graph_(g),
      node_(node),
      output_grads_(std::move(output_grads)),
      needs_input_grad_(std::move(needs_input_grad)) {}

ir::Value* GradContext::dy(int i) {
  ir::Value*& g = output_grads_[static_cast<size_t>(i)];
  if (!g) g = zeros(node_.output(i)->type());
  return g;
}

ir::Node* GradContext::op_node(std::string_view op, std::vector<ir::Value*> inputs,
                               ops::Attrs attrs) {
  return graph_.add_node(op, std::move(inputs), std::move(attrs),
                         str_cat("grad/", node_.name(), "/", op));
}

ir::Value* GradContext::op(std::string_view op, std::vector<ir::Value*> inputs, ops::Attrs attrs) {
  return op_node(op, std::move(inputs), std::move(attrs))->output(0);
}

ir::Value* GradContext::scalar(double v, DType dtype) {
  return graph_.scalar(dtype, v);
}

ir::Value* GradContext::zeros(const TensorType& type) {
  return graph_.constant(Tensor::zeros(type.dtype, type.shape), "zeros");
}

ir::Value* GradContext::sum_to(ir::Value* g, const Shape& target) {
  const Shape& s = g->shape();
  if (s == target) return g;
  std::vector<int64_t> axes;
  int lead = s.rank() - target.rank();
  for (int i = 0; i < s.rank(); ++i) {
    int t = i - lead;
    if (t < 0 || (target.dim(t) == 1 && s.dim(i) != 1)) axes.push_back(i);
  }
  ir::Value* r = g;
  if (!axes.empty()) r = op("sum", {g}, {{"axes", axes}, {"keepdims", true}});
  if (r->shape() != target) r = op("reshape", {r}, {{"shape", target.dims()}});
  return r;
}

// --- GradRegistry ---

GradRegistry& GradRegistry::global() {
  static GradRegistry* registry = [] {
    auto* r = new GradRegistry();
    register_unary_grads(*r);
    register_binary_grads(*r);
    register_reduce_grads(*r);
    register_matmul_grads(*r);
    register_shape_grads(*r);
    register_softmax_grads(*r);
    register_attention_grads(*r);
    register_conv_grads(*r);
    register_norm_grads(*r);
    register_nn_misc_grads(*r);
    register_fused_grads(*r);
    return r;
  }();
  return *registry;
}

void GradRegistry::add(std::string_view op, GradRule rule) {
  rules_[std::string(op)] = std::move(rule);
}

const GradRule* GradRegistry::find(std::string_view op) const {
  auto it = rules_.find(op);
  return it == rules_.end() ? nullptr : &it->second;
}

// --- gradients ---

std::vector<ir::Value*> gradients(ir::Graph& g, ir::Value* loss, std::span<ir::Value* const> wrt,
                                  ir::Value* loss_grad) {
  TERN_CHECK_ARG(loss != nullptr, "gradients: loss is null");
  TERN_CHECK_ARG(is_floating(loss->dtype()), "gradients: loss ", loss->ref(), " has dtype ",
                 dtype_name(loss->dtype()), ", expected a floating type");
  if (!loss_grad && loss->shape().num_elements() != 1) {
    throw_error(ErrorCode::kInvalidArgument, "gradients: loss ", loss->ref(), " has shape ",
                loss->shape(), "; pass loss_grad for a non-scalar loss");
  }
  // Nodes reachable backwards from the loss.
  std::unordered_set<ir::Node*> reaches_loss;
  {
    std::vector<ir::Node*> stack{loss->node()};
    while (!stack.empty()) {
      ir::Node* n = stack.back();
      stack.pop_back();
      if (!reaches_loss.insert(n).second) continue;
      for (ir::Value* v : n->inputs()) stack.push_back(v->node());
    }
  }
  // Values that depend on a wrt value (forward closure), restricted to nodes reaching the loss.
  std::unordered_set<ir::Value*> wrt_set(wrt.begin(), wrt.end());
  std::vector<ir::Node*> order = ir::topo_order(g);
  std::unordered_set<ir::Value*> depends;
  for (ir::Value* w : wrt) depends.insert(w);
  for (ir::Node* n : order) {
    if (!reaches_loss.count(n) || n->op().has_trait(ops::kTraitNotDifferentiable)) continue;
    bool any = false;
    for (ir::Value* v : n->inputs()) any = any || depends.count(v);
    if (any) {
      for (int i = 0; i < n->num_outputs(); ++i) depends.insert(n->output(i));
    }
  }

  std::unordered_map<ir::Value*, ir::Value*> grad;
  auto accumulate = [&](ir::Value* v, ir::Value* gv) {
    if (!gv) return;
    if (gv->type() != v->type()) {
      throw_error(ErrorCode::kInternal, "gradient for ", v->ref(), " has type ",
                  gv->type().to_string(), ", expected ", v->type().to_string());
    }
    auto it = grad.find(v);
    if (it == grad.end()) {
      grad[v] = gv;
    } else {
      it->second = g.add("add", {it->second, gv}, {}, str_cat("grad/accum/", v->node()->name()));
    }
  };
  if (depends.count(loss)) {
    ir::Value* seed =
        loss_grad ? loss_grad
                  : g.constant(Tensor::full(loss->dtype(), loss->shape(), 1.0), "grad/seed");
    accumulate(loss, seed);
  }

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::Node* n = *it;
    if (!reaches_loss.count(n)) continue;
    std::vector<ir::Value*> out_grads(static_cast<size_t>(n->num_outputs()), nullptr);
    bool any_out = false;
    for (int i = 0; i < n->num_outputs(); ++i) {
      auto f = grad.find(n->output(i));
      if (f != grad.end()) {
        out_grads[static_cast<size_t>(i)] = f->second;
        any_out = true;
      }
    }
    if (!any_out || n->is_source()) continue;
    std::vector<bool> needs(static_cast<size_t>(n->num_inputs()));
    bool any_needed = false;
    for (int i = 0; i < n->num_inputs(); ++i) {
      ir::Value* in = n->input(i);
      needs[static_cast<size_t>(i)] = depends.count(in) && is_floating(in->dtype());
      any_needed = any_needed || needs[static_cast<size_t>(i)];
    }
    if (!any_needed) continue;
    const GradRule* rule = GradRegistry::global().find(n->op_name());
    if (!rule) {
      throw_error(ErrorCode::kInvalidArgument, "op '", n->op_name(), "' (node '", n->name(),
                  "') has no gradient rule");
    }
    GradContext ctx(g, *n, std::move(out_grads), needs);
    std::vector<ir::Value*> in_grads = (*rule)(ctx);
    TERN_CHECK(in_grads.size() == static_cast<size_t>(n->num_inputs()), "gradient rule for ",
               n->op_name(), " returned ", in_grads.size(), " gradients");
    for (int i = 0; i < n->num_inputs(); ++i) {
      if (needs[static_cast<size_t>(i)]) accumulate(n->input(i), in_grads[static_cast<size_t>(i)]);
    }
  }

  std::vector<ir::Value*> out;
  for (ir::Value* w : wrt) {
    auto f = grad.find(w);
    out.push_back(f != grad.end()
                      ? f->second
                      : g.constant(Tensor::zeros(w->dtype(), w->shape()), "grad/zeros"));
  }
  return out;
}

}  // namespace tern::autodiff
