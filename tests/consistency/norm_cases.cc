// Consistency cases: batch norm (training, inference, grad) and layer norm (+ grad), plus gradient
// checks through single outputs of the multi-output norm and cross-entropy ops; the mixed
// batch-norm form (16-bit x and dy, f32 gamma, beta and statistics) and its inference errors.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/autodiff/autodiff.h"
#include "tern/ir/graph.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/registry.h"
#include "tern/runtime/eager.h"
#include "tern/runtime/runtime.h"
#include "tests/consistency/op_case.h"
#include "tests/support/random_tensor.h"

namespace tern::testing {

namespace {

// A float input fixed at f32 whatever the case dtype (the mixed batch-norm parameters).
InputSpec F32(Shape shape, double lo = -1.0, double hi = 1.0) {
  return InputSpec{std::move(shape), lo, hi, DType::kF32, false, std::nullopt};
}

}  // namespace

TERN_OP_CASES(norm) {
  const ops::Attrs eps = {{"epsilon", 1e-2}};
  const std::vector<DType> half = {DType::kBF16, DType::kF16};
  return {
      {"batch_norm_training",
       {In({6, 3}), F32({3}, 0.5, 1.5), F32({3})},
       {},
       false,
       half,
       1e-5,
       "mixed"},
      {"batch_norm_grad",
       {In({6, 3}), In({6, 3}), F32({3}, 0.5, 1.5), F32({3}), F32({3}, 0.5, 1.5)},
       {},
       false,
       half,
       1e-5,
       "mixed"},
      {"batch_norm_training", {In({6, 3}), In({3}, 0.5, 1.5), In({3})}},
      {"batch_norm_training",
       {In({2, 3, 2, 4}), In({4}, 0.5, 1.5), In({4})},
       eps,
       true,
       {},
       1e-5,
       "nhwc"},
      {"batch_norm_inference",
       {In({5, 3}), In({3}, 0.5, 1.5), In({3}), In({3}), In({3}, 0.5, 1.5)}},
      {"batch_norm_inference",
       {In({2, 2, 3, 4}), In({4}, 0.5, 1.5), In({4}), In({4}), In({4}, 0.5, 1.5)},
       eps,
       true,
       {},
       1e-5,
       "nhwc"},
      {"batch_norm_grad", {In({6, 3}), In({6, 3}), In({3}, 0.5, 1.5), In({3}), In({3}, 0.5, 1.5)}},
      // The folded relu (fuse_norm_activation): the forward's gradient check goes through the
      // gated batch_norm_grad; the gate y of the grad cases is half negative.
      {"batch_norm_training",
       {In({6, 3}), In({3}, 0.5, 1.5), In({3})},
       {{"activation", "relu"}},
       true,
       {},
       1e-5,
       "relu"},
      {"batch_norm_training",
       {In({2, 3, 2, 4}), In({4}, 0.5, 1.5), In({4}, -0.5, 0.5)},
       {{"epsilon", 1e-2}, {"activation", "relu"}},
       true,
       {},
       1e-5,
       "relu-nhwc"},
      {"batch_norm_training",
       {In({6, 3}), F32({3}, 0.5, 1.5), F32({3})},
       {{"activation", "relu"}},
       false,
       half,
       1e-5,
       "relu-mixed"},
      // A residual (a ResNet block's shortcut) added before the activation; the gradient rule
      // passes y's gradient (gated by the relu) to it.
      {"batch_norm_training",
       {In({6, 3}), In({3}, 0.5, 1.5), In({3}), In({6, 3})},
       {},
       true,
       {},
       1e-5,
       "residual"},
      {"batch_norm_training",
       {In({2, 3, 2, 4}), In({4}, 0.5, 1.5), In({4}, -0.5, 0.5), In({2, 3, 2, 4})},
       {{"epsilon", 1e-2}, {"activation", "relu"}},
       true,
       {},
       1e-5,
       "residual-relu"},
      {"batch_norm_training",
       {In({6, 3}), F32({3}, 0.5, 1.5), F32({3}), In({6, 3})},
       {{"activation", "relu"}},
       false,
       half,
       1e-5,
       "residual-relu-mixed"},
      {"batch_norm_grad",
       {In({6, 3}), In({6, 3}), In({3}, 0.5, 1.5), In({3}), In({3}, 0.5, 1.5), In({6, 3})},
       {{"activation", "relu"}},
       false,
       {},
       1e-5,
       "relu"},
      {"batch_norm_grad",
       {In({6, 3}), In({6, 3}), F32({3}, 0.5, 1.5), F32({3}), F32({3}, 0.5, 1.5), In({6, 3})},
       {{"activation", "relu"}},
       false,
       half,
       1e-5,
       "relu-mixed"},
      {"layer_norm", {In({4, 5}), In({5}, 0.5, 1.5), In({5})}},
      {"layer_norm", {In({2, 3, 6}), In({6}, 0.5, 1.5), In({6})}, eps, true, {}, 1e-5, "3d"},
      {"layer_norm", {In({7}), In({7}, 0.5, 1.5), In({7})}, {}, true, {}, 1e-5, "rank1"},
      {"layer_norm_grad", {In({4, 5}), In({4, 5}), In({5}, 0.5, 1.5), In({4}), In({4}, 0.5, 2)}},
  };
}

// --- gradients through one output alone ---
// The harness weights every output at once; these check the rules when only a statistics output
// (or only dlogits) carries a gradient, against central differences.

namespace {

// d sum(w * op(x, rest...)[k]) / dx, analytic (autodiff, ref kernels) and numeric.
void check_single_output_grad(const char* op, const std::vector<Tensor>& inputs, int k) {
  SCOPED_TRACE(str_cat(op, " output ", k));
  ir::Graph g;
  std::vector<ir::Value*> in;
  runtime::Feeds feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in.push_back(g.input(str_cat("x", i), inputs[i].type()));
    feeds.push_back({str_cat("x", i), inputs[i]});
  }
  ir::Node* node = g.add_node(op, in);
  Tensor w = random_tensor(DType::kF64, node->output(k)->shape(), 77);
  ir::Value* loss = g.add("sum", {g.add("mul", {node->output(k), g.constant(w)})},
                          {{"axes", std::vector<int64_t>{}}, {"keepdims", false}});
  std::vector<ir::Value*> wrt = {in[0]};
  g.add_output("dx", autodiff::gradients(g, loss, wrt)[0]);
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  Tensor analytic = runtime::run_graph_eager(g, feeds, nullptr, ref)[0];
  auto eval = [&](const Tensor& x) {
    std::vector<Tensor> args = inputs;
    args[0] = x;
    Tensor out = runtime::eager_call(op, args, {}, ref)[static_cast<size_t>(k)];
    double s = 0;
    for (int64_t i = 0; i < out.num_elements(); ++i) s += out.get(i) * w.get(i);
    return s;
  };
  for (int64_t e = 0; e < inputs[0].num_elements(); ++e) {
    Tensor plus = inputs[0].clone(), minus = inputs[0].clone();
    plus.set(e, inputs[0].get(e) + 1e-6);
    minus.set(e, inputs[0].get(e) - 1e-6);
    double numeric = (eval(plus) - eval(minus)) / 2e-6;
    EXPECT_NEAR(analytic.get(e), numeric, 1e-6 * (1 + std::fabs(numeric))) << "element " << e;
  }
}

}  // namespace

