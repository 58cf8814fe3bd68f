// pool_argmax: max_pool2d + max_pool2d_grad on the same input -> the argmax pair.
#include "tern/passes/pool_argmax.h"

#include "tern/ops/conv_geometry.h"
#include "tern/passes/pass_util.h"

namespace tern::passes {
namespace {

bool same_pooling(const ops::Attrs& a, const ops::Attrs& b) {
  for (const char* name : {"ksize", "strides"}) {
    if (a.get_ints(name) != b.get_ints(name)) return false;
  }
  return a.get_string("padding") == b.get_string("padding");
}

bool has_control_edges(const ir::Graph& g, ir::Node* n) {
  return !n->control_inputs().empty() || !control_successors_of(g, {n}).empty();
}

// A sum over both spatial axes of rank-4 x (and any others): the same result from a pooling's dy
// as from the gradient it routes, when each dy goes to one element.
bool sums_spatial(const ir::Node& n) {
  if (n.op_name() != "sum" || n.input(0)->shape().rank() != 4) return false;
  const std::vector<int64_t>& axes = n.attrs().get_ints("axes");
  if (axes.empty()) return true;
  bool h = false, w = false;
  for (int64_t a : axes) {
    const int64_t axis = a < 0 ? a + 4 : a;
    h = h || axis == 1;
    w = w || axis == 2;
  }
  return h && w;
}

// The attributes of a pooled gradient op made from `conv_grad` (a convolution's gradient node)
// and `route` (the max_pool2d_grad_argmax it reads).
ops::Attrs pooled_attrs(const ir::Node& conv_grad, const ir::Node& route) {
  ops::Attrs attrs = conv_grad.attrs();
  attrs.set("pool_ksize", route.attrs().get_ints("ksize"));
  attrs.set("pool_strides", route.attrs().get_ints("strides"));
  attrs.set("pool_padding", route.attrs().get_string("padding"));
  return attrs;
}

}  // namespace

// conv2d_backprop_filter(x, max_pool2d_grad_argmax(dy, argmax)) -> conv2d_backprop_filter_pooled(
// x, dy, argmax), conv2d_backprop_input(max_pool2d_grad_argmax(dy, argmax), filter) ->
// conv2d_backprop_input_pooled(dy, filter, argmax), and the bias gradient's sum over the routed
// gradient -> the same sum over dy, where every use of the routed gradient is one of those (so it
// is never written).
bool PoolArgmax::fuse_pooled_gradients(ir::Graph& g, ir::Node* route) const {
  ir::Value* dx = route->output();
  if (dx->dtype() != DType::kF32 || has_control_edges(g, route) || is_graph_output(g, dx)) {
    return false;
  }
  ir::Value *dy = route->input(0), *argmax = route->input(1);
  // Each use's replacement: op, inputs, attributes.
  struct Replacement {
    ir::Node* node;
    std::string op;
    std::vector<ir::Value*> inputs;
    ops::Attrs attrs;
  };
  std::vector<Replacement> grads;
  std::vector<ir::Node*> sums;
  auto has_kernel = [&](const Replacement& r) {
    std::vector<TensorType> inputs;
    for (const ir::Value* v : r.inputs) inputs.push_back(v->type());
    return fast_kernel_(r.op, r.attrs, inputs, {r.node->output()->type()});
  };
  for (const ir::Use& u : dx->uses()) {
    ir::Node* n = u.node;
    // A gradient's control edges (an optimizer ordered after the readers of the weights it
    // updates) pass to its replacement, which reads the same filter.
    if (n->op_name() == "conv2d_backprop_filter" && u.input_index == 1) {
      Replacement r{
          n, "conv2d_backprop_filter_pooled", {n->input(0), dy, argmax}, pooled_attrs(*n, *route)};
      if (!has_kernel(r)) return false;
      grads.push_back(std::move(r));
    } else if (n->op_name() == "conv2d_backprop_input" && u.input_index == 0) {
      Replacement r{
          n, "conv2d_backprop_input_pooled", {dy, n->input(1), argmax}, pooled_attrs(*n, *route)};
      if (!has_kernel(r)) return false;
      grads.push_back(std::move(r));
    } else if (sums_spatial(*n) && !has_control_edges(g, n)) {
      sums.push_back(n);
    } else {
      return false;
    }
  }
  if (grads.empty()) return false;
  for (const Replacement& r : grads) {
    if (any_ancestor_of(r.inputs, control_successors_of(g, {r.node}))) return false;
  }
  if (grads.size() == 2 && join_gradients(g, route, grads[0].node, grads[1].node)) {
    grads.clear();
  }
  for (Replacement& r : grads) {
    ir::Node* pooled =
        g.add_node(r.op, r.inputs, std::move(r.attrs), str_cat(r.node->name(), "/pooled"));
    inherit_control_edges(g, {r.node}, pooled);
    g.replace_all_uses(r.node->output(), pooled->output());
    g.remove_node(r.node);
  }
  for (ir::Node* s : sums) {
    ir::Value* sum = g.add("sum", {dy}, s->attrs(), str_cat(s->name(), "/pooled"));
    g.replace_all_uses(s->output(), sum);
    g.remove_node(s);
  }
  g.remove_node(route);
  return true;
}

// A layer's two pooled gradients as one conv2d_backprop_pooled(x, dy, filter, argmax), where a
// kernel takes it: `a` and `b` are the convolution's conv2d_backprop_filter and
// conv2d_backprop_input (either order) reading `route`'s gradient. False (nothing changed)
// otherwise.
bool PoolArgmax::join_gradients(ir::Graph& g, ir::Node* route, ir::Node* a, ir::Node* b) const {
  const bool a_filter = a->op_name() == "conv2d_backprop_filter";
  ir::Node* filter_grad = a_filter ? a : b;
  ir::Node* input_grad = a_filter ? b : a;
  if (filter_grad->op_name() != "conv2d_backprop_filter" ||
      input_grad->op_name() != "conv2d_backprop_input") {
    return false;
  }
  ir::Value *x = filter_grad->input(0), *filter = input_grad->input(1);
  const ops::Attrs &fa = filter_grad->attrs(), &ia = input_grad->attrs();
  for (const char* name : {"strides", "explicit_paddings", "dilations"}) {
    if (fa.get_ints(name) != ia.get_ints(name)) return false;
  }
  if (fa.get_string("padding") != ia.get_string("padding") ||
      fa.get_int("groups") != ia.get_int("groups") ||
      fa.get_ints("filter_shape") != filter->shape().dims() ||
      ia.get_ints("input_shape") != x->shape().dims()) {
    return false;
  }
  // The filter gradient's pooled attributes (conv, dfilter_dtype, pool) without filter_shape.
  const ops::Attrs pooled = pooled_attrs(*filter_grad, *route);
  ops::Attrs attrs;
  for (const auto& [name, value] : pooled.items()) {
    if (name != "filter_shape") attrs.set(name, value);
  }
  std::vector<ir::Value*> inputs = {x, route->input(0), filter, route->input(1)};
  std::vector<TensorType> in_types;
  for (const ir::Value* v : inputs) in_types.push_back(v->type());
  if (!fast_kernel_("conv2d_backprop_pooled", attrs, in_types,
                    {input_grad->output()->type(), filter_grad->output()->type()})) {
    return false;
  }
  const std::vector<ir::Node*> merged = {filter_grad, input_grad};
  if (any_ancestor_of(inputs, control_successors_of(g, merged))) return false;
  std::string name = filter_grad->name();
  name = str_cat(name.substr(0, name.rfind('/') + 1), "conv2d_backprop_pooled");
  ir::Node* both = g.add_node("conv2d_backprop_pooled", inputs, std::move(attrs), name);
  inherit_control_edges(g, merged, both);
  g.replace_all_uses(input_grad->output(), both->output(0));
  g.replace_all_uses(filter_grad->output(), both->output(1));
  g.remove_node(input_grad);
  g.remove_node(filter_grad);
  return true;
}

bool PoolArgmax::run(ir::Graph& g) {
  bool changed = false;
  for (ir::Node* pool : g.nodes_of("max_pool2d")) {
    ir::Value* x = pool->input(0);
    if (x->dtype() != DType::kF32 && x->dtype() != DType::kBF16) continue;
    const ops::Pool2dGeometry geo = ops::pool2d_geometry(x->shape(), pool->attrs());
    // Overlapping windows stay: their dy must be summed, which oneDNN's pooling gradient does
    // faster (ResNet's 3x3 / 2 stem pooling, [32, 32, 32, 64], forward and gradient: f32 1.08
    // against 1.52 ms, bf16 0.39 against 1.76 as argmax ops).
    if (geo.kh * geo.kw > ops::kMaxPoolArgmaxWindow || geo.stride_h < geo.kh ||
        geo.stride_w < geo.kw || has_control_edges(g, pool)) {
      continue;
    }
    std::vector<ir::Node*> grads;
    for (const ir::Use& u : x->uses()) {
      ir::Node* n = u.node;
      if (n->op_name() == "max_pool2d_grad" && u.input_index == 0 &&
          same_pooling(n->attrs(), pool->attrs()) && !has_control_edges(g, n)) {
        grads.push_back(n);
      }
    }
    if (grads.empty()) continue;
    ir::Node* argmax =
        g.add_node("max_pool2d_argmax", {x}, pool->attrs(), str_cat(pool->name(), "/argmax"));
    g.replace_all_uses(pool->output(), argmax->output(0));
    g.remove_node(pool);
    ops::Attrs attrs = argmax->attrs();
    attrs.set("input_shape", x->shape().dims());
    for (ir::Node* grad : grads) {
      ir::Value* dx = g.add("max_pool2d_grad_argmax", {grad->input(1), argmax->output(1)}, attrs,
                            str_cat(grad->name(), "/argmax"));
      g.replace_all_uses(grad->output(), dx);
      g.remove_node(grad);
    }
    changed = true;
  }
  if (fast_kernel_) {
    for (ir::Node* route : g.nodes_of("max_pool2d_grad_argmax")) {
      changed = fuse_pooled_gradients(g, route) || changed;
    }
  }
  return changed;
}

}  // namespace tern::passes
