// Layer: the unit models are made of. A layer creates its weights once (build), then adds its
// forward computation to any graph it is called on (call), so the same layer serves the training,
// evaluation and prediction graphs, all reading the same variables by name.
//
// Shapes in this module include the batch dimension first; images are NHWC.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tern/ir/graph.h"
#include "tern/runtime/initializers.h"
#include "tern/runtime/variable_store.h"

namespace tern::nn {

struct WeightSpec {
  std::string name;  // full variable name: "<layer>/<weight>"
  TensorType type;
  bool trainable = true;  // false for moving statistics and frozen layers
};

// Where a layer's build() creates its weights.
class WeightBuilder {
 public:
  WeightBuilder(runtime::VariableStore& store, std::string layer_name, uint64_t seed)
      : store_(store), layer_name_(std::move(layer_name)), seed_(seed) {}
  // Creates "<layer>/<name>" initialized by `init` (kept if it exists with the same type, e.g.
  // after loading a checkpoint). Returns the full name.
  std::string add(const std::string& name, const Shape& shape,
                  const runtime::init::Initializer& init, bool trainable = true,
                  DType dtype = DType::kF32);
  const std::vector<WeightSpec>& weights() const { return weights_; }

 private:
  runtime::VariableStore& store_;
  std::string layer_name_;
  uint64_t seed_;
  std::vector<WeightSpec> weights_;
};

// What a layer sees while adding ops to a graph.
struct LayerContext {
  ir::Graph& graph;
  bool training = false;
  // An i64 scalar that differs every step (dropout masks); null in inference graphs.
  ir::Value* rng_offset = nullptr;
  // Variable updates to apply after the step (e.g. batch-norm moving averages): name -> new value.
  std::vector<std::pair<std::string, ir::Value*>>* updates = nullptr;
  // Compute dtype for mixed precision (f32 unless a mixed policy is active).
  DType compute_dtype = DType::kF32;

  // A graph value reading variable `name` (created by a WeightBuilder).
  ir::Value* read(const WeightSpec& w) const { return graph.variable(w.name, w.type); }
};

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // "Dense", "Conv2D", ...
  virtual std::string type_name() const = 0;
  // Creates weights for these input types. Called once, before the first call().
  virtual void build(WeightBuilder& w, std::span<const TensorType> inputs) {
    (void)w;
    (void)inputs;
  }
  // Adds the forward computation; returns the outputs.
  virtual std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) = 0;
  // A short description of the layer's configuration for summary() and error messages.
  virtual std::string describe() const { return ""; }

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  bool built() const { return built_; }
  // Builds once; records the weights.
  void ensure_built(runtime::VariableStore& store, std::span<const TensorType> inputs,
                    uint64_t seed);
  const std::vector<WeightSpec>& weights() const { return weights_; }
  // Weights that get gradients: none if the layer is frozen.
  std::vector<WeightSpec> trainable_weights() const;
  std::vector<WeightSpec> non_trainable_weights() const;
  int64_t count_params() const;

  // Keras' `trainable`: false freezes every weight of the layer.
  bool trainable = true;

 private:
  std::string name_;
  bool built_ = false;
  std::vector<WeightSpec> weights_;
};

using LayerPtr = std::shared_ptr<Layer>;

// Unique default layer names per process ("dense", "dense_1", ...), as Keras does.
std::string default_layer_name(const std::string& base);

// The batch dim of a reshape's target shape: -1 (whatever the batch is), so inference graphs can
// be rebuilt at another batch size (tern/serve/rebatch.h). A batch of 0 stays 0 (-1 cannot be
// inferred from zero elements).
inline int64_t reshape_batch_dim(int64_t batch) {
  return batch > 0 ? -1 : batch;
}

// The single input of a one-input layer; InvalidArgument naming the layer otherwise.
ir::Value* single_input(const Layer& layer, std::span<ir::Value* const> inputs);

}  // namespace tern::nn
