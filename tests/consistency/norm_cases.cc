// Consistency cases: batch norm (training, inference, grad) and layer norm (+ grad), plus gradient
// checks through single outputs of the multi-output norm and cross-entropy ops.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/autodiff/autodiff.h"
#include "tern/ir/graph.h"
#include "tern/runtime/eager.h"
#include "tests/consistency/op_case.h"
#include "tests/support/random_tensor.h"

namespace tern::testing {

TERN_OP_CASES(norm) {
  const ops::Attrs eps = {{"epsilon", 1e-2}};
  return {
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

TEST(SoftmaxGrads, DlogitsOutputAlone) {
  Tensor logits = random_tensor(DType::kF64, {3, 4}, 4, -2, 2);
  Tensor labels = Tensor::from_vector<int64_t>({3}, {1, 3, 0});
  Tensor dist = random_tensor(DType::kF64, {3, 4}, 5, 0, 1);
  check_single_output_grad("sparse_softmax_cross_entropy", {logits, labels}, 1);
  check_single_output_grad("softmax_cross_entropy", {logits, dist}, 1);
}

}  // namespace tern::testing
