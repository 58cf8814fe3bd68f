// Streaming metrics. A metric adds per-batch statistics to the graph (counts, sums); the host sums
// them over batches and computes the result, so a metric over an epoch is exact, not an average of
// batch averages.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tern/ir/graph.h"

namespace tern::nn {

class Metric {
 public:
  virtual ~Metric() = default;
  virtual std::string name() const = 0;
  // Graph values whose per-batch values update() receives, in order.
  virtual std::vector<ir::Value*> batch_stats(ir::Graph& g, ir::Value* y_true,
                                              ir::Value* y_pred) = 0;
  virtual void update(const std::vector<double>& stats);
  virtual double result() const = 0;
  virtual void reset() { totals_.assign(totals_.size(), 0.0); }

 protected:
  std::vector<double> totals_;
};

// Sparse labels (class ids) vs [batch, classes] predictions.
class SparseCategoricalAccuracy : public Metric {
 public:
  explicit SparseCategoricalAccuracy(std::string name = "accuracy") : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::vector<ir::Value*> batch_stats(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) override;
  double result() const override;

 private:
  std::string name_;
};

// One-hot labels vs predictions.
class CategoricalAccuracy : public Metric {
 public:
  explicit CategoricalAccuracy(std::string name = "accuracy") : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::vector<ir::Value*> batch_stats(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) override;
  double result() const override;

 private:
  std::string name_;
};

// Binary labels vs probabilities (threshold 0.5) or logits (threshold 0).
class BinaryAccuracy : public Metric {
 public:
  explicit BinaryAccuracy(double threshold = 0.5, std::string name = "accuracy")
      : threshold_(threshold), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::vector<ir::Value*> batch_stats(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) override;
  double result() const override;

 private:
  double threshold_;
  std::string name_;
};

// Sparse top-k accuracy: the label's score is among the k largest (ties count as in).
class SparseTopKAccuracy : public Metric {
 public:
  explicit SparseTopKAccuracy(int64_t k = 5) : k_(k) {}
  std::string name() const override { return str_cat("top_", k_, "_accuracy"); }
  std::vector<ir::Value*> batch_stats(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) override;
  double result() const override;

 private:
  int64_t k_;
};

// Precision / recall of binary predictions at a threshold.
class Precision : public Metric {
 public:
  explicit Precision(double threshold = 0.5) : threshold_(threshold) {}
  std::string name() const override { return "precision"; }
  std::vector<ir::Value*> batch_stats(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) override;
  double result() const override;

 private:
  double threshold_;
};

class Recall : public Metric {
 public:
  explicit Recall(double threshold = 0.5) : threshold_(threshold) {}
  std::string name() const override { return "recall"; }
  std::vector<ir::Value*> batch_stats(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) override;
  double result() const override;

 private:
  double threshold_;
};

// ROC AUC with `num_thresholds` evenly spaced thresholds in [0, 1] (Keras' default 200),
// trapezoidal rule; predictions are probabilities.
class AUC : public Metric {
 public:
  explicit AUC(int64_t num_thresholds = 200) : num_thresholds_(num_thresholds) {}
  std::string name() const override { return "auc"; }
  std::vector<ir::Value*> batch_stats(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) override;
  void update(const std::vector<double>& stats) override;
  double result() const override;

 private:
  int64_t num_thresholds_;
};

// Resolves a Keras metric name for a loss: "accuracy"/"acc" follow the labels (sparse,
// categorical or binary), "top_k_accuracy" / "top_5_accuracy", "precision", "recall", "auc".
std::shared_ptr<Metric> metric_by_name(const std::string& name, bool sparse_labels, bool binary,
                                       bool from_logits);

}  // namespace tern::nn