TEST(NormGrads, StatisticsOutputsAlone) {
  Tensor x = random_tensor(DType::kF64, {5, 3}, 1);
  Tensor gamma = random_tensor(DType::kF64, {3}, 2, 0.5, 1.5),
         beta = random_tensor(DType::kF64, {3}, 3);
  for (int k : {1, 2}) {
    check_single_output_grad("batch_norm_training", {x, gamma, beta}, k);
    check_single_output_grad("layer_norm", {x, gamma, beta}, k);
  }
}

TEST(NormErrors, BatchNormDTypeMixes) {
  auto t = [](DType d, Shape s) { return random_tensor(d, s, 1); };
  constexpr ErrorCode kBad = ErrorCode::kInvalidArgument;
  const DType bf16 = DType::kBF16, f16 = DType::kF16, f32 = DType::kF32, f64 = DType::kF64;
  // The mixed form is accepted: y keeps x's dtype, the statistics are f32.
  std::vector<Tensor> out =
      runtime::eager_call("batch_norm_training", {t(bf16, {4, 3}), t(f32, {3}), t(f32, {3})});
  EXPECT_EQ(out[0].dtype(), bf16);
  EXPECT_EQ(out[1].dtype(), f32);
  EXPECT_EQ(out[2].dtype(), f32);
  // Parameters in another 16-bit type, 16-bit parameters for f32 x, f32 parameters for f64 x.
  EXPECT_TERN_ERROR(
      runtime::eager_call("batch_norm_training", {t(f16, {4, 3}), t(bf16, {3}), t(bf16, {3})}),
      kBad, "op 'batch_norm_training'");
  EXPECT_TERN_ERROR(
      runtime::eager_call("batch_norm_training", {t(f16, {4, 3}), t(bf16, {3}), t(bf16, {3})}),
      kBad, "input 1 is bf16 but input 0 is f16");
  EXPECT_TERN_ERROR(
      runtime::eager_call("batch_norm_training", {t(f32, {4, 3}), t(bf16, {3}), t(bf16, {3})}),
      kBad, "input 1 is bf16 but input 0 is f32");
  EXPECT_TERN_ERROR(
      runtime::eager_call("batch_norm_training", {t(f64, {4, 3}), t(f32, {3}), t(f32, {3})}), kBad,
      "input 1 is f32 but input 0 is f64");
  // Parameters that disagree among themselves.
  EXPECT_TERN_ERROR(
      runtime::eager_call("batch_norm_training", {t(bf16, {4, 3}), t(f32, {3}), t(bf16, {3})}),
      kBad, "inputs 1 and 2 have different dtypes (f32 vs bf16)");
  // batch_norm_grad: dy and x must agree; gamma, mean, var f32 or x's dtype.
  EXPECT_TERN_ERROR(runtime::eager_call("batch_norm_grad", {t(f32, {4, 3}), t(bf16, {4, 3}),
                                                            t(f32, {3}), t(f32, {3}), t(f32, {3})}),
                    kBad, "op 'batch_norm_grad'");
  EXPECT_TERN_ERROR(runtime::eager_call("batch_norm_grad", {t(bf16, {4, 3}), t(bf16, {4, 3}),
                                                            t(f32, {3}), t(f32, {3}), t(f16, {3})}),
                    kBad, "inputs 2 and 4 have different dtypes (f32 vs f16)");
  // batch_norm_inference has no mixed form.
  EXPECT_TERN_ERROR(
      runtime::eager_call("batch_norm_inference",
                          {t(bf16, {4, 3}), t(f32, {3}), t(f32, {3}), t(f32, {3}), t(f32, {3})}),
      kBad, "different dtypes (bf16 vs f32)");
}

