// Optimizer base: clipping, slot variables, the fused update node and its ordering.
#include "tern/optim/optimizer.h"

#include <unordered_set>

#include "tern/ops/optimizer_layout.h"

namespace tern::optim {
namespace {

using Ints = std::vector<int64_t>;

ir::Value* l2_norm_squared(ir::Graph& g, ir::Value* x, const std::string& name) {
  return g.add("sum", {g.add("square", {x}, {}, name + "/sq")},
               {{"axes", Ints{}}, {"keepdims", false}}, name);
}

}  // namespace

std::string slot_variable_name(const std::string& param, const std::string& slot) {
  return "optimizer/" + param + "/" + slot;
}

std::vector<ir::Value*> Optimizer::clip_gradients(ir::Graph& g,
                                                  std::vector<ir::Value*> grads) const {
  if (clip.clipvalue) {
    double v = *clip.clipvalue;
    TERN_CHECK_ARG(v > 0, "optimizer ", name(), ": clipvalue must be positive, got ", v);
    for (auto& gr : grads) {
      gr = g.add("minimum",
                 {g.add("maximum", {gr, g.scalar(gr->dtype(), -v)}, {}, "clip/value_lo"),
                  g.scalar(gr->dtype(), v)},
                 {}, "clip/value_hi");
    }
  }
  // scale = c / max(norm, c): 1 when the norm is within bounds.
  auto scale_for = [&](ir::Value* norm_sq, double c, DType d, const std::string& n) {
    ir::Value* norm = g.add("sqrt", {norm_sq}, {}, n + "/norm");
    ir::Value* denom = g.add("maximum", {norm, g.scalar(d, c)}, {}, n + "/denom");
    return g.add("div", {g.scalar(d, c), denom}, {}, n + "/scale");
  };
  if (clip.clipnorm) {
    double c = *clip.clipnorm;
    TERN_CHECK_ARG(c > 0, "optimizer ", name(), ": clipnorm must be positive, got ", c);
    for (auto& gr : grads) {
      ir::Value* s = scale_for(l2_norm_squared(g, gr, "clip/norm_sq"), c, gr->dtype(), "clip/norm");
      gr = g.add("mul", {gr, s}, {}, "clip/norm/apply");
    }
  }
  if (clip.global_clipnorm && !grads.empty()) {
    double c = *clip.global_clipnorm;
    TERN_CHECK_ARG(c > 0, "optimizer ", name(), ": global_clipnorm must be positive, got ", c);
    ir::Value* total = nullptr;
    for (auto* gr : grads) {
      ir::Value* sq = l2_norm_squared(g, gr, "clip/global/norm_sq");
      total = total ? g.add("add", {total, sq}, {}, "clip/global/sum") : sq;
    }
    ir::Value* s = scale_for(total, c, grads[0]->dtype(), "clip/global");
    for (auto& gr : grads) gr = g.add("mul", {gr, s}, {}, "clip/global/apply");
  }
  return grads;
}

std::vector<std::string> Optimizer::slot_names() const {
  ops::Attrs attrs = update_attrs();
  attrs.set("num_params", int64_t{1});
  return ops::optimizer_layout(update_op(), attrs).slots;
}

ir::Node* Optimizer::apply_gradients(ir::Graph& g, runtime::VariableStore& store,
                                     const std::vector<ParamGrad>& params, ir::Value* lr,
                                     ir::Value* step, ir::Value* apply) {
  TERN_CHECK_ARG(!params.empty(), "optimizer ", name(), ": no trainable parameters to update");
  std::vector<ir::Value*> grads;
  for (const auto& p : params) grads.push_back(p.grad);
  grads = clip_gradients(g, grads);

  ops::Attrs attrs = update_attrs();
  attrs.set("num_params", static_cast<int64_t>(params.size()));
  if (apply) attrs.set("has_apply", true);
  ops::OptimizerLayout layout = ops::optimizer_layout(update_op(), attrs);
  std::vector<ir::Value*> inputs;
  for (const auto& h : layout.hypers) inputs.push_back(h == "lr" ? lr : step);
  for (const auto& p : params) inputs.push_back(p.param);
  for (auto* gr : grads) inputs.push_back(gr);
  for (const auto& slot : layout.slots) {
    for (const auto& p : params) {
      std::string sname = slot_variable_name(p.name, slot);
      store.create(sname, Tensor::zeros(p.param->dtype(), p.param->shape()));
      inputs.push_back(g.variable(sname, p.param->type()));
    }
  }
  if (apply) inputs.push_back(apply);
  ir::Node* update = g.add_node(update_op(), inputs, attrs, "optimizer/" + update_op());
  // Every other reader of a parameter runs before the in-place update.
  for (const auto& p : params) {
    for (const ir::Use& u : p.param->uses()) {
      if (u.node != update) update->add_control_input(u.node);
    }
  }
  return update;
}

}  // namespace tern::optim
