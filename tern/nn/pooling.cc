// Pooling layers.
#include "tern/nn/pooling.h"

#include "tern/nn/conv2d.h"

namespace tern::nn {

Pool2DLayer::Pool2DLayer(bool max, std::vector<int64_t> pool_size, Pool2DOptions options)
    : Layer(options.name.empty() ? default_layer_name(max ? "max_pooling2d" : "average_pooling2d")
                                 : options.name),
      max_(max),
      pool_size_(std::move(pool_size)),
      options_(std::move(options)) {
  TERN_CHECK_ARG(pool_size_.size() == 2 && pool_size_[0] > 0 && pool_size_[1] > 0, "layer '",
                 name(), "': pool_size must be two positive ints");
  if (options_.strides.empty()) options_.strides = pool_size_;
  TERN_CHECK_ARG(options_.strides.size() == 2, "layer '", name(),
                 "': strides must have two entries");
  conv_padding(options_.padding, name());
}

std::vector<ir::Value*> Pool2DLayer::call(LayerContext& ctx, std::span<ir::Value* const> inputs) {
  ir::Value* x = single_input(*this, inputs);
  ops::Attrs attrs{{"ksize", pool_size_},
                   {"strides", options_.strides},
                   {"padding", conv_padding(options_.padding, name())}};
  return {ctx.graph.add(max_ ? "max_pool2d" : "avg_pool2d", {x}, attrs, name())};
}

GlobalAveragePooling2DLayer::GlobalAveragePooling2DLayer(std::string name)
    : Layer(name.empty() ? default_layer_name("global_average_pooling2d") : std::move(name)) {}

std::vector<ir::Value*> GlobalAveragePooling2DLayer::call(LayerContext& ctx,
                                                          std::span<ir::Value* const> inputs) {
  ir::Value* x = single_input(*this, inputs);
  return {ctx.graph.add("global_avg_pool", {x}, {}, name())};
}

LayerRef MaxPooling2D(int64_t pool_size, Pool2DOptions options) {
  return LayerRef(std::make_shared<Pool2DLayer>(true, std::vector<int64_t>{pool_size, pool_size},
                                                std::move(options)));
}

LayerRef AveragePooling2D(int64_t pool_size, Pool2DOptions options) {
  return LayerRef(std::make_shared<Pool2DLayer>(false, std::vector<int64_t>{pool_size, pool_size},
                                                std::move(options)));
}

LayerRef GlobalAveragePooling2D(const std::string& name) {
  return LayerRef(std::make_shared<GlobalAveragePooling2DLayer>(name));
}

}  // namespace tern::nn
