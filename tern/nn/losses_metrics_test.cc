// Losses and metrics against hand-computed values (Keras semantics).
#include <gtest/gtest.h>

#include <cmath>

#include "tern/nn/losses.h"
#include "tern/nn/metrics.h"
#include "tern/runtime/eager.h"
#include "tests/support/random_tensor.h"

namespace tern::nn {
namespace {

double eval_loss(const Loss& loss, const Tensor& y_true, const Tensor& y_pred) {
  ir::Graph g;
  ir::Value* out = loss.call(g, g.constant(y_true), g.constant(y_pred));
  g.add_output("loss", out);
  return runtime::run_graph_eager(g, {}, nullptr)[0].get(0);
}

std::vector<double> eval_stats(Metric& m, const Tensor& y_true, const Tensor& y_pred) {
  ir::Graph g;
  std::vector<ir::Value*> stats = m.batch_stats(g, g.constant(y_true), g.constant(y_pred));
  for (size_t i = 0; i < stats.size(); ++i) g.add_output(str_cat("s", i), stats[i]);
  std::vector<double> flat;
  for (const Tensor& t : runtime::run_graph_eager(g, {}, nullptr)) {
    for (double v : t.to_doubles()) flat.push_back(v);
  }
  return flat;
}

TEST(Losses, SparseCategoricalCrossentropy) {
  Tensor logits = Tensor::from_values(DType::kF32, {2, 3}, {1, 2, 3, 1, 1, 1});
  Tensor labels = Tensor::from_values(DType::kU8, {2}, {2, 0});
  double l0 = -std::log(std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)));
  double l1 = std::log(3.0);
  EXPECT_NEAR(eval_loss(SparseCategoricalCrossentropy(true), labels, logits), (l0 + l1) / 2, 1e-5);
  // Probabilities instead of logits.
  Tensor probs = Tensor::from_values(DType::kF32, {2, 3}, {0.2, 0.3, 0.5, 0.6, 0.2, 0.2});
  EXPECT_NEAR(eval_loss(SparseCategoricalCrossentropy(false), labels, probs),
              -(std::log(0.5) + std::log(0.6)) / 2, 1e-5);
}

TEST(Losses, CategoricalWithLabelSmoothing) {
  Tensor probs = Tensor::from_values(DType::kF32, {1, 2}, {0.8, 0.2});
  Tensor onehot = Tensor::from_values(DType::kF32, {1, 2}, {1, 0});
  // smoothing 0.2 over 2 classes: targets [0.9, 0.1]
  double want = -(0.9 * std::log(0.8) + 0.1 * std::log(0.2));
  EXPECT_NEAR(eval_loss(CategoricalCrossentropy(false, 0.2), onehot, probs), want, 1e-5);
  Tensor logits = Tensor::from_values(DType::kF32, {1, 2}, {std::log(0.8), std::log(0.2)});
  EXPECT_NEAR(eval_loss(CategoricalCrossentropy(true, 0.2), onehot, logits), want, 1e-5);
}

TEST(Losses, BinaryRegressionAndHuber) {
  Tensor p = Tensor::from_values(DType::kF32, {2, 1}, {0.9, 0.3});
  Tensor y = Tensor::from_values(DType::kF32, {2}, {1, 0});
  EXPECT_NEAR(eval_loss(BinaryCrossentropy(false), y, p), -(std::log(0.9) + std::log(0.7)) / 2,
              1e-5);
  Tensor logit = Tensor::from_values(DType::kF32, {2, 1}, {2.0, -1.0});
  double s0 = 1 / (1 + std::exp(-2.0)), s1 = 1 / (1 + std::exp(1.0));
  EXPECT_NEAR(eval_loss(BinaryCrossentropy(true), y, logit), -(std::log(s0) + std::log(1 - s1)) / 2,
              1e-5);
  Tensor a = Tensor::from_values(DType::kF32, {4}, {0, 1, 2, 3});
  Tensor b = Tensor::from_values(DType::kF32, {4}, {0, 0.5, 4, 3});
  EXPECT_NEAR(eval_loss(MeanSquaredError(), a, b), (0.25 + 4) / 4, 1e-6);
  EXPECT_NEAR(eval_loss(MeanAbsoluteError(), a, b), (0.5 + 2) / 4, 1e-6);
  // Huber(delta 1): 0.5*0.25 for |e|=0.5, 1*(2-0.5) for |e|=2.
  EXPECT_NEAR(eval_loss(Huber(1.0), a, b), (0.125 + 1.5) / 4, 1e-6);
  EXPECT_TERN_ERROR(eval_loss(MeanSquaredError(), Tensor::zeros(DType::kF32, {3}), b),
                    ErrorCode::kInvalidArgument, "do not match predictions");
  EXPECT_TERN_ERROR(loss_by_name("mse_loss"), ErrorCode::kInvalidArgument, "unknown loss");
}

