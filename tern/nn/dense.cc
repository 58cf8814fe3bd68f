// Dense layer.
#include "tern/nn/dense.h"

#include "tern/nn/activations.h"

namespace tern::nn {

DenseLayer::DenseLayer(int64_t units, DenseOptions options)
    : Layer(options.name.empty() ? default_layer_name("dense") : options.name),
      units_(units),
      options_(std::move(options)) {
  TERN_CHECK_ARG(units > 0, "Dense layer '", name(), "': units must be positive, got ", units);
  check_activation_name(options_.activation);
}

void DenseLayer::build(WeightBuilder& w, std::span<const TensorType> inputs) {
  const Shape& s = inputs[0].shape;
  TERN_CHECK_ARG(s.rank() >= 2, "Dense layer '", name(),
                 "' needs input of rank >= 2 (batch, features), got ", s);
  int64_t in = s.dim(s.rank() - 1);
  w.add("kernel", Shape{in, units_}, runtime::init::by_name(options_.kernel_initializer));
  if (options_.use_bias)
    w.add("bias", Shape{units_}, runtime::init::by_name(options_.bias_initializer));
  kernel_ = w.weights()[0];
  if (options_.use_bias) bias_ = w.weights()[1];
}

std::vector<ir::Value*> DenseLayer::call(LayerContext& ctx, std::span<ir::Value* const> inputs) {
  ir::Value* x = single_input(*this, inputs);
  ir::Graph& g = ctx.graph;
  const Shape& s = x->shape();
  int64_t in = kernel_.type.shape.dim(0);
  if (s.dim(s.rank() - 1) != in) {
    throw_error(ErrorCode::kInvalidArgument, "Dense layer '", name(), "' was built for ", in,
                " input features, got input of shape ", s);
  }
  ir::Value* flat = x;
  if (s.rank() > 2)
    flat = g.add("reshape", {x}, {{"shape", std::vector<int64_t>{-1, in}}}, name() + "/flatten");
  ir::Value* y = g.add("matmul", {flat, ctx.read(kernel_)}, {}, name() + "/matmul");
  if (options_.use_bias) y = g.add("add", {y, ctx.read(bias_)}, {}, name() + "/bias_add");
  if (s.rank() > 2) {
    std::vector<int64_t> dims = s.dims();
    dims.back() = units_;
    dims[0] = reshape_batch_dim(dims[0]);
    y = g.add("reshape", {y}, {{"shape", dims}}, name() + "/unflatten");
  }
  return {apply_activation(g, y, options_.activation, name())};
}

std::string DenseLayer::describe() const {
  return str_cat("units=", units_,
                 options_.activation.empty() ? "" : ", activation=" + options_.activation);
}

LayerRef Dense(int64_t units, DenseOptions options) {
  return LayerRef(std::make_shared<DenseLayer>(units, std::move(options)));
}

LayerRef Dense(int64_t units, const std::string& activation) {
  DenseOptions o;
  o.activation = activation;
  return Dense(units, o);
}

}  // namespace tern::nn
