// Loss scaling in the step graph: state variables, loss * S, gradients / S, the finiteness check
// and the scale update.
#include "tern/optim/loss_scale.h"

#include <algorithm>
#include <cmath>

namespace tern::optim {

void check_loss_scale_options(const LossScaleOptions& o) {
  TERN_CHECK_ARG(std::isfinite(o.initial_scale) && o.initial_scale >= 1.0,
                 "loss scale: initial_scale must be finite and >= 1, got ", o.initial_scale);
  TERN_CHECK_ARG(o.growth_interval >= 1, "loss scale: growth_interval must be >= 1, got ",
                 o.growth_interval);
  TERN_CHECK_ARG(std::isfinite(o.factor) && o.factor > 1.0,
                 "loss scale: factor must be finite and > 1, got ", o.factor);
}

std::optional<LossScaleState> read_loss_scale(const runtime::VariableStore& store) {
  if (!store.has(kLossScaleVariable) || !store.has(kLossScaleGoodStepsVariable)) {
    return std::nullopt;
  }
  return LossScaleState{store.get(kLossScaleVariable).get(0),
                        static_cast<int64_t>(store.get(kLossScaleGoodStepsVariable).get(0))};
}

LossScaleGraph::LossScaleGraph(ir::Graph& g, runtime::VariableStore& store,
                               const LossScaleOptions& options)
    : g_(g), options_(options) {
  check_loss_scale_options(options);
  const Tensor& s =
      store.create(kLossScaleVariable, Tensor::scalar(DType::kF32, options.initial_scale));
  const Tensor& n = store.create(kLossScaleGoodStepsVariable, Tensor::scalar(DType::kI64, 0));
  scale_ = g.variable(kLossScaleVariable, s.type());
  good_steps_ = g.variable(kLossScaleGoodStepsVariable, n.type());
}

ir::Value* LossScaleGraph::scale_loss(ir::Value* loss) {
  TERN_CHECK_ARG(loss->dtype() == DType::kF32 && loss->shape().rank() == 0,
                 "loss scaling needs an f32 scalar loss, got ", loss->type().to_string());
  return g_.add("mul", {loss, scale_}, {}, "loss_scale/scaled_loss");
}

std::vector<ir::Value*> LossScaleGraph::unscale(const std::vector<ir::Value*>& grads) {
  ir::Value* inv = g_.add("div", {g_.scalar(DType::kF32, 1.0), scale_}, {}, "loss_scale/inverse");
  std::vector<ir::Value*> out;
  for (ir::Value* gr : grads) {
    ir::Value* factor = inv;
    if (gr->dtype() != DType::kF32) {
      factor = g_.add("cast", {inv}, {{"dtype", gr->dtype()}}, "loss_scale/inverse_cast");
    }
    out.push_back(g_.add("mul", {gr, factor}, {}, "loss_scale/unscale"));
  }
  return out;
}

ir::Value* LossScaleGraph::finite(const std::vector<ir::Value*>& grads) {
  if (!options_.dynamic) return nullptr;
  TERN_CHECK_ARG(!grads.empty(), "loss scaling: no gradients to check");
  // all_finite takes one dtype; gradients of other dtypes are checked by separate nodes.
  std::vector<std::pair<DType, std::vector<ir::Value*>>> groups;
  for (ir::Value* gr : grads) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& grp) { return grp.first == gr->dtype(); });
    if (it == groups.end()) {
      groups.push_back({gr->dtype(), {gr}});
    } else {
      it->second.push_back(gr);
    }
  }
  ir::Value* all = nullptr;
  for (auto& [dtype, members] : groups) {
    ir::Value* f = g_.add("all_finite", members, {}, "loss_scale/all_finite");
    all = all ? g_.add("logical_and", {all, f}, {}, "loss_scale/all_finite_and") : f;
  }
  return all;
}

ir::Node* LossScaleGraph::update(ir::Value* finite) {
  if (!options_.dynamic) return nullptr;
  ir::Node* n =
      g_.add_node("loss_scale_update", {scale_, good_steps_, finite},
                  {{"growth_interval", options_.growth_interval}, {"factor", options_.factor}},
                  "loss_scale/update");
  // S is read (loss * S, 1 / S) before it changes in place.
  for (const ir::Use& u : scale_->uses()) {
    if (u.node != n) n->add_control_input(u.node);
  }
  return n;
}

}  // namespace tern::optim