// The harness skips candidates that decline; here the fast kernels must take the mixed form (the
// one the mixed_bfloat16 policy runs): cpu_vec always, oneDNN wherever it takes bf16 at all.
TEST(NormKernels, MixedBatchNormHasFastKernels) {
  runtime::initialize();
  const auto& kreg = kernels::KernelRegistry::global();
  const Shape x{4, 5, 5, 8}, c{8};
  auto types = [&](DType xd, DType pd, bool grad) {
    std::vector<TensorType> in = {{xd, x}};
    if (grad) in.push_back({xd, x});
    for (int i = 0; i < (grad ? 3 : 2); ++i) in.push_back({pd, c});
    return in;
  };
  for (const char* name : {"batch_norm_training", "batch_norm_grad"}) {
    SCOPED_TRACE(name);
    const bool grad = std::string(name) == "batch_norm_grad";
    const ops::OpDef& op = ops::OpRegistry::global().get(name);
    auto signature = [&](DType xd, DType pd, ops::Attrs& attrs) {
      std::vector<TensorType> in = types(xd, pd, grad);
      std::vector<TensorType> out = op.check_and_infer(name, in, attrs);
      return kernels::KernelSignature{&op, &attrs, in, out, DeviceType::kCPU, false, {}};
    };
    ops::Attrs mixed_attrs, bf16_attrs;
    kernels::KernelSignature mixed = signature(DType::kBF16, DType::kF32, mixed_attrs);
    kernels::KernelSignature bf16 = signature(DType::kBF16, DType::kBF16, bf16_attrs);
    EXPECT_EQ(kreg.select(mixed).candidate->name, "cpu_vec");
    bool saw_onednn = false;
    for (const kernels::KernelCandidate* cand : kreg.candidates(name, DeviceType::kCPU)) {
      if (cand->name == "cpu_vec") {
        EXPECT_EQ(cand->decline(mixed), "");
        EXPECT_NE(cand->decline(bf16), "");  // all-bf16 is left to oneDNN
      } else if (cand->name == "onednn") {
        saw_onednn = true;
        if (cand->decline(bf16).empty()) {
          EXPECT_EQ(cand->decline(mixed), "");
        }
      }
    }
    EXPECT_TRUE(saw_onednn);
  }
}

