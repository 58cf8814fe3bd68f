// The datasets a config describes: in-memory tensors read from IDX files for data.dataset, or the
// input pipeline data.source and [[data.transforms]] describe (a data::PipelineSpec). All come out
// batched; label and input checks name the config file.
#pragma once

#include <cstdint>

#include "tern/config/config.h"
#include "tern/data/dataset.h"

namespace tern::config {

// data.dataset's files: images as f32 in [0, 1], NHWC ([N, H, W, 1] for grayscale IDX), labels as
// i64 checked against data.num_classes. A missing Fashion-MNIST file names the Debian package.
struct ClassificationData {
  Tensor train_x, train_y, test_x, test_y;
  Shape sample_shape;  // per-sample input shape
};
ClassificationData load_data(const TrainConfig& cfg);

// Over in-memory tensors: shuffled (data.shuffle_buffer, training.seed), batched
// (training.batch_size), prefetched (data.prefetch); the evaluation form unshuffled, in batches of
// at least 256.
data::DatasetPtr training_pipeline(const TrainConfig& cfg, const Tensor& x, const Tensor& y);
data::DatasetPtr eval_pipeline(const TrainConfig& cfg, const Tensor& x, const Tensor& y);

struct TrainingData {
  data::DatasetPtr train;       // null unless asked for
  data::DatasetPtr validation;  // per-epoch validation, or null
  data::DatasetPtr test;
  Shape sample_shape;          // per-sample model input shape
  int64_t train_samples = -1;  // -1: not known without reading the data
  // Batches per epoch (capped by training.steps_per_epoch); -1: unknown.
  int64_t steps_per_epoch = -1;
};
// The test split always; the training split (and validation) when `with_train`.
TrainingData make_training_data(const TrainConfig& cfg, bool with_train);

// The first `limit` rows (all if negative) of a batched dataset, stacked: (x, y, ...).
data::Element first_rows(const data::DatasetPtr& batched, int64_t limit);

}  // namespace tern::config
