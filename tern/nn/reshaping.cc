// Flatten and Reshape layers.
#include "tern/nn/reshaping.h"

namespace tern::nn {

ReshapeLayer::ReshapeLayer(bool flatten, std::vector<int64_t> target, std::string name)
    : Layer(name.empty() ? default_layer_name(flatten ? "flatten" : "reshape") : std::move(name)),
      flatten_(flatten),
      target_(std::move(target)) {}

std::vector<ir::Value*> ReshapeLayer::call(LayerContext& ctx, std::span<ir::Value* const> inputs) {
  ir::Value* x = single_input(*this, inputs);
  const Shape& s = x->shape();
  TERN_CHECK_ARG(s.rank() >= 1, "layer '", name(), "' needs a batch dimension, got ", s);
  std::vector<int64_t> dims{s.dim(0)};
  if (flatten_) {
    dims.push_back(s.dim(0) == 0 ? 0 : s.num_elements() / s.dim(0));
  } else {
    int64_t known = 1;
    int unknown = -1;
    for (size_t i = 0; i < target_.size(); ++i) {
      if (target_[i] == -1) {
        TERN_CHECK_ARG(unknown < 0, "layer '", name(), "': target shape has more than one -1");
        unknown = static_cast<int>(i);
      } else {
        known *= target_[i];
      }
      dims.push_back(target_[i]);
    }
    int64_t per_sample = s.dim(0) == 0 ? 0 : s.num_elements() / s.dim(0);
    if (unknown >= 0 && known > 0) dims[static_cast<size_t>(unknown) + 1] = per_sample / known;
    Shape want(std::vector<int64_t>(dims.begin() + 1, dims.end()));
    if (want.num_elements() != per_sample) {
      throw_error(ErrorCode::kInvalidArgument, "layer '", name(),
                  "': cannot reshape samples of shape ",
                  Shape(std::vector<int64_t>(s.dims().begin() + 1, s.dims().end())), " to ", want);
    }
  }
  if (Shape(dims) == s) return {x};
  dims[0] = reshape_batch_dim(dims[0]);
  return {ctx.graph.add("reshape", {x}, {{"shape", dims}}, name())};
}

LayerRef Flatten(const std::string& name) {
  return LayerRef(std::make_shared<ReshapeLayer>(true, std::vector<int64_t>{}, name));
}

LayerRef Reshape(std::vector<int64_t> target_shape, const std::string& name) {
  return LayerRef(std::make_shared<ReshapeLayer>(false, std::move(target_shape), name));
}

}  // namespace tern::nn