TEST(SoftmaxGrads, DlogitsOutputAlone) {
  Tensor logits = random_tensor(DType::kF64, {3, 4}, 4, -2, 2);
  Tensor labels = Tensor::from_vector<int64_t>({3}, {1, 3, 0});
  Tensor dist = random_tensor(DType::kF64, {3, 4}, 5, 0, 1);
  check_single_output_grad("sparse_softmax_cross_entropy", {logits, labels}, 1);
  check_single_output_grad("softmax_cross_entropy", {logits, dist}, 1);
}

TEST(NormErrors, BatchNormActivation) {
  auto t = [](Shape s) { return random_tensor(DType::kF32, s, 1); };
  constexpr ErrorCode kBad = ErrorCode::kInvalidArgument;
  EXPECT_TERN_ERROR(runtime::eager_call("batch_norm_training", {t({4, 3}), t({3}), t({3})},
                                        {{"activation", "gelu"}}),
                    kBad, "activation must be \"none\" or \"relu\", got \"gelu\"");
  // The relu'd gradient needs its gate y; the plain one takes none.
  EXPECT_TERN_ERROR(
      runtime::eager_call("batch_norm_grad", {t({4, 3}), t({4, 3}), t({3}), t({3}), t({3})},
                          {{"activation", "relu"}}),
      kBad, "activation \"relu\" needs 6 inputs (dy, x, gamma, mean, var, y), got 5");
  EXPECT_TERN_ERROR(runtime::eager_call("batch_norm_grad",
                                        {t({4, 3}), t({4, 3}), t({3}), t({3}), t({3}), t({4, 3})}),
                    kBad, "5 inputs (dy, x, gamma, mean, var) without an activation, got 6");
  EXPECT_TERN_ERROR(runtime::eager_call("batch_norm_grad",
                                        {t({4, 3}), t({4, 3}), t({3}), t({3}), t({3}), t({4, 2})},
                                        {{"activation", "relu"}}),
                    kBad, "op 'batch_norm_grad'");
}

TEST(NormErrors, BatchNormResidual) {
  auto t = [](Shape s, DType d = DType::kF32) { return random_tensor(d, s, 1); };
  constexpr ErrorCode kBad = ErrorCode::kInvalidArgument;
  EXPECT_TERN_ERROR(
      runtime::eager_call("batch_norm_training", {t({4, 3}), t({3}), t({3}), t({4, 2})}), kBad,
      "inputs 0 and 3 have different shapes ([4, 3] vs [4, 2])");
  EXPECT_TERN_ERROR(runtime::eager_call("batch_norm_training",
                                        {t({4, 3}), t({3}), t({3}), t({4, 3}, DType::kF64)}),
                    kBad, "inputs 0 and 3 have different dtypes (f32 vs f64)");
  EXPECT_TERN_ERROR(
      runtime::eager_call("batch_norm_training", {t({4, 3}), t({3}), t({3}), t({4, 3}), t({4, 3})}),
      kBad, "3 inputs (x, gamma, beta) or 4 (x, gamma, beta, residual), got 5");
}

}  // namespace tern::testing
