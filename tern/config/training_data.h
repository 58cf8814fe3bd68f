// The datasets a config describes: in-memory tensors read from IDX files for data.dataset, or the
// input pipeline data.source and [[data.transforms]] describe (a data::PipelineSpec). All come out
// batched; label and input checks name the config file. In data-parallel training each worker's
// training split is its shard (data/sharding.h), batched by its share of the global batch.
#pragma once

#include <cstdint>
#include <string>

#include "tern/config/config.h"
#include "tern/data/dataset.h"
#include "tern/data/sharding.h"

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
// at least 256. For a worker of several: rows i % num_workers == index of x and y, shuffled with
// the worker's seed, batched by training.batch_size / num_workers (InvalidArgument naming
// training.batch_size when that does not divide).
data::DatasetPtr training_pipeline(const TrainConfig& cfg, const Tensor& x, const Tensor& y,
                                   data::WorkerShard shard = {});
data::DatasetPtr eval_pipeline(const TrainConfig& cfg, const Tensor& x, const Tensor& y);
// The worker's share of training.batch_size; InvalidArgument "CFG: training.batch_size 100 is not
// divisible by 3 workers ...".
int64_t local_train_batch(const TrainConfig& cfg, data::WorkerShard shard);

struct TrainingData {
  data::DatasetPtr train;       // null unless asked for
  data::DatasetPtr validation;  // per-epoch validation, or null
  data::DatasetPtr test;
  Shape sample_shape;          // per-sample model input shape
  int64_t train_samples = -1;  // this worker's; -1: not known without reading the data
  // Batches this worker yields per epoch (capped by training.steps_per_epoch); -1: unknown.
  // Counted when unknown for several workers (the training loop checks that they agree).
  int64_t steps_per_epoch = -1;
  std::string shard_description;  // e.g. "worker 1/2 reads 3 of 6 files"
};
// The test split always; the training split (and validation) when `with_train`. The training
// split is `shard`'s part (sharding.h: files or elements, per-worker seeds, the global batch
// divided); validation and test are whole on every worker. The default shard is one worker.
TrainingData make_training_data(const TrainConfig& cfg, bool with_train,
                                data::WorkerShard shard = {});

// The global batch of one training step: the last batch transform that applies in training (a
// pipeline's own [[data.transforms]] op = "batch", which wins over training.batch_size, or the one
// added from training.batch_size), or training.batch_size for in-memory data. `key` names where it
// comes from ("training.batch_size", "data.transforms[3]"). Each of N workers takes size / N rows;
// with training.gradient_accumulation_steps = k an update sees k of these batches.
struct TrainBatch {
  int64_t size = 0;
  std::string key;
};
TrainBatch train_batch(const TrainConfig& cfg);

// The first `limit` rows (all if negative) of a batched dataset, stacked: (x, y, ...).
data::Element first_rows(const data::DatasetPtr& batched, int64_t limit);

}  // namespace tern::config