TEST(Metrics, AccuracyTopKPrecisionRecall) {
  Tensor logits = Tensor::from_values(DType::kF32, {4, 3}, {3, 1, 0, 0, 2, 1, 0, 1, 2, 2, 1, 0});
  Tensor labels =
      Tensor::from_values(DType::kI64, {4}, {0, 1, 1, 2});  // correct, correct, 2nd, 3rd
  SparseCategoricalAccuracy acc;
  acc.update(eval_stats(acc, labels, logits));
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);
  SparseTopKAccuracy top2(2);
  top2.update(eval_stats(top2, labels, logits));
  EXPECT_DOUBLE_EQ(top2.result(), 0.75);
  Tensor p = Tensor::from_values(DType::kF32, {5}, {0.9, 0.8, 0.3, 0.6, 0.1});
  Tensor y = Tensor::from_values(DType::kF32, {5}, {1, 0, 1, 1, 0});
  Precision prec;
  prec.update(eval_stats(prec, y, p));
  EXPECT_DOUBLE_EQ(prec.result(), 2.0 / 3.0);  // predicted 1: items 0,1,3; true among them: 0,3
  Recall rec;
  rec.update(eval_stats(rec, y, p));
  EXPECT_DOUBLE_EQ(rec.result(), 2.0 / 3.0);  // positives 0,2,3; found 0,3
  BinaryAccuracy bacc;
  bacc.update(eval_stats(bacc, y, p));
  EXPECT_DOUBLE_EQ(bacc.result(), 0.6);
}

TEST(Metrics, AucMatchesPairwiseRanking) {
  // Positives scored 0.9, 0.7, 0.4; negatives 0.8, 0.3, 0.1, 0.2: 10 of 12 pairs ranked right.
  Tensor p = Tensor::from_values(DType::kF32, {7}, {0.9, 0.7, 0.4, 0.8, 0.3, 0.1, 0.2});
  Tensor y = Tensor::from_values(DType::kF32, {7}, {1, 1, 1, 0, 0, 0, 0});
  AUC auc(1000);
  auc.update(eval_stats(auc, y, p));
  EXPECT_NEAR(auc.result(), 10.0 / 12.0, 1e-3);
}

TEST(Metrics, StreamingOverBatchesIsExact) {
  SparseCategoricalAccuracy acc;
  Tensor l1 = Tensor::from_values(DType::kF32, {1, 2}, {1, 0});
  Tensor l2 = Tensor::from_values(DType::kF32, {3, 2}, {1, 0, 0, 1, 0, 1});
  acc.update(eval_stats(acc, Tensor::from_values(DType::kI64, {1}, {0}), l1));
  acc.update(eval_stats(acc, Tensor::from_values(DType::kI64, {3}, {0, 0, 0}), l2));
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);  // 2 of 4, not the mean of batch accuracies (0.67)
  EXPECT_TERN_ERROR(metric_by_name("acuracy", true, false, true), ErrorCode::kInvalidArgument,
                    "did you mean 'accuracy'");
  EXPECT_EQ(metric_by_name("top_3_accuracy", true, false, true)->name(), "top_3_accuracy");
  EXPECT_TERN_ERROR(metric_by_name("top_x_accuracy", true, false, true),
                    ErrorCode::kInvalidArgument, "top_<k>_accuracy");
}

}  // namespace
}  // namespace tern::nn
