// Metric graphs and host-side accumulation.
#include "tern/nn/metrics.h"

#include "tern/ops/registry.h"

namespace tern::nn {
namespace {

using Ints = std::vector<int64_t>;

ir::Value* sum_all(ir::Graph& g, ir::Value* x, const std::string& name) {
  if (x->dtype() != DType::kF32) x = g.add("cast", {x}, {{"dtype", DType::kF32}}, name + "/f32");
  return g.add("sum", {x}, {{"axes", Ints{}}, {"keepdims", false}}, name);
}

// The number of elements of `like` as an f32 constant (shapes are static).
ir::Value* count_of(ir::Graph& g, ir::Value* like) {
  return g.scalar(DType::kF32, static_cast<double>(like->shape().num_elements()));
}

// Labels as one i64 class id per row of `pred` ([rows, classes]).
ir::Value* flat_labels(ir::Graph& g, ir::Value* y_true, int64_t rows, const std::string& name) {
  TERN_CHECK_ARG(y_true->shape().num_elements() == rows, "metric '", name, "': labels of shape ",
                 y_true->shape(), " do not give one class id per prediction row (", rows, " rows)");
  ir::Value* l = y_true->dtype() == DType::kI64
                     ? y_true
                     : g.add("cast", {y_true}, {{"dtype", DType::kI64}}, name + "/i64");
  if (l->shape() != Shape{rows}) l = g.add("reshape", {l}, {{"shape", Ints{rows}}}, name + "/flat");
  return l;
}

ir::Value* flat_pred(ir::Graph& g, ir::Value* y_pred, const std::string& name) {
  const Shape& s = y_pred->shape();
  int64_t classes = s.dim(s.rank() - 1);
  if (s.rank() == 2) return y_pred;
  return g.add("reshape", {y_pred}, {{"shape", Ints{s.num_elements() / classes, classes}}},
               name + "/flat_pred");
}

// Binary predictions (pred > threshold) and labels as f32 0/1 with the prediction's shape.
std::pair<ir::Value*, ir::Value*> binarize(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred,
                                           double threshold, const std::string& name) {
  ir::Value* p = g.add(
      "cast", {g.add("greater", {y_pred, g.scalar(y_pred->dtype(), threshold)}, {}, name + "/gt")},
      {{"dtype", DType::kF32}}, name + "/pred01");
  ir::Value* t = y_true;
  if (t->shape() != y_pred->shape())
    t = g.add("reshape", {t}, {{"shape", y_pred->shape().dims()}}, name + "/labels");
  t = g.add("cast", {g.add("greater", {t, g.scalar(t->dtype(), 0.5)}, {}, name + "/lgt")},
            {{"dtype", DType::kF32}}, name + "/labels01");
  return {p, t};
}

double ratio(double a, double b) {
  return b > 0 ? a / b : 0.0;
}

}  // namespace

void Metric::update(const std::vector<double>& stats) {
  if (totals_.size() != stats.size()) totals_.assign(stats.size(), 0.0);
  for (size_t i = 0; i < stats.size(); ++i) totals_[i] += stats[i];
}

std::vector<ir::Value*> SparseCategoricalAccuracy::batch_stats(ir::Graph& g, ir::Value* y_true,
                                                               ir::Value* y_pred) {
  std::string n = "metric/" + name_;
  ir::Value* p = flat_pred(g, y_pred, n);
  ir::Value* labels = flat_labels(g, y_true, p->shape().dim(0), n);
  ir::Value* arg =
      g.add("argmax", {p}, {{"axis", int64_t{-1}}, {"keepdims", false}}, n + "/argmax");
  ir::Value* correct = sum_all(g, g.add("equal", {arg, labels}, {}, n + "/eq"), n + "/correct");
  return {correct, count_of(g, labels)};
}

double SparseCategoricalAccuracy::result() const {
  return totals_.size() == 2 ? ratio(totals_[0], totals_[1]) : 0;
}

std::vector<ir::Value*> CategoricalAccuracy::batch_stats(ir::Graph& g, ir::Value* y_true,
                                                         ir::Value* y_pred) {
  std::string n = "metric/" + name_;
  ir::Value* p = flat_pred(g, y_pred, n);
  ir::Value* t = flat_pred(g, y_true, n + "/labels");
  ir::Value* a =
      g.add("argmax", {p}, {{"axis", int64_t{-1}}, {"keepdims", false}}, n + "/argmax_pred");
  ir::Value* b =
      g.add("argmax", {t}, {{"axis", int64_t{-1}}, {"keepdims", false}}, n + "/argmax_true");
  return {sum_all(g, g.add("equal", {a, b}, {}, n + "/eq"), n + "/correct"), count_of(g, a)};
}

double CategoricalAccuracy::result() const {
  return totals_.size() == 2 ? ratio(totals_[0], totals_[1]) : 0;
}

std::vector<ir::Value*> BinaryAccuracy::batch_stats(ir::Graph& g, ir::Value* y_true,
                                                    ir::Value* y_pred) {
  std::string n = "metric/" + name_;
  auto [p, t] = binarize(g, y_true, y_pred, threshold_, n);
  return {sum_all(g, g.add("equal", {p, t}, {}, n + "/eq"), n + "/correct"), count_of(g, p)};
}

double BinaryAccuracy::result() const {
  return totals_.size() == 2 ? ratio(totals_[0], totals_[1]) : 0;
}

std::vector<ir::Value*> SparseTopKAccuracy::batch_stats(ir::Graph& g, ir::Value* y_true,
                                                        ir::Value* y_pred) {
  std::string n = "metric/" + name();
  ir::Value* p = flat_pred(g, y_pred, n);
  int64_t rows = p->shape().dim(0), classes = p->shape().dim(1);
  ir::Value* labels = flat_labels(g, y_true, rows, n);
  ir::Value* onehot =
      g.add("one_hot", {labels},
            {{"depth", classes}, {"on_value", 1.0}, {"off_value", 0.0}, {"dtype", p->dtype()}},
            n + "/onehot");
  ir::Value* target = g.add("sum", {g.add("mul", {p, onehot}, {}, n + "/pick")},
                            {{"axes", Ints{-1}}, {"keepdims", true}}, n + "/target");
  // Count classes scoring strictly higher than the label; in the top k if fewer than k.
  ir::Value* higher = g.add("sum",
                            {g.add("cast", {g.add("greater", {p, target}, {}, n + "/gt")},
                                   {{"dtype", DType::kF32}}, n + "/gtf")},
                            {{"axes", Ints{-1}}, {"keepdims", false}}, n + "/higher");
  ir::Value* in_top =
      g.add("less", {higher, g.scalar(DType::kF32, static_cast<double>(k_))}, {}, n + "/in_top");
  return {sum_all(g, in_top, n + "/correct"), count_of(g, labels)};
}

double SparseTopKAccuracy::result() const {
  return totals_.size() == 2 ? ratio(totals_[0], totals_[1]) : 0;
}

std::vector<ir::Value*> Precision::batch_stats(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) {
  auto [p, t] = binarize(g, y_true, y_pred, threshold_, "metric/precision");
  ir::Value* tp =
      sum_all(g, g.add("mul", {p, t}, {}, "metric/precision/tp_mask"), "metric/precision/tp");
  return {tp, sum_all(g, p, "metric/precision/predicted")};
}

double Precision::result() const {
  return totals_.size() == 2 ? ratio(totals_[0], totals_[1]) : 0;
}

std::vector<ir::Value*> Recall::batch_stats(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) {
  auto [p, t] = binarize(g, y_true, y_pred, threshold_, "metric/recall");
  ir::Value* tp = sum_all(g, g.add("mul", {p, t}, {}, "metric/recall/tp_mask"), "metric/recall/tp");
  return {tp, sum_all(g, t, "metric/recall/positives")};
}

double Recall::result() const {
  return totals_.size() == 2 ? ratio(totals_[0], totals_[1]) : 0;
}

std::vector<ir::Value*> AUC::batch_stats(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) {
  const std::string n = "metric/auc";
  int64_t t = num_thresholds_;
  // Thresholds like Keras: 0 - eps, evenly spaced interior points, 1 + eps.
  Tensor th(DType::kF32, Shape{1, t});
  for (int64_t i = 0; i < t; ++i) {
    double v = t == 1 ? 0.5 : static_cast<double>(i) / static_cast<double>(t - 1);
    if (i == 0) v = -1e-7;
    if (i == t - 1) v = 1 + 1e-7;
    th.set(i, v);
  }
  ir::Value* p = g.add("reshape", {g.add("cast", {y_pred}, {{"dtype", DType::kF32}}, n + "/pf")},
                       {{"shape", Ints{y_pred->shape().num_elements(), 1}}}, n + "/pcol");
  ir::Value* lab = g.add("cast", {y_true}, {{"dtype", DType::kF32}}, n + "/lf");
  lab = g.add("reshape", {lab}, {{"shape", Ints{y_true->shape().num_elements(), 1}}}, n + "/lcol");
  TERN_CHECK_ARG(y_true->shape().num_elements() == y_pred->shape().num_elements(),
                 "metric 'auc': labels of shape ", y_true->shape(),
                 " do not match predictions of shape ", y_pred->shape());
  ir::Value* above = g.add("cast", {g.add("greater", {p, g.constant(th)}, {}, n + "/gt")},
                           {{"dtype", DType::kF32}},
                           n + "/above");  // [N, T]
  ir::Value* tp = g.add("sum", {g.add("mul", {above, lab}, {}, n + "/tpm")},
                        {{"axes", Ints{0}}, {"keepdims", false}}, n + "/tp");
  ir::Value* pred_pos = g.add("sum", {above}, {{"axes", Ints{0}}, {"keepdims", false}}, n + "/pp");
  ir::Value* pos = sum_all(g, lab, n + "/pos");
  return {tp, pred_pos, pos, count_of(g, lab)};
}

void AUC::update(const std::vector<double>& stats) {
  // stats: tp[T], predicted_positive[T], positives, count (flattened by the trainer).
  Metric::update(stats);
}

double AUC::result() const {
  size_t t = static_cast<size_t>(num_thresholds_);
  if (totals_.size() != 2 * t + 2) return 0;
  double pos = totals_[2 * t], total = totals_[2 * t + 1], neg = total - pos;
  if (pos <= 0 || neg <= 0) return 0;
  double auc = 0;
  for (size_t i = 0; i + 1 < t; ++i) {
    double tpr0 = totals_[i] / pos, fpr0 = (totals_[t + i] - totals_[i]) / neg;
    double tpr1 = totals_[i + 1] / pos, fpr1 = (totals_[t + i + 1] - totals_[i + 1]) / neg;
    auc += (fpr0 - fpr1) * (tpr0 + tpr1) / 2;
  }
  return auc;
}

std::shared_ptr<Metric> metric_by_name(const std::string& name, bool sparse_labels, bool binary,
                                       bool from_logits) {
  if (name == "accuracy" || name == "acc") {
    if (sparse_labels) return std::make_shared<SparseCategoricalAccuracy>("accuracy");
    if (binary) return std::make_shared<BinaryAccuracy>(from_logits ? 0.0 : 0.5, "accuracy");
    return std::make_shared<CategoricalAccuracy>("accuracy");
  }
  if (name == "sparse_categorical_accuracy")
    return std::make_shared<SparseCategoricalAccuracy>(name);
  if (name == "categorical_accuracy") return std::make_shared<CategoricalAccuracy>(name);
  if (name == "binary_accuracy")
    return std::make_shared<BinaryAccuracy>(from_logits ? 0.0 : 0.5, name);
  if (name == "top_k_accuracy" || name == "sparse_top_k_categorical_accuracy")
    return std::make_shared<SparseTopKAccuracy>(5);
  if (name.rfind("top_", 0) == 0 && name.size() > 13 &&
      name.substr(name.size() - 9) == "_accuracy") {
    std::string digits = name.substr(4, name.size() - 13);
    int64_t k = 0;
    for (char ch : digits) {
      TERN_CHECK_ARG(ch >= '0' && ch <= '9' && k < 100000, "metric '", name,
                     "': expected top_<k>_accuracy");
      k = k * 10 + (ch - '0');
    }
    TERN_CHECK_ARG(k > 0, "metric '", name, "': k must be positive");
    return std::make_shared<SparseTopKAccuracy>(k);
  }
  if (name == "precision") return std::make_shared<Precision>(from_logits ? 0.0 : 0.5);
  if (name == "recall") return std::make_shared<Recall>(from_logits ? 0.0 : 0.5);
  if (name == "auc") return std::make_shared<AUC>();
  std::vector<std::string> names = {"accuracy",
                                    "sparse_categorical_accuracy",
                                    "categorical_accuracy",
                                    "binary_accuracy",
                                    "top_k_accuracy",
                                    "top_5_accuracy",
                                    "precision",
                                    "recall",
                                    "auc"};
  std::string best = ops::closest_name(name, names);
  throw_error(ErrorCode::kInvalidArgument, "unknown metric '", name, "'",
              best.empty() ? "" : str_cat(" (did you mean '", best, "'?)"));
}

}  // namespace tern::nn
