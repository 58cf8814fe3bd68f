// Helpers for the checkpoint and observability tests: a small deterministic classification
// problem and a model whose layer names (hence weight names, initial values and dropout masks)
// are the same every time it is built.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "tern/base/philox.h"
#include "tern/data/dataset.h"
#include "tern/data/tensor_slice_dataset.h"
#include "tern/nn/dense.h"
#include "tern/nn/dropout.h"
#include "tern/nn/losses.h"
#include "tern/nn/model.h"
#include "tern/optim/adam.h"
#include "tern/train/training_state.h"

namespace tern::testing_observe {

// Four Gaussian blobs in 8-D, labels 0..3.
inline void make_blobs(int64_t n, uint64_t seed, Tensor* x, Tensor* y) {
  *x = Tensor(DType::kF32, {n, 8});
  *y = Tensor(DType::kI64, {n});
  PhiloxStream rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = static_cast<int64_t>(rng.next_below(4));
    y->set(i, static_cast<double>(c));
    for (int64_t j = 0; j < 8; ++j)
      x->set(i * 8 + j, ((j % 4 == c) ? 2.0 : 0.0) + 0.5 * (rng.next_double() - 0.5));
  }
}

inline std::unique_ptr<nn::Sequential> make_model(bool deterministic = true) {
  auto m = std::make_unique<nn::Sequential>(
      std::vector<nn::LayerPtr>{
          nn::Dense(16, nn::DenseOptions{.activation = "relu", .name = "hidden"}),
          nn::Dropout(0.2, 7, "drop"), nn::Dense(4, nn::DenseOptions{.name = "logits"})},
      Shape{8});
  m->set_seed(3);
  m->build();
  m->compile(std::make_shared<optim::Adam>(1e-2),
             std::make_shared<nn::SparseCategoricalCrossentropy>(true),
             std::vector<std::string>{"accuracy"});
  m->training_state()->compile_options.deterministic = deterministic;
  return m;
}

// Shuffled each epoch, batched (with a partial last batch) and prefetched: exercises the
// iterator state of every stage on resume.
inline data::DatasetPtr make_pipeline(const Tensor& x, const Tensor& y) {
  return data::from_tensor_slices({x, y})->shuffle(64, 11, true)->batch(24)->prefetch(2);
}

inline std::string fresh_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "/tern_observe_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline std::vector<Tensor> weights_of(nn::Model& m) {
  std::vector<Tensor> out;
  for (const auto& w : m.weights()) out.push_back(m.variables().get(w.name).clone());
  return out;
}

inline bool bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].type() != b[i].type() ||
        std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].nbytes()) != 0)
      return false;
  }
  return true;
}

}  // namespace tern::testing_observe
