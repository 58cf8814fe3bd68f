// LossScaleGraph on a one-variable graph: gradients of loss * S come back unscaled, the finite
// flag and the scale update follow the gradients, the state variables start from the options;
// options are checked naming the field.
#include "tern/optim/loss_scale.h"

#include <gtest/gtest.h>

#include <limits>

#include "tern/autodiff/autodiff.h"
#include "tern/runtime/executable.h"
#include "tests/support/random_tensor.h"

namespace tern::optim {
namespace {

// loss = sum(w * w) with w f32[3]; outputs the unscaled gradient and the finite flag.
struct Step {
  runtime::VariableStore store;
  std::unique_ptr<runtime::Executable> exe;

  explicit Step(const LossScaleOptions& o) {
    store.create("w", Tensor::from_values(DType::kF32, Shape({3}), {1, -2, 0.5}));
    ir::Graph g("step");
    ir::Value* w = g.variable("w", store.get("w").type());
    ir::Value* loss = g.add("sum", {g.add("square", {w})},
                            {{"axes", std::vector<int64_t>{}}, {"keepdims", false}});
    LossScaleGraph ls(g, store, o);
    std::vector<ir::Value*> wrt = {w};
    std::vector<ir::Value*> grads = ls.unscale(autodiff::gradients(g, ls.scale_loss(loss), wrt));
    g.add_output("grad", grads[0]);
    if (ir::Value* finite = ls.finite(grads)) {
      ls.update(finite);
      g.add_output("finite", finite);
    }
    exe = runtime::Executable::compile(g, store);
  }
  double scale() const { return read_loss_scale(store)->scale; }
  int64_t good_steps() const { return read_loss_scale(store)->good_steps; }
};

TEST(LossScale, GradientsComeBackUnscaledAndTheStateFollowsThem) {
  LossScaleOptions o;
  o.initial_scale = 1024;
  o.growth_interval = 2;
  Step s(o);
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_EQ(s.good_steps(), 0);
  s.exe->run();
  const Tensor& grad = s.exe->output("grad");
  EXPECT_EQ(grad.get(0), 2);  // d/dw w^2, exact: S is a power of two
  EXPECT_EQ(grad.get(1), -4);
  EXPECT_EQ(grad.get(2), 1);
  EXPECT_EQ(s.exe->output("finite").get(0), 1);
  EXPECT_EQ(s.good_steps(), 1);
  s.exe->run();
  EXPECT_EQ(s.scale(), 2048);  // grown after two clean steps
  EXPECT_EQ(s.good_steps(), 0);

  s.store.get_mutable("w").set(1, std::numeric_limits<double>::infinity());
  s.exe->run();
  EXPECT_EQ(s.exe->output("finite").get(0), 0);
  EXPECT_EQ(s.scale(), 1024);
  EXPECT_EQ(s.good_steps(), 0);
}

TEST(LossScale, FixedScaleAddsNoCheckAndExistingStateIsKept) {
  LossScaleOptions o;
  o.dynamic = false;
  o.initial_scale = 8;
  Step s(o);
  EXPECT_EQ(s.exe->num_outputs(), 1u);  // no "finite"
  s.exe->run();
  EXPECT_EQ(s.exe->output("grad").get(1), -4);
  EXPECT_EQ(s.scale(), 8);

  runtime::VariableStore store;
  store.create(kLossScaleVariable, Tensor::scalar(DType::kF32, 64));
  ir::Graph g;
  LossScaleGraph keep(g, store, LossScaleOptions{});  // restored state wins over initial_scale
  EXPECT_EQ(read_loss_scale(store)->scale, 64);
  EXPECT_EQ(read_loss_scale(store)->good_steps, 0);
}

TEST(LossScale, OptionsAreChecked) {
  check_loss_scale_options(LossScaleOptions{});
  LossScaleOptions o;
  o.initial_scale = std::numeric_limits<double>::infinity();
  EXPECT_TERN_ERROR(check_loss_scale_options(o), ErrorCode::kInvalidArgument, "initial_scale");
  o = {};
  o.growth_interval = 0;
  EXPECT_TERN_ERROR(check_loss_scale_options(o), ErrorCode::kInvalidArgument, "growth_interval");
  o = {};
  o.factor = 0.5;
  EXPECT_TERN_ERROR(check_loss_scale_options(o), ErrorCode::kInvalidArgument, "factor");
  runtime::VariableStore store;
  ir::Graph g;
  LossScaleGraph ls(g, store, LossScaleOptions{});
  ir::Value* not_scalar = g.input("l", {DType::kF32, Shape({2})});
  EXPECT_TERN_ERROR(ls.scale_loss(not_scalar), ErrorCode::kInvalidArgument, "f32 scalar loss");
}

}  // namespace
}  // namespace tern::optim
