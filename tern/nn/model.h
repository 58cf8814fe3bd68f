// Models: a functional graph of layers (Keras' functional API) and Sequential, a chain of layers.
//
//   auto x = nn::Input({28, 28, 1});
//   auto h = nn::Conv2D(32, 3, {.activation = "relu"})(x);
//   auto y = nn::Dense(10)(nn::Flatten()(h));
//   nn::Model model({x}, {y});
//
// A Model owns the VariableStore that holds its weights. compile / fit / evaluate / predict and
// save_weights / load_weights are declared here for Keras' syntax and implemented by the training
// module (tern/train), which a program that calls them links.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tern/nn/layer.h"

namespace tern::optim {
class Optimizer;
}
namespace tern::data {
class Dataset;
}
namespace tern::train {
class Callback;
struct TrainingState;
struct History;
}  // namespace tern::train

namespace tern::nn {

class Loss;
class Metric;
class Model;

// --- symbolic tensors (functional API) ---

struct SymbolicNode;

// An output of a layer application in a functional model; shapes exclude the batch dimension.
class SymbolicTensor {
 public:
  SymbolicTensor() = default;
  SymbolicTensor(std::shared_ptr<SymbolicNode> node, int index)
      : node_(std::move(node)), index_(index) {}
  const std::shared_ptr<SymbolicNode>& node() const { return node_; }
  int index() const { return index_; }
  bool defined() const { return node_ != nullptr; }

 private:
  std::shared_ptr<SymbolicNode> node_;
  int index_ = 0;
};

struct SymbolicNode {
  LayerPtr layer;                      // null for a model input
  std::vector<SymbolicTensor> inputs;  // the tensors the layer was applied to
  TensorType input_type;               // model inputs: dtype + per-sample shape
  std::string input_name;
};

// A model input of per-sample `shape` (no batch dimension).
SymbolicTensor Input(const Shape& shape, DType dtype = DType::kF32, const std::string& name = "");

// A layer handle that can be applied to symbolic tensors: Dense(10)(x).
class LayerRef {
 public:
  LayerRef(LayerPtr layer) : layer_(std::move(layer)) {}  // NOLINT: implicit by design
  SymbolicTensor operator()(const SymbolicTensor& x) const;
  SymbolicTensor operator()(const std::vector<SymbolicTensor>& xs) const;
  operator LayerPtr() const { return layer_; }  // NOLINT
  Layer* operator->() const { return layer_.get(); }
  const LayerPtr& ptr() const { return layer_; }

 private:
  LayerPtr layer_;
};

// --- training configuration (used by compile / fit; implemented in tern/train) ---

struct FitOptions {
  int epochs = 1;
  int64_t batch_size = 32;  // for fit(x, y); datasets are already batched
  std::shared_ptr<const data::Dataset> validation_data;
  double validation_split = 0;  // last fraction of (x, y) held out, like Keras
  std::vector<std::shared_ptr<train::Callback>> callbacks;
  bool shuffle = true;  // fit(x, y): reshuffle each epoch
  int initial_epoch = 0;
  int64_t steps_per_epoch = -1;  // -1: until the data is exhausted
  int verbose = 1;  // 0 silent, 1 progress bar (one line per epoch when not a terminal), 2 a line
                    // per epoch (Keras' verbose=2)
  int gradient_accumulation_steps = 1;
  uint64_t seed = 42;
  // Limit on the device memory the training step may plan; 0 = none (tern/runtime enforces it).
  int64_t memory_limit_bytes = 0;
};

struct EvaluateResult {
  double loss = 0;
  std::vector<std::pair<std::string, double>> metrics;
  double metric(const std::string& name) const;
};

// --- Model ---

class Model {
 public:
  Model(std::vector<SymbolicTensor> inputs, std::vector<SymbolicTensor> outputs,
        std::string name = "model");
  virtual ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& name() const { return name_; }
  // Adds the forward computation for graph `inputs` (with batch dims); builds layers on first use.
  std::vector<ir::Value*> forward(LayerContext& ctx, std::span<ir::Value* const> inputs);
  // Per-sample input types (no batch dimension).
  std::vector<TensorType> input_types() const;
  // Builds every layer (creates weights) for per-sample input types; a no-op once built.
  void build();
  bool built() const { return built_; }

