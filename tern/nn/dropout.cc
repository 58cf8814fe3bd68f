// Dropout layer.
#include "tern/nn/dropout.h"

#include <functional>

namespace tern::nn {

DropoutLayer::DropoutLayer(double rate, int64_t seed, std::string name)
    : Layer(name.empty() ? default_layer_name("dropout") : std::move(name)),
      rate_(rate),
      seed_(seed) {
  TERN_CHECK_ARG(rate >= 0 && rate < 1, "Dropout layer '", this->name(),
                 "': rate must be in [0, 1), got ", rate);
  if (seed_ < 0) seed_ = static_cast<int64_t>(std::hash<std::string>()(this->name()) & 0x7fffffff);
}

std::vector<ir::Value*> DropoutLayer::call(LayerContext& ctx, std::span<ir::Value* const> inputs) {
  ir::Value* x = single_input(*this, inputs);
  if (!ctx.training || rate_ == 0) return {x};
  TERN_CHECK_ARG(ctx.rng_offset != nullptr, "Dropout layer '", name(),
                 "': training graph has no rng offset");
  return {
      ctx.graph.add("dropout", {x, ctx.rng_offset}, {{"rate", rate_}, {"seed", seed_}}, name())};
}

LayerRef Dropout(double rate, int64_t seed, const std::string& name) {
  return LayerRef(std::make_shared<DropoutLayer>(rate, seed, name));
}

}  // namespace tern::nn
