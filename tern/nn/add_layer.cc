// Add layer.
#include "tern/nn/add_layer.h"

namespace tern::nn {

AddLayer::AddLayer(std::string name)
    : Layer(name.empty() ? default_layer_name("add") : std::move(name)) {}

std::vector<ir::Value*> AddLayer::call(LayerContext& ctx, std::span<ir::Value* const> inputs) {
  if (inputs.size() < 2) {
    throw_error(ErrorCode::kInvalidArgument, "Add layer '", name(),
                "' needs at least 2 inputs, got ", inputs.size());
  }
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i]->type() != inputs[0]->type()) {
      throw_error(ErrorCode::kInvalidArgument, "Add layer '", name(),
                  "': inputs must have the same shape and dtype, got ",
                  inputs[0]->type().to_string(), " (input 0) and ", inputs[i]->type().to_string(),
                  " (input ", i, ")");
    }
  }
  ir::Value* sum = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) {
    sum = ctx.graph.add("add", {sum, inputs[i]}, {},
                        inputs.size() == 2 ? name() : str_cat(name(), "/", i));
  }
  return {sum};
}

LayerRef Add(const std::string& name) {
  return LayerRef(std::make_shared<AddLayer>(name));
}

}  // namespace tern::nn