  // Layers in topological order (each once).
  std::vector<LayerPtr> layers() const;
  LayerPtr get_layer(const std::string& name) const;
  std::vector<WeightSpec> trainable_weights() const;
  std::vector<WeightSpec> non_trainable_weights() const;
  std::vector<WeightSpec> weights() const;
  int64_t count_params() const;
  runtime::VariableStore& variables() { return *store_; }
  const runtime::VariableStore& variables() const { return *store_; }
  // Seed for weight initialization (set before build()).
  void set_seed(uint64_t seed) { seed_ = seed; }

  // Keras-style table: layer (type), output shape, params; totals at the bottom.
  void summary(std::ostream& os) const;
  std::string summary() const;

  // --- training API (tern/train) ---
  void compile(std::shared_ptr<optim::Optimizer> optimizer, std::shared_ptr<Loss> loss,
               std::vector<std::string> metrics = {});
  void compile(std::shared_ptr<optim::Optimizer> optimizer, std::shared_ptr<Loss> loss,
               std::vector<std::shared_ptr<Metric>> metrics);
  train::History fit(std::shared_ptr<const data::Dataset> train_data,
                     const FitOptions& options = {});
  train::History fit(const Tensor& x, const Tensor& y, const FitOptions& options = {});
  EvaluateResult evaluate(std::shared_ptr<const data::Dataset> data, int verbose = 0);
  EvaluateResult evaluate(const Tensor& x, const Tensor& y, int64_t batch_size = 32,
                          int verbose = 0);
  Tensor predict(std::shared_ptr<const data::Dataset> data);
  Tensor predict(const Tensor& x, int64_t batch_size = 32);
  // Set by compile(); null before.
  train::TrainingState* training_state() const { return training_.get(); }

  // --- weights files (tern/train/model_weights.cc, safetensors through tern/io) ---
  // Writes every weight, in layer order, to `path` (atomically; parent folders are created).
  void save_weights(const std::string& path) const;
  // Reads a file save_weights wrote into the built model: by weight name, or by position (the
  // file's weight order) when auto-generated layer names differ. A missing tensor or a dtype /
  // shape mismatch is an InvalidArgument naming the file and the weight.
  void load_weights(const std::string& path);
  // Exports the model as a served model directory (tern/serve/model_dir.h: inference graph,
  // weights, signature `serving_default` with input "inputs" and output "logits"), written
  // atomically; FailedPrecondition if `dir` exists. Defined in tern/serve (a program calling it
  // links tern_serve); tern/serve/export.h adds preprocessing and classifier outputs.
  void save(const std::string& dir);
  // The flag fit() checks between steps (EarlyStopping, TerminateOnNaN set it).
  bool stop_training = false;

 protected:
  // For Sequential: a model whose graph is fixed later.
  explicit Model(std::string name);
  void set_graph(std::vector<SymbolicTensor> inputs, std::vector<SymbolicTensor> outputs);

 private:
  std::string name_;
  std::vector<SymbolicTensor> inputs_;
  std::vector<SymbolicTensor> outputs_;
  std::unique_ptr<runtime::VariableStore> store_;
  std::shared_ptr<train::TrainingState> training_;
  uint64_t seed_ = 42;
  bool built_ = false;
};

// A linear stack of single-input, single-output layers. The input shape comes from
// `input_shape` or from the first data the model sees (build(shape)).
class Sequential : public Model {
 public:
  explicit Sequential(std::vector<LayerPtr> layers, std::optional<Shape> input_shape = std::nullopt,
                      std::string name = "sequential");
  void add(LayerPtr layer);
  // Fixes the per-sample input shape and builds the layer chain.
  void build(const Shape& sample_shape, DType dtype = DType::kF32);
  using Model::build;
  bool has_input_shape() const { return input_shape_.has_value(); }

 private:
  void link();
  std::vector<LayerPtr> stack_;
  std::optional<Shape> input_shape_;
  DType input_dtype_ = DType::kF32;
};

}  // namespace tern::nn
