// Loss graphs.
#include "tern/nn/losses.h"

#include <vector>

#include "tern/ops/registry.h"

namespace tern::nn {
namespace {

constexpr double kEpsilon = 1e-7;  // Keras' backend epsilon for clipping probabilities

ir::Value* mean_all(ir::Graph& g, ir::Value* x, const std::string& name) {
  return g.add("mean", {x}, {{"axes", std::vector<int64_t>{}}, {"keepdims", false}}, name);
}

ir::Value* as_dtype(ir::Graph& g, ir::Value* x, DType d, const std::string& name) {
  return x->dtype() == d ? x : g.add("cast", {x}, {{"dtype", d}}, name);
}

// y_true reshaped to y_pred's shape when they differ only by trailing size-1 dims ([N] vs [N, 1]).
ir::Value* match_shape(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred,
                       const std::string& loss) {
  if (y_true->shape() == y_pred->shape()) return y_true;
  if (y_true->shape().num_elements() == y_pred->shape().num_elements()) {
    return g.add("reshape", {y_true}, {{"shape", y_pred->shape().dims()}},
                 loss + "/labels_reshape");
  }
  throw_error(ErrorCode::kInvalidArgument, "loss '", loss, "': labels of shape ", y_true->shape(),
              " do not match predictions of shape ", y_pred->shape());
}

ir::Value* clip_probs(ir::Graph& g, ir::Value* p, const std::string& name) {
  ir::Value* lo = g.add("maximum", {p, g.scalar(p->dtype(), kEpsilon)}, {}, name + "/clip_lo");
  return g.add("minimum", {lo, g.scalar(p->dtype(), 1 - kEpsilon)}, {}, name + "/clip_hi");
}

}  // namespace

ir::Value* SparseCategoricalCrossentropy::call(ir::Graph& g, ir::Value* y_true,
                                               ir::Value* y_pred) const {
  const std::string n = "loss/scce";
  const Shape& p = y_pred->shape();
  TERN_CHECK_ARG(p.rank() >= 2, "loss '", name(),
                 "': predictions need shape [batch, classes], got ", p);
  int64_t classes = p.dim(p.rank() - 1);
  int64_t rows = p.num_elements() / std::max<int64_t>(classes, 1);
  if (y_true->shape().num_elements() != rows) {
    throw_error(ErrorCode::kInvalidArgument, "loss '", name(), "': labels of shape ",
                y_true->shape(), " do not match predictions of shape ", p,
                " (expected one class id per row)");
  }
  ir::Value* labels = as_dtype(g, y_true, DType::kI64, n + "/labels_i64");
  if (labels->shape() != Shape{rows}) {
    labels =
        g.add("reshape", {labels}, {{"shape", std::vector<int64_t>{rows}}}, n + "/labels_flat");
  }
  ir::Value* scores = y_pred;
  if (p.rank() != 2)
    scores =
        g.add("reshape", {y_pred}, {{"shape", std::vector<int64_t>{rows, classes}}}, n + "/flat");
  if (!this->logits) {
    // Probabilities: log of clipped probabilities act as logits (softmax(log p) = p).
    scores = g.add("log", {clip_probs(g, scores, n)}, {}, n + "/log");
  }
  ir::Node* xent = g.add_node("sparse_softmax_cross_entropy", {scores, labels}, {}, n + "/xent");
  return mean_all(g, xent->output(0), n);
}

ir::Value* CategoricalCrossentropy::call(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) const {
  const std::string n = "loss/cce";
  ir::Value* labels =
      as_dtype(g, match_shape(g, y_true, y_pred, name()), y_pred->dtype(), n + "/labels_cast");
  if (label_smoothing > 0) {
    double classes = static_cast<double>(y_pred->shape().dim(y_pred->shape().rank() - 1));
    labels = g.add("add",
                   {g.add("mul", {labels, g.scalar(labels->dtype(), 1 - label_smoothing)}, {},
                          n + "/ls_scale"),
                    g.scalar(labels->dtype(), label_smoothing / classes)},
                   {}, n + "/ls_shift");
  }
  if (logits) {
    ir::Node* xent = g.add_node("softmax_cross_entropy", {y_pred, labels}, {}, n + "/xent");
    return mean_all(g, xent->output(0), n);
  }
  // Keras normalizes probabilities along the last axis, clips, then -sum(y * log p).
  ir::Value* total = g.add(
      "sum", {y_pred}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", true}}, n + "/norm_sum");
  ir::Value* p = g.add("div", {y_pred, total}, {}, n + "/normalize");
  ir::Value* logp = g.add("log", {clip_probs(g, p, n)}, {}, n + "/log");
  ir::Value* per = g.add("sum", {g.add("mul", {labels, logp}, {}, n + "/ylogp")},
                         {{"axes", std::vector<int64_t>{-1}}, {"keepdims", false}}, n + "/per_row");
  return g.add("neg", {mean_all(g, per, n + "/mean")}, {}, n);
}

ir::Value* BinaryCrossentropy::call(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) const {
  const std::string n = "loss/bce";
  ir::Value* labels =
      as_dtype(g, match_shape(g, y_true, y_pred, name()), y_pred->dtype(), n + "/labels_cast");
  if (label_smoothing > 0) {
    labels = g.add("add",
                   {g.add("mul", {labels, g.scalar(labels->dtype(), 1 - label_smoothing)}, {},
                          n + "/ls_scale"),
                    g.scalar(labels->dtype(), 0.5 * label_smoothing)},
                   {}, n + "/ls_shift");
  }
  if (logits)
    return mean_all(g, g.add("sigmoid_cross_entropy", {y_pred, labels}, {}, n + "/xent"), n);
  ir::Value* p = clip_probs(g, y_pred, n);
  ir::Value* one = g.scalar(p->dtype(), 1.0);
  ir::Value* a = g.add("mul", {labels, g.add("log", {p}, {}, n + "/logp")}, {}, n + "/pos");
  ir::Value* b =
      g.add("mul",
            {g.add("sub", {one, labels}, {}, n + "/neg_labels"),
             g.add("log", {g.add("sub", {one, p}, {}, n + "/one_minus_p")}, {}, n + "/log1mp")},
            {}, n + "/neg");
  return g.add("neg", {mean_all(g, g.add("add", {a, b}, {}, n + "/sum"), n + "/mean")}, {}, n);
}

ir::Value* MeanSquaredError::call(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) const {
  ir::Value* t =
      as_dtype(g, match_shape(g, y_true, y_pred, name()), y_pred->dtype(), "loss/mse/cast");
  return mean_all(
      g, g.add("square", {g.add("sub", {y_pred, t}, {}, "loss/mse/diff")}, {}, "loss/mse/sq"),
      "loss/mse");
}

ir::Value* MeanAbsoluteError::call(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) const {
  ir::Value* t =
      as_dtype(g, match_shape(g, y_true, y_pred, name()), y_pred->dtype(), "loss/mae/cast");
  return mean_all(
      g, g.add("abs", {g.add("sub", {y_pred, t}, {}, "loss/mae/diff")}, {}, "loss/mae/abs"),
      "loss/mae");
}

ir::Value* Huber::call(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) const {
  const std::string n = "loss/huber";
  ir::Value* t = as_dtype(g, match_shape(g, y_true, y_pred, name()), y_pred->dtype(), n + "/cast");
  DType d = y_pred->dtype();
  ir::Value* err = g.add("abs", {g.add("sub", {y_pred, t}, {}, n + "/diff")}, {}, n + "/abs");
  // 0.5 * min(err, delta)^2 + delta * (err - min(err, delta))
  ir::Value* quad = g.add("minimum", {err, g.scalar(d, delta)}, {}, n + "/quad");
  ir::Value* lin = g.add("sub", {err, quad}, {}, n + "/lin");
  ir::Value* v = g.add(
      "add",
      {g.add("mul", {g.add("square", {quad}, {}, n + "/q2"), g.scalar(d, 0.5)}, {}, n + "/half"),
       g.add("mul", {lin, g.scalar(d, delta)}, {}, n + "/dlin")},
      {}, n + "/per");
  return mean_all(g, v, n);
}

std::shared_ptr<Loss> loss_by_name(const std::string& name, bool from_logits,
                                   double label_smoothing) {
  if (name == "sparse_categorical_crossentropy")
    return std::make_shared<SparseCategoricalCrossentropy>(from_logits);
  if (name == "categorical_crossentropy")
    return std::make_shared<CategoricalCrossentropy>(from_logits, label_smoothing);
  if (name == "binary_crossentropy")
    return std::make_shared<BinaryCrossentropy>(from_logits, label_smoothing);
  if (name == "mean_squared_error" || name == "mse") return std::make_shared<MeanSquaredError>();
  if (name == "mean_absolute_error" || name == "mae") return std::make_shared<MeanAbsoluteError>();
  if (name == "huber") return std::make_shared<Huber>();
  std::vector<std::string> names = {"sparse_categorical_crossentropy",
                                    "categorical_crossentropy",
                                    "binary_crossentropy",
                                    "mean_squared_error",
                                    "mse",
                                    "mean_absolute_error",
                                    "mae",
                                    "huber"};
  std::string best = ops::closest_name(name, names);
  throw_error(ErrorCode::kInvalidArgument, "unknown loss '", name, "'",
              best.empty() ? "" : str_cat(" (did you mean '", best, "'?)"));
}

}  // namespace tern::nn
