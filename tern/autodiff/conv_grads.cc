// Gradient rules of the conv family. conv2d: dx = conv2d_backprop_input(dy, filter),
// dfilter = conv2d_backprop_filter(x, dy), both with the forward attrs plus the shape to produce.
// Pooling: the dedicated *_grad ops (max_pool2d_argmax's reads its argmax, not x). global_avg_pool:
// dy broadcast over H x W, divided by H * W.
#include "tern/autodiff/autodiff.h"

namespace tern::autodiff {
namespace {

// The forward node's attributes plus ints attribute `name` = `shape`.
ops::Attrs with_shape(const GradContext& c, std::string_view name, const Shape& shape) {
  ops::Attrs attrs = c.attrs();
  attrs.set(name, shape.dims());
  return attrs;
}

}  // namespace

void register_conv_grads(GradRegistry& r) {
  r.add("conv2d", [](GradContext& c) -> std::vector<ir::Value*> {
    ir::Value *x = c.x(0), *filter = c.x(1), *dy = c.dy();
    ir::Value *dx = nullptr, *dfilter = nullptr;
    if (c.needs(0)) {
      dx = c.op("conv2d_backprop_input", {dy, filter}, with_shape(c, "input_shape", x->shape()));
    }
    if (c.needs(1)) {
      dfilter =
          c.op("conv2d_backprop_filter", {x, dy}, with_shape(c, "filter_shape", filter->shape()));
    }
    return {dx, dfilter};
  });
  r.add("max_pool2d", [](GradContext& c) -> std::vector<ir::Value*> {
    return {c.op("max_pool2d_grad", {c.x(0), c.dy()}, c.attrs())};
  });
  // The argmax output (u8) takes no gradient; the values' gradient goes where argmax says.
  r.add("max_pool2d_argmax", [](GradContext& c) -> std::vector<ir::Value*> {
    return {c.op("max_pool2d_grad_argmax", {c.dy(), c.y(1)},
                 with_shape(c, "input_shape", c.x(0)->shape()))};
  });
  r.add("avg_pool2d", [](GradContext& c) -> std::vector<ir::Value*> {
    return {c.op("avg_pool2d_grad", {c.dy()}, with_shape(c, "input_shape", c.x(0)->shape()))};
  });
  r.add("global_avg_pool", [](GradContext& c) -> std::vector<ir::Value*> {
    const Shape& xs = c.x(0)->shape();
    std::vector<int64_t> kept = {xs[0], 1, 1, xs[3]};
    ir::Value* dy = c.dy();
    if (dy->shape() != Shape(kept)) dy = c.op("reshape", {dy}, {{"shape", kept}});
    ir::Value* spread = c.op("broadcast_to", {dy}, {{"shape", xs.dims()}});
    double inv_area = 1.0 / static_cast<double>(xs[1] * xs[2]);
    return {c.op("mul", {spread, c.scalar(inv_area, dy->dtype())})};
  });
}

}  // namespace tern::autodiff
