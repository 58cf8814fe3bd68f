// Concatenate layer.
#include "tern/nn/concatenate.h"

namespace tern::nn {

ConcatenateLayer::ConcatenateLayer(int64_t axis, std::string name)
    : Layer(name.empty() ? default_layer_name("concatenate") : std::move(name)), axis_(axis) {}

std::vector<ir::Value*> ConcatenateLayer::call(LayerContext& ctx,
                                               std::span<ir::Value* const> inputs) {
  if (inputs.size() < 2) {
    throw_error(ErrorCode::kInvalidArgument, "Concatenate layer '", name(),
                "' needs at least 2 inputs, got ", inputs.size());
  }
  const TensorType& first = inputs[0]->type();
  int64_t rank = first.shape.rank();
  int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
  if (axis < 1 || axis >= rank) {
    throw_error(ErrorCode::kInvalidArgument, "Concatenate layer '", name(), "': axis ", axis_,
                " is out of range for inputs of shape ", first.shape,
                " (the batch axis 0 cannot be concatenated)");
  }
  for (size_t i = 1; i < inputs.size(); ++i) {
    const TensorType& t = inputs[i]->type();
    bool ok = t.dtype == first.dtype && t.shape.rank() == rank;
    for (int64_t d = 0; ok && d < rank; ++d) {
      ok = d == axis || t.shape.dim(static_cast<int>(d)) == first.shape.dim(static_cast<int>(d));
    }
    if (!ok) {
      throw_error(ErrorCode::kInvalidArgument, "Concatenate layer '", name(),
                  "': inputs must match except on axis ", axis, ", got ", first.to_string(),
                  " (input 0) and ", t.to_string(), " (input ", i, ")");
    }
  }
  std::vector<ir::Value*> xs(inputs.begin(), inputs.end());
  return {ctx.graph.add("concat", xs, {{"axis", axis}}, name())};
}

LayerRef Concatenate(int64_t axis, const std::string& name) {
  return LayerRef(std::make_shared<ConcatenateLayer>(axis, name));
}

}  // namespace tern::nn
