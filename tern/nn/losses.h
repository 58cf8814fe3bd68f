// Losses (Keras semantics, reduction = mean over the batch). Each adds its computation to a graph
// and returns a scalar f32 value.
//   y_pred: [batch, ...] model output; y_true: labels as the data provides them (integer class ids
//   for the sparse loss, any numeric dtype otherwise; cast inside).
#pragma once

#include <memory>
#include <string>

#include "tern/ir/graph.h"

namespace tern::nn {

class Loss {
 public:
  virtual ~Loss() = default;
  virtual std::string name() const = 0;
  virtual ir::Value* call(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) const = 0;
  // True if labels are integer class ids (selects sparse metrics for "accuracy").
  virtual bool sparse_labels() const { return false; }
  // True if y_pred are logits (accuracy thresholds move from 0.5 to 0).
  virtual bool from_logits() const { return false; }
};

struct SparseCategoricalCrossentropy : Loss {
  bool logits = false;
  explicit SparseCategoricalCrossentropy(bool from_logits = false) : logits(from_logits) {}
  std::string name() const override { return "sparse_categorical_crossentropy"; }
  ir::Value* call(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) const override;
  bool sparse_labels() const override { return true; }
  bool from_logits() const override { return logits; }
};

struct CategoricalCrossentropy : Loss {
  bool logits = false;
  double label_smoothing = 0;
  explicit CategoricalCrossentropy(bool from_logits = false, double smoothing = 0)
      : logits(from_logits), label_smoothing(smoothing) {}
  std::string name() const override { return "categorical_crossentropy"; }
  ir::Value* call(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) const override;
  bool from_logits() const override { return logits; }
};

struct BinaryCrossentropy : Loss {
  bool logits = false;
  double label_smoothing = 0;
  explicit BinaryCrossentropy(bool from_logits = false, double smoothing = 0)
      : logits(from_logits), label_smoothing(smoothing) {}
  std::string name() const override { return "binary_crossentropy"; }
  ir::Value* call(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) const override;
  bool from_logits() const override { return logits; }
};

struct MeanSquaredError : Loss {
  std::string name() const override { return "mean_squared_error"; }
  ir::Value* call(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) const override;
};

struct MeanAbsoluteError : Loss {
  std::string name() const override { return "mean_absolute_error"; }
  ir::Value* call(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) const override;
};

struct Huber : Loss {
  double delta = 1.0;
  explicit Huber(double d = 1.0) : delta(d) {}
  std::string name() const override { return "huber"; }
  ir::Value* call(ir::Graph& g, ir::Value* y_true, ir::Value* y_pred) const override;
};

// By Keras name ("sparse_categorical_crossentropy", "mse", "mae", "huber", ...);
// InvalidArgument naming the closest valid name otherwise.
std::shared_ptr<Loss> loss_by_name(const std::string& name, bool from_logits = false,
                                   double label_smoothing = 0);

}  // namespace tern::nn
