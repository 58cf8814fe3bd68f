// Concatenate: joins two or more inputs along `axis` (skip connections, feature merging).
//   inputs [batch, ..., d_i, ...] x n (n >= 2; equal shapes except on `axis`, same dtype)
//   output [batch, ..., sum(d_i), ...]
// `axis` counts the batch dimension (Keras): -1 is the last axis; the batch axis itself (0) is
// rejected. Mismatched shapes are InvalidArgument naming the layer and both shapes.
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

class ConcatenateLayer : public Layer {
 public:
  ConcatenateLayer(int64_t axis, std::string name);
  std::string type_name() const override { return "Concatenate"; }
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;
  std::string describe() const override { return str_cat("axis=", axis_); }

 private:
  int64_t axis_;
};

LayerRef Concatenate(int64_t axis = -1, const std::string& name = "");

}  // namespace tern::nn
