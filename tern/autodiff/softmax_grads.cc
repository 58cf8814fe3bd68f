// Gradient rules for the softmax family. softmax/log_softmax use their grad helpers. The fused
// cross-entropies scale their saved dlogits by the loss gradient; when the dlogits output itself is
// used downstream its (second-order) contribution is added too, so every output is differentiable.
#include "tern/autodiff/autodiff.h"

namespace tern::autodiff {
namespace {

ir::Value* add_grads(GradContext& c, ir::Value* a, ir::Value* b) {
  if (!a) return b;
  if (!b) return a;
  return c.op("add", {a, b});
}

// The shape of `v` with its last dim set to 1 (for broadcasting a per-row value over classes).
std::vector<int64_t> rows_keepdims(const ir::Value* v) {
  std::vector<int64_t> dims = v->shape().dims();
  dims.back() = 1;
  return dims;
}

ops::Attrs last_axis() {
  return {{"axis", int64_t{-1}}};
}

ops::Attrs sum_last_keepdims(const ir::Value* v) {
  return {{"axes", std::vector<int64_t>{v->shape().rank() - 1}}, {"keepdims", true}};
}

}  // namespace

void register_softmax_grads(GradRegistry& r) {
  r.add("softmax", [](GradContext& c) -> std::vector<ir::Value*> {
    return {c.op("softmax_grad", {c.dy(), c.y()}, {{"axis", c.attrs().get_int("axis")}})};
  });
  r.add("log_softmax", [](GradContext& c) -> std::vector<ir::Value*> {
    return {c.op("log_softmax_grad", {c.dy(), c.y()}, {{"axis", c.attrs().get_int("axis")}})};
  });

  // loss [N], dlogits [N, C] = softmax - onehot. Labels get no gradient.
  r.add("sparse_softmax_cross_entropy", [](GradContext& c) -> std::vector<ir::Value*> {
    ir::Value* dx = nullptr;
    if (c.has_dy(0)) {
      ir::Value* dloss = c.op("reshape", {c.dy(0)}, {{"shape", rows_keepdims(c.x(0))}});
      dx = c.op("mul", {c.y(1), dloss});
    }
    if (c.has_dy(1)) {  // d(softmax - onehot) = softmax'.
      ir::Value* p = c.op("softmax", {c.x(0)}, last_axis());
      dx = add_grads(c, dx, c.op("softmax_grad", {c.dy(1), p}, last_axis()));
    }
    return {dx, nullptr};
  });

  // loss = -sum(z * log_softmax(x)), dlogits = softmax(x) * sum(z) - z.
  r.add("softmax_cross_entropy", [](GradContext& c) -> std::vector<ir::Value*> {
    ir::Value *x = c.x(0), *z = c.x(1);
    ir::Value *dx = nullptr, *dz = nullptr;
    if (c.has_dy(0)) {
      ir::Value* dloss = c.op("reshape", {c.dy(0)}, {{"shape", rows_keepdims(x)}});
      if (c.needs(0)) dx = c.op("mul", {c.y(1), dloss});
      if (c.needs(1)) {
        ir::Value* log_p = c.op("log_softmax", {x}, last_axis());
        dz = c.op("mul", {c.op("neg", {log_p}), dloss});
      }
    }
    if (c.has_dy(1)) {
      ir::Value* g = c.dy(1);
      ir::Value* p = c.op("softmax", {x}, last_axis());
      if (c.needs(0)) {  // sum(z) * softmax'(x) . g
        ir::Value* zsum = c.op("sum", {z}, sum_last_keepdims(z));
        ir::Value* jg = c.op("softmax_grad", {g, p}, last_axis());
        dx = add_grads(c, dx, c.op("mul", {jg, zsum}));
      }
      if (c.needs(1)) {  // d/dz_k sum_j g_j (p_j sum(z) - z_j) = sum(g * p) - g_k
        ir::Value* gp = c.op("sum", {c.op("mul", {g, p})}, sum_last_keepdims(p));
        dz = add_grads(c, dz, c.op("sub", {gp, g}));
      }
    }
    return {dx, dz};
  });

  // d/dx = sigmoid(x) - z, d/dz = -x.
  r.add("sigmoid_cross_entropy", [](GradContext& c) -> std::vector<ir::Value*> {
    ir::Value *x = c.x(0), *z = c.x(1), *dy = c.dy();
    ir::Value *dx = nullptr, *dz = nullptr;
    if (c.needs(0)) dx = c.op("mul", {c.op("sub", {c.op("sigmoid", {x}), z}), dy});
    if (c.needs(1)) dz = c.op("mul", {c.op("neg", {x}), dy});
    return {dx, dz};
  });
}

}  // namespace tern::autodiff
