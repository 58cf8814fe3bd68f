// Gradient rules for the unary op family: one entry per op, dx from dy, x and y. relu, gelu,
// sigmoid and tanh use their fused helper ops; sign has no rule (it is not differentiable).
#include "tern/autodiff/autodiff.h"

namespace tern::autodiff {
namespace {

using Grads = std::vector<ir::Value*>;

ir::Value* mul(GradContext& c, ir::Value* a, ir::Value* b) {
  return c.op("mul", {a, b});
}

// A scalar of x's dtype, broadcast by the binary op that uses it.
ir::Value* k(GradContext& c, double v) {
  return c.scalar(v, c.x(0)->dtype());
}

}  // namespace

void register_unary_grads(GradRegistry& r) {
  r.add("neg", [](GradContext& c) -> Grads { return {c.op("neg", {c.dy()})}; });
  r.add("abs", [](GradContext& c) -> Grads { return {mul(c, c.dy(), c.op("sign", {c.x(0)}))}; });
  r.add("exp", [](GradContext& c) -> Grads { return {mul(c, c.dy(), c.y())}; });
  r.add("log", [](GradContext& c) -> Grads { return {c.op("div", {c.dy(), c.x(0)})}; });
  r.add("log1p", [](GradContext& c) -> Grads {
    return {c.op("div", {c.dy(), c.op("add", {c.x(0), k(c, 1)})})};
  });
  // d sqrt(x) = 1 / (2 sqrt(x)) = 0.5 / y.
  r.add("sqrt", [](GradContext& c) -> Grads {
    return {c.op("div", {mul(c, c.dy(), k(c, 0.5)), c.y()})};
  });
  // d x^-1/2 = -0.5 x^-3/2 = -0.5 y^3.
  r.add("rsqrt", [](GradContext& c) -> Grads {
    ir::Value* y3 = mul(c, c.op("square", {c.y()}), c.y());
    return {mul(c, c.dy(), mul(c, y3, k(c, -0.5)))};
  });
  r.add("square",
        [](GradContext& c) -> Grads { return {mul(c, c.dy(), mul(c, c.x(0), k(c, 2)))}; });
  r.add("tanh", [](GradContext& c) -> Grads { return {c.op("tanh_grad", {c.dy(), c.y()})}; });
  r.add("sigmoid", [](GradContext& c) -> Grads { return {c.op("sigmoid_grad", {c.dy(), c.y()})}; });
  // relu(x) > 0 exactly where x > 0, so the mask comes from the output: the pre-activation then
  // dies at the relu and epilogue fusion can fold the activation into its matmul/conv.
  r.add("relu", [](GradContext& c) -> Grads { return {c.op("relu_grad", {c.dy(), c.y(0)})}; });
  r.add("gelu", [](GradContext& c) -> Grads {
    return {
        c.op("gelu_grad", {c.dy(), c.x(0)}, {{"approximate", c.attrs().get_bool("approximate")}})};
  });
  // d softplus(x) = sigmoid(x).
  r.add("softplus",
        [](GradContext& c) -> Grads { return {mul(c, c.dy(), c.op("sigmoid", {c.x(0)}))}; });
  r.add("sin", [](GradContext& c) -> Grads { return {mul(c, c.dy(), c.op("cos", {c.x(0)}))}; });
  r.add("cos", [](GradContext& c) -> Grads {
    return {mul(c, c.dy(), c.op("neg", {c.op("sin", {c.x(0)})}))};
  });
  // Back to the input's dtype; an integer output carries no gradient, so dx is zero.
  r.add("cast", [](GradContext& c) -> Grads {
    const TensorType& x = c.x(0)->type();
    if (!is_floating(c.y()->dtype())) return {c.zeros(x)};
    return {c.op("cast", {c.dy()}, {{"dtype", x.dtype}})};
  });
}

}  // namespace tern::autodiff
