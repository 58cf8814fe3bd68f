// Gradient rules for the norm family. Training-mode batch norm and layer norm route the gradient
// of y through their fused *_grad ops; gradients reaching the statistics outputs (mean, var or
// rstd) add their own terms. Inference batch norm is an affine map per channel, built from
// elementwise ops.
#include <algorithm>

#include "tern/autodiff/autodiff.h"

namespace tern::autodiff {
namespace {

// Adds `term` (broadcastable to `shape`) to the full-shape gradient `acc` (may be null).
ir::Value* add_full(GradContext& c, ir::Value* acc, ir::Value* term, const Shape& shape) {
  if (!term) return acc;
  if (acc) return c.op("add", {acc, term});
  if (term->shape() == shape) return term;
  return c.op("broadcast_to", {term}, {{"shape", shape.dims()}});
}

ir::Value* cube(GradContext& c, ir::Value* v) {
  return c.op("mul", {v, c.op("mul", {v, v})});
}

}  // namespace

void register_norm_grads(GradRegistry& r) {
  // Outputs: y, mean [C], var [C] (biased, over M = elements / C rows). With a folded relu, y's
  // gradient reaches the normalization only where y > 0: batch_norm_grad with the same
  // activation, gated by y. A residual input gets y's gradient (gated the same way).
  r.add("batch_norm_training", [](GradContext& c) -> std::vector<ir::Value*> {
    ir::Value *x = c.x(0), *mean = c.y(1);
    ir::Value *dx = nullptr, *dgamma = nullptr, *dbeta = nullptr;
    if (c.has_dy(0)) {
      const std::string& activation = c.attrs().get_string("activation");
      std::vector<ir::Value*> in = {c.dy(0), x, c.x(1), mean, c.y(2)};
      if (activation != "none") in.push_back(c.y(0));
      ir::Node* n =
          c.op_node("batch_norm_grad", std::move(in),
                    {{"epsilon", c.attrs().get_float("epsilon")}, {"activation", activation}});
      dx = n->output(0);
      dgamma = n->output(1);
      dbeta = n->output(2);
    }
    const Shape& s = x->shape();
    double m = static_cast<double>(s.num_elements() / std::max<int64_t>(1, s[s.rank() - 1]));
    ir::Value* stats = nullptr;
    if (c.has_dy(2)) {  // d var / dx = 2 (x - mean) / M
      ir::Value* centered = c.op("mul", {c.op("sub", {x, mean}), c.dy(2)});
      stats = c.op("mul", {centered, c.scalar(2.0 / m, x->dtype())});
    }
    if (c.has_dy(1)) {  // d mean / dx = 1 / M
      ir::Value* dmean = c.op("mul", {c.dy(1), c.scalar(1.0 / m, x->dtype())});
      stats = stats ? c.op("add", {stats, dmean}) : dmean;
    }
    if (c.needs(0)) dx = add_full(c, dx, stats, s);
    std::vector<ir::Value*> out = {c.needs(0) ? dx : nullptr, c.needs(1) ? dgamma : nullptr,
                                   c.needs(2) ? dbeta : nullptr};
    if (c.node().num_inputs() > 3) {
      ir::Value* dres = nullptr;
      if (c.needs(3) && c.has_dy(0)) {
        dres = c.attrs().get_string("activation") == "relu" ? c.op("relu_grad", {c.dy(0), c.y(0)})
                                                            : c.dy(0);
      }
      out.push_back(dres);
    }
    return out;
  });

  // y = (x - mean) * rstd * gamma + beta with rstd = 1 / sqrt(var + epsilon).
  r.add("batch_norm_inference", [](GradContext& c) -> std::vector<ir::Value*> {
    ir::Value *x = c.x(0), *gamma = c.x(1), *mean = c.x(3), *var = c.x(4), *dy = c.dy();
    const Shape& cs = gamma->shape();
    ir::Value* eps = c.scalar(c.attrs().get_float("epsilon"), x->dtype());
    ir::Value* rstd = c.op("rsqrt", {c.op("add", {var, eps})});
    std::vector<ir::Value*> out(5, nullptr);
    ir::Value* gx = nullptr;
    if (c.needs(0) || c.needs(3)) gx = c.op("mul", {dy, c.op("mul", {gamma, rstd})});
    if (c.needs(0)) out[0] = gx;
    if (c.needs(1) || c.needs(4)) {
      ir::Value* centered = c.op("sub", {x, mean});
      if (c.needs(1)) out[1] = c.sum_to(c.op("mul", {dy, c.op("mul", {centered, rstd})}), cs);
      if (c.needs(4)) {  // d rstd / d var = -rstd^3 / 2
        ir::Value* coef =
            c.op("mul", {gamma, c.op("mul", {cube(c, rstd), c.scalar(-0.5, x->dtype())})});
        out[4] = c.op("mul", {c.sum_to(c.op("mul", {dy, centered}), cs), coef});
      }
    }
    if (c.needs(2)) out[2] = c.sum_to(dy, cs);
    if (c.needs(3)) out[3] = c.op("neg", {c.sum_to(gx, cs)});
    return out;
  });

  // Outputs: y, mean x[:-1], rstd x[:-1] over D = the last dim.
  r.add("layer_norm", [](GradContext& c) -> std::vector<ir::Value*> {
    ir::Value *x = c.x(0), *mean = c.y(1), *rstd = c.y(2);
    ir::Value *dx = nullptr, *dgamma = nullptr, *dbeta = nullptr;
    if (c.has_dy(0)) {
      ir::Node* n = c.op_node("layer_norm_grad", {c.dy(0), x, c.x(1), mean, rstd});
      dx = n->output(0);
      dgamma = n->output(1);
      dbeta = n->output(2);
    }
    const Shape& s = x->shape();
    double d = static_cast<double>(s[s.rank() - 1]);
    std::vector<int64_t> keep = s.dims();
    keep.back() = 1;
    auto per_row = [&](ir::Value* v) { return c.op("reshape", {v}, {{"shape", keep}}); };
    ir::Value* stats = nullptr;
    if (c.has_dy(2)) {  // d rstd / dx = -rstd^3 (x - mean) / D
      ir::Value* coef = per_row(c.op("mul", {c.dy(2), cube(c, rstd)}));
      ir::Value* centered = c.op("sub", {x, per_row(mean)});
      stats = c.op("mul", {c.op("mul", {centered, coef}), c.scalar(-1.0 / d, x->dtype())});
    }
    if (c.has_dy(1)) {  // d mean / dx = 1 / D
      ir::Value* dmean = per_row(c.op("mul", {c.dy(1), c.scalar(1.0 / d, x->dtype())}));
      stats = stats ? c.op("add", {stats, dmean}) : dmean;
    }
    if (c.needs(0)) dx = add_full(c, dx, stats, s);
    return {c.needs(0) ? dx : nullptr, c.needs(1) ? dgamma : nullptr, c.needs(2) ? dbeta : nullptr};
  });
}

}  // namespace tern::autodiff
