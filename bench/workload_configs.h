// The suite's workloads as TrainConfigs, and the synthetic batches of the step workloads; shared
// by bench/workloads_bench.cc (one process) and bench/dist_workloads_bench.cc (data-parallel).
//   w1  MLP 784-1024-10 relu, Adam 1e-3, batch 128, Fashion-MNIST
//   w2  MLP 784-512-256-10 with BatchNorm and Dropout(0.2), same setting
//   w3  the CNN of examples/fashion_mnist.toml (constant lr), same setting
//   w4  ResNet-18 (CIFAR stem), 32x32x3 synthetic batches of 32, SGD momentum 0.9
//   w6  Transformer encoder classifier (4 layers, d 256, 4 heads, ff 1024, seq 128, vocab 8000,
//       batch 32, Adam 1e-3) on synthetic tokens
//   w9  ResNet-50 (ImageNet stem: 7x7/2 conv + 3x3/2 max pool), 64x64x3 synthetic batches of 32,
//       SGD momentum 0.9
#pragma once

#include <random>
#include <string>

#include "tern/config/config.h"
#include "tern/data/tensor_slice_dataset.h"

namespace tern::bench {

inline config::TrainConfig workload_config(const std::string& w, int64_t seed,
                                           const std::string& precision,
                                           const std::string& data_dir) {
  config::TrainConfig c;
  c.path = "workload " + w;
  c.data.dir = data_dir;
  c.training.fit.batch_size = 128;
  c.training.fit.seed = static_cast<uint64_t>(seed);
  c.training.precision = precision;
  c.optimizer.name = "adam";
  c.optimizer.learning_rate = 1e-3;
  c.schedule.name = "constant";
  c.loss.metrics = {"accuracy"};
  if (w == "w1") {
    c.model.name = "mlp";
    c.model.args = {{"units", std::vector<int64_t>{1024}}};
  } else if (w == "w2") {
    c.model.name = "mlp";
    c.model.args = {
        {"units", std::vector<int64_t>{512, 256}}, {"batch_norm", true}, {"dropout", 0.2}};
  } else if (w == "w3") {
    c.model.name = "cnn";
    c.model.args = {{"filters", std::vector<int64_t>{32, 64}},
                    {"dense_units", int64_t{128}},
                    {"dropout", 0.25}};
  } else if (w == "w4") {
    c.model.name = "resnet18";
    c.training.fit.batch_size = 32;
    c.optimizer.name = "sgd";
    c.optimizer.learning_rate = 0.01;
    c.optimizer.sgd.momentum = 0.9;
  } else if (w == "w9") {
    c.model.name = "resnet50";
    c.model.args = {{"stem", std::string("imagenet")}};
    c.training.fit.batch_size = 32;
    c.optimizer.name = "sgd";
    c.optimizer.learning_rate = 0.01;
    c.optimizer.sgd.momentum = 0.9;
  } else if (w == "w6") {
    c.model.name = "transformer_classifier";
    c.training.fit.batch_size = 32;
    c.model.args = {{"vocab_size", int64_t{8000}}, {"num_layers", int64_t{4}},
                    {"d_model", int64_t{256}},     {"num_heads", int64_t{4}},
                    {"ff_dim", int64_t{1024}},     {"dropout", 0.1}};
  } else {
    throw_error(ErrorCode::kInvalidArgument, "unknown workload '", w, "' (w1 w2 w3 w4 w6 w9)");
  }
  return c;
}

// The per-sample image side of the synthetic image workloads (w4: 32, w9: 64).
inline int64_t synthetic_image_size(const std::string& w) {
  return w == "w9" ? 64 : 32;
}

// Four synthetic batches of `batch` (repeated): images in [0, 1) (token ids for w6), and labels.
inline data::DatasetPtr synthetic_batches(const std::string& w, int64_t batch, uint64_t seed,
                                          Shape* sample) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  int64_t n = 4 * batch;
  Tensor x, y(DType::kI64, Shape({n}));
  if (w == "w6") {
    *sample = Shape({128});
    x = Tensor(DType::kI64, Shape({n, 128}));
    for (int64_t i = 0; i < x.num_elements(); ++i)
      x.data<int64_t>()[i] = static_cast<int64_t>(rng() % 8000);
  } else {
    const int64_t hw = synthetic_image_size(w);
    *sample = Shape({hw, hw, 3});
    x = Tensor(DType::kF32, Shape({n, hw, hw, 3}));
    for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = unit(rng);
  }
  for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
  return data::from_tensor_slices({x, y})->batch(batch)->repeat();
}

}  // namespace tern::bench
