// Normalization (Keras preprocessing layer): standardizes each feature of the last axis with a
// mean and variance learned from data by adapt(), kept as non-trainable weights.
//   input/output [batch, ..., d]
//   mean [d] (zeros until adapted), variance [d] (ones until adapted); not trainable
//   y = (x - mean) / max(sqrt(variance), 1e-7)   (Keras' epsilon guard)
//
// adapt() reads every sample once, batch by batch, and merges per-batch statistics exactly (in
// f64, Chan et al.'s pairwise update), so the result does not depend on the batching: the mean and
// the biased variance over all samples and all axes but the last, as Keras computes them.
//
//   auto norm = nn::Normalization();
//   norm->adapt(x_train);                  // or norm->adapt(dataset) with tern_train linked
//   auto y = nn::Dense(10)(norm(nn::Input({8})));
//
// Layering: tern_nn does not link tern_data, so adapt(DatasetPtr) is declared here (as
// Model::fit is) and defined in tern/train/normalization_adapt.cc; programs that call it link
// tern_train. The streaming core, adapt(BatchSource), needs no dataset at all.
//
// adapt() before the layer is built sets the weights' initial values; after it is built (the
// weights live in a model's VariableStore) call adapt(data, model.variables()).
#pragma once

#include <functional>
#include <optional>

#include "tern/nn/model.h"

namespace tern::nn {

struct NormalizationOptions {
  // Known statistics instead of adapt() (both or neither; one entry per feature).
  std::vector<double> mean = {};
  std::vector<double> variance = {};
  std::string name = "";
};

class NormalizationLayer : public Layer {
 public:
  // Returns the next batch [n, ..., d], or nullopt when the data is exhausted.
  using BatchSource = std::function<std::optional<Tensor>()>;

  explicit NormalizationLayer(NormalizationOptions options);
  std::string type_name() const override { return "Normalization"; }
  void build(WeightBuilder& w, std::span<const TensorType> inputs) override;
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;
  std::string describe() const override;

  // Computes mean and variance over all of `data` ([n, ..., d], any numeric dtype).
  void adapt(const Tensor& data);
  // Streams batches from `next` until it returns nullopt.
  void adapt(const BatchSource& next);
  // A batched dataset of feature tensors (single-component elements); at most `steps` batches
  // when steps >= 0. Defined in tern_train.
  void adapt(std::shared_ptr<const data::Dataset> data, int64_t steps = -1);
  // The same, writing the new statistics into the weights of an already built layer.
  void adapt(const Tensor& data, runtime::VariableStore& store);
  void adapt(const BatchSource& next, runtime::VariableStore& store);

  bool adapted() const { return !mean_.empty(); }
  // The adapted (or given) statistics; empty before.
  const std::vector<double>& mean() const { return mean_; }
  const std::vector<double>& variance() const { return variance_; }

 private:
  void write_weights(runtime::VariableStore& store) const;

  NormalizationOptions options_;
  std::vector<double> mean_, variance_;
  WeightSpec mean_w_, variance_w_;
};

// A handle that is both a LayerRef (apply it to symbolic tensors, put it in a Sequential) and
// gives access to adapt(): norm->adapt(x).
class NormalizationRef : public LayerRef {
 public:
  explicit NormalizationRef(std::shared_ptr<NormalizationLayer> layer)
      : LayerRef(layer), layer_(std::move(layer)) {}
  NormalizationLayer* operator->() const { return layer_.get(); }
  const std::shared_ptr<NormalizationLayer>& layer() const { return layer_; }

 private:
  std::shared_ptr<NormalizationLayer> layer_;
};

NormalizationRef Normalization(NormalizationOptions options = {});

}  // namespace tern::nn
