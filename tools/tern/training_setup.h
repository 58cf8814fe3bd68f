// Turning a TrainConfig into the objects training needs: data, model, optimizer, callbacks.
// Shared by `tern train`, `tern eval`, `tern predict` and `tern summary`.
#pragma once

#include <memory>
#include <string>

#include "tern/data/dataset.h"
#include "tern/nn/model.h"
#include "tern/optim/optimizer.h"
#include "tern/train/callbacks.h"
#include "tools/tern/config.h"

namespace tern::tools {

// Images as f32 in [0, 1], NHWC ([N, H, W, 1] for grayscale IDX), labels as i64.
struct ClassificationData {
  Tensor train_x, train_y, test_x, test_y;
  Shape sample_shape;  // per-sample input shape
};

ClassificationData load_data(const TrainConfig& c);
// A batched, shuffled, prefetched training pipeline over in-memory tensors.
data::DatasetPtr training_pipeline(const TrainConfig& c, const Tensor& x, const Tensor& y);
data::DatasetPtr eval_pipeline(const TrainConfig& c, const Tensor& x, const Tensor& y);

// The datasets a command reads, from data.dataset (in-memory tensors, the functions above) or
// data.source (an input pipeline, training_data.cc). All are batched.
struct TrainingData {
  data::DatasetPtr train;       // null unless asked for
  data::DatasetPtr validation;  // per-epoch validation, or null
  data::DatasetPtr test;
  Shape sample_shape;          // per-sample model input shape
  int64_t train_samples = -1;  // -1: not known without reading the data
  int64_t steps_per_epoch =
      -1;  // batches per epoch (capped by training.steps_per_epoch); -1: unknown
};
TrainingData make_training_data(const TrainConfig& c, bool with_train);
// The first `limit` rows (all if negative) of a batched dataset, stacked: (x, y, ...).
data::Element first_rows(const data::DatasetPtr& batched, int64_t limit);

std::shared_ptr<nn::Model> make_model(const TrainConfig& c, const Shape& sample_shape);
std::shared_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c, int64_t steps_per_epoch);
std::vector<std::shared_ptr<train::Callback>> make_callbacks(const TrainConfig& c);
// Compiles the model with the config's optimizer, loss and metrics.
void compile_model(nn::Model& model, const TrainConfig& c, int64_t steps_per_epoch);

// SHA-256 over the model's weights in layer order (dtype, shape and bytes of each).
std::string weights_sha256(const nn::Model& model);
// Saves / loads the model's weights as <dir>/weights.safetensors.
std::string save_weights(const nn::Model& model, const std::string& dir);
void load_weights(nn::Model& model, const std::string& path);

}  // namespace tern::tools
