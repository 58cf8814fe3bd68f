// Gradient rules for the binary op family. Each input's gradient is computed at the broadcast
// output shape and then summed back to the input's shape with c.sum_to. Comparisons and logical
// ops are not differentiable; `where` passes dy to a or b by the condition.
#include "tern/autodiff/autodiff.h"

namespace tern::autodiff {
namespace {

using Grads = std::vector<ir::Value*>;

ir::Value* mul(GradContext& c, ir::Value* a, ir::Value* b) {
  return c.op("mul", {a, b});
}

// Gradient `g` (at the output shape) reduced to input i's shape, or nullptr if not needed.
ir::Value* to_input(GradContext& c, int i, ir::Value* g) {
  return c.needs(i) ? c.sum_to(g, c.x(i)->shape()) : nullptr;
}

// dy where `mask` holds, zero elsewhere (and the complement), for maximum/minimum/where.
ir::Value* select(GradContext& c, ir::Value* mask, bool when_true) {
  ir::Value* zero = c.scalar(0, c.dy()->dtype());
  return when_true ? c.op("where", {mask, c.dy(), zero}) : c.op("where", {mask, zero, c.dy()});
}

// maximum (ties go to a, as in TensorFlow) and minimum.
Grads extremum_grad(GradContext& c, const char* a_wins) {
  ir::Value* mask = c.op(a_wins, {c.x(0), c.x(1)});
  ir::Value* da = c.needs(0) ? to_input(c, 0, select(c, mask, true)) : nullptr;
  ir::Value* db = c.needs(1) ? to_input(c, 1, select(c, mask, false)) : nullptr;
  return {da, db};
}

}  // namespace

void register_binary_grads(GradRegistry& r) {
  r.add("add", [](GradContext& c) -> Grads {
    return {to_input(c, 0, c.dy()), to_input(c, 1, c.dy())};
  });
  r.add("sub", [](GradContext& c) -> Grads {
    ir::Value* db = c.needs(1) ? to_input(c, 1, c.op("neg", {c.dy()})) : nullptr;
    return {to_input(c, 0, c.dy()), db};
  });
  r.add("mul", [](GradContext& c) -> Grads {
    ir::Value* da = c.needs(0) ? to_input(c, 0, mul(c, c.dy(), c.x(1))) : nullptr;
    ir::Value* db = c.needs(1) ? to_input(c, 1, mul(c, c.dy(), c.x(0))) : nullptr;
    return {da, db};
  });
  // y = a / b: da = dy / b, db = -dy * a / b^2 = -dy * y / b.
  r.add("div", [](GradContext& c) -> Grads {
    ir::Value* da = c.needs(0) ? to_input(c, 0, c.op("div", {c.dy(), c.x(1)})) : nullptr;
    ir::Value* db = nullptr;
    if (c.needs(1)) {
      ir::Value* g = c.op("div", {mul(c, c.dy(), c.y()), c.x(1)});
      db = to_input(c, 1, c.op("neg", {g}));
    }
    return {da, db};
  });
  // y = a^b: da = dy * b * a^(b-1); db = dy * y * log(a), taken as 0 where a <= 0 (TensorFlow's
  // convention: the real log is undefined there).
  r.add("pow", [](GradContext& c) -> Grads {
    ir::Value *a = c.x(0), *b = c.x(1);
    DType d = a->dtype();
    ir::Value *da = nullptr, *db = nullptr;
    if (c.needs(0)) {
      ir::Value* b_minus_1 = c.op("sub", {b, c.scalar(1, d)});
      ir::Value* slope = mul(c, b, c.op("pow", {a, b_minus_1}));
      da = to_input(c, 0, mul(c, c.dy(), slope));
    }
    if (c.needs(1)) {
      ir::Value* positive = c.op("greater", {a, c.scalar(0, d)});
      ir::Value* log_a = c.op("where", {positive, c.op("log", {a}), c.scalar(0, d)});
      db = to_input(c, 1, mul(c, mul(c, c.dy(), c.y()), log_a));
    }
    return {da, db};
  });
  r.add("maximum", [](GradContext& c) { return extremum_grad(c, "greater_equal"); });
  r.add("minimum", [](GradContext& c) { return extremum_grad(c, "less_equal"); });
  r.add("where", [](GradContext& c) -> Grads {
    ir::Value* cond = c.x(0);
    ir::Value* da = c.needs(1) ? to_input(c, 1, select(c, cond, true)) : nullptr;
    ir::Value* db = c.needs(2) ? to_input(c, 2, select(c, cond, false)) : nullptr;
    return {nullptr, da, db};
  });
}

}  // namespace tern::autodiff
