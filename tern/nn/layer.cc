// Layer bookkeeping: building once, weight lists, default names.
#include "tern/nn/layer.h"

#include <map>
#include <mutex>

namespace tern::nn {

std::string WeightBuilder::add(const std::string& name, const Shape& shape,
                               const runtime::init::Initializer& init, bool trainable,
                               DType dtype) {
  std::string full = layer_name_ + "/" + name;
  if (!store_.has(full)) {
    // Seed per weight: the layer seed mixed with the weight's index, so adding a layer does not
    // change the initial values of the others.
    uint64_t seed = seed_ * 1000003ULL + weights_.size() * 7919ULL + 17;
    store_.create(full, init(shape, dtype, seed));
  }
  weights_.push_back({full, {dtype, shape}, trainable});
  return full;
}

void Layer::ensure_built(runtime::VariableStore& store, std::span<const TensorType> inputs,
                         uint64_t seed) {
  if (built_) return;
  WeightBuilder w(store, name_, seed);
  build(w, inputs);
  weights_ = w.weights();
  built_ = true;
}

std::vector<WeightSpec> Layer::trainable_weights() const {
  std::vector<WeightSpec> out;
  if (!trainable) return out;
  for (const auto& w : weights_) {
    if (w.trainable) out.push_back(w);
  }
  return out;
}

std::vector<WeightSpec> Layer::non_trainable_weights() const {
  std::vector<WeightSpec> out;
  for (const auto& w : weights_) {
    if (!trainable || !w.trainable) out.push_back(w);
  }
  return out;
}

int64_t Layer::count_params() const {
  int64_t n = 0;
  for (const auto& w : weights_) n += w.type.shape.num_elements();
  return n;
}

std::string default_layer_name(const std::string& base) {
  static std::mutex mu;
  static std::map<std::string, int> counts;
  std::lock_guard<std::mutex> lock(mu);
  int n = counts[base]++;
  return n == 0 ? base : str_cat(base, "_", n);
}

ir::Value* single_input(const Layer& layer, std::span<ir::Value* const> inputs) {
  if (inputs.size() != 1) {
    throw_error(ErrorCode::kInvalidArgument, "layer '", layer.name(), "' (", layer.type_name(),
                ") expects 1 input, got ", inputs.size());
  }
  return inputs[0];
}

}  // namespace tern::nn
