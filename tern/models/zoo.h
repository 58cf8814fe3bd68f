// The model zoo: named architectures with typed arguments (declared like op attributes, so
// configs get checked names, kinds and defaults). Each architecture lives in its own file and
// registers an entry in zoo.cc.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tern/nn/model.h"
#include "tern/ops/op_def.h"

namespace tern::models {

struct ZooEntry {
  std::string name;
  std::string doc;
  std::vector<ops::AttrSpec> args;
  // input_shape excludes the batch dimension.
  std::function<std::shared_ptr<nn::Model>(const Shape& input_shape, int64_t num_classes,
                                           const ops::Attrs& args)>
      build;
};

const std::vector<ZooEntry>& zoo();
// NotFound naming the closest architecture.
const ZooEntry& zoo_entry(const std::string& name);
// Fills defaults, rejects unknown args (naming the closest valid one) and wrong kinds, builds.
std::shared_ptr<nn::Model> build_model(const std::string& name, const Shape& input_shape,
                                       int64_t num_classes, ops::Attrs args = {});

// --- the architectures (also callable directly from C++) ---

// Flatten -> Dense(units[i], activation) [-> BatchNorm] [-> Dropout] ... -> Dense(num_classes)
// logits.
std::shared_ptr<nn::Model> mlp(const Shape& input_shape, int64_t num_classes,
                               const std::vector<int64_t>& units,
                               const std::string& activation = "relu", double dropout = 0.0,
                               bool batch_norm = false);
// [Conv2D(f, 3, relu) -> MaxPool(2)] per filter count -> Flatten -> Dropout -> Dense(dense, relu)
// -> Dense logits.
std::shared_ptr<nn::Model> cnn(const Shape& input_shape, int64_t num_classes,
                               const std::vector<int64_t>& filters, int64_t dense_units = 128,
                               double dropout = 0.0);

}  // namespace tern::models
