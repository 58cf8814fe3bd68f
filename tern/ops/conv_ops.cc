// conv op family: conv2d (NHWC x, HWIO filter; strides, SAME/VALID/EXPLICIT padding, dilations,
// groups) with its two backprop ops, max/avg 2-D pooling with their gradient ops, and
// global_avg_pool. Output sizes and paddings come from tern/ops/conv_geometry.h.
#include "tern/ops/conv_geometry.h"
#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

// --- attributes ---

std::vector<AttrSpec> conv2d_attrs() {
  return {{"strides", AttrKind::kInts, std::vector<int64_t>{1, 1}},
          {"padding", AttrKind::kString, std::string("VALID")},
          {"explicit_paddings", AttrKind::kInts, std::vector<int64_t>{}},
          {"dilations", AttrKind::kInts, std::vector<int64_t>{1, 1}},
          {"groups", AttrKind::kInt, int64_t{1}}};
}

std::vector<AttrSpec> pool2d_attrs() {
  return {{"ksize", AttrKind::kInts, std::nullopt},
          {"strides", AttrKind::kInts, std::vector<int64_t>{1, 1}},
          {"padding", AttrKind::kString, std::string("VALID")}};
}

// `base` with a required ints attribute `name` (input_shape / filter_shape) in front.
std::vector<AttrSpec> with_shape_attr(std::string name, std::vector<AttrSpec> base) {
  base.insert(base.begin(), AttrSpec{std::move(name), AttrKind::kInts, std::nullopt});
  return base;
}

// conv2d_backprop_filter's output dtype: "" = the inputs' dtype, "f32" = f32 from 16-bit inputs.
std::vector<AttrSpec> with_dfilter_dtype(std::vector<AttrSpec> base) {
  base.push_back(AttrSpec{"dfilter_dtype", AttrKind::kString, std::string()});
  return base;
}

// A max pooling's attributes on a fused op: pool_ksize, pool_strides, pool_padding
// (fused_pool_attrs reads them back as max_pool2d's).
std::vector<AttrSpec> with_pool_attrs(std::vector<AttrSpec> base) {
  base.push_back(AttrSpec{"pool_ksize", AttrKind::kInts, std::nullopt});
  base.push_back(AttrSpec{"pool_strides", AttrKind::kInts, std::nullopt});
  base.push_back(AttrSpec{"pool_padding", AttrKind::kString, std::string("VALID")});
  return base;
}

// --- inference ---

Conv2dGeometry conv_geometry_or_fail(const InferContext& ctx, const Shape& x, const Shape& filter) {
  Conv2dGeometry g;
  std::string problem = try_conv2d_geometry(x, filter, ctx.attrs, &g);
  if (!problem.empty()) ctx.fail(problem);
  return g;
}

Pool2dGeometry pool_geometry_or_fail(const InferContext& ctx, const Shape& x) {
  Pool2dGeometry g;
  std::string problem = try_pool2d_geometry(x, ctx.attrs, &g);
  if (!problem.empty()) ctx.fail(problem);
  return g;
}

// The shape held by ints attribute `name`, which must be rank 4 with non-negative dims.
Shape shape_attr(const InferContext& ctx, std::string_view name) {
  const std::vector<int64_t>& dims = ctx.attrs.get_ints(name);
  if (dims.size() != 4) ctx.fail(name, " must have 4 dims, got ", dims.size());
  for (int64_t d : dims) {
    if (d < 0) ctx.fail(name, " has a negative dim ", d);
  }
  return Shape(dims);
}

void require_dy_shape(const InferContext& ctx, size_t dy_input, const Shape& expected) {
  const Shape& dy = ctx.input(dy_input).shape;
  if (dy != expected) ctx.fail("dy shape ", dy, " != forward output shape ", expected);
}

std::vector<TensorType> infer_conv2d(const InferContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  Conv2dGeometry g = conv_geometry_or_fail(ctx, ctx.input(0).shape, ctx.input(1).shape);
  return {{ctx.input(0).dtype, g.output_shape()}};
}

// conv2d_backprop_input(dy, filter){input_shape} -> dx [input_shape].
std::vector<TensorType> infer_conv2d_backprop_input(const InferContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  Shape x = shape_attr(ctx, "input_shape");
  Conv2dGeometry g = conv_geometry_or_fail(ctx, x, ctx.input(1).shape);
  require_dy_shape(ctx, 0, g.output_shape());
  return {{ctx.input(0).dtype, x}};
}

// A filter gradient's type: the inputs' dtype, or f32 from 16-bit (or f32) inputs when
// dfilter_dtype = "f32" (mixed precision: the weight gradient accumulates and is stored in f32).
TensorType dfilter_type(const InferContext& ctx, const Shape& filter) {
  DType in = ctx.input(0).dtype;
  const std::string& out = ctx.attrs.get_string("dfilter_dtype");
  if (out.empty()) return {in, filter};
  if (out != "f32" && out != "float32")
    ctx.fail("dfilter_dtype must be \"\" or \"f32\", got \"", out, "\"");
  if (in != DType::kBF16 && in != DType::kF16 && in != DType::kF32) {
    ctx.fail("dfilter_dtype \"f32\" needs bf16, f16 or f32 inputs, got ", dtype_name(in));
  }
  return {DType::kF32, filter};
}

// conv2d_backprop_filter(x, dy){filter_shape, dfilter_dtype} -> dfilter [filter_shape], in the
// inputs' dtype, or f32 from 16-bit inputs when dfilter_dtype = "f32" (mixed precision: the
// weight gradient accumulates and is stored in f32).
std::vector<TensorType> infer_conv2d_backprop_filter(const InferContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  Shape filter = shape_attr(ctx, "filter_shape");
  Conv2dGeometry g = conv_geometry_or_fail(ctx, ctx.input(0).shape, filter);
  require_dy_shape(ctx, 1, g.output_shape());
  return {dfilter_type(ctx, filter)};
}

// The pooling of a pooled gradient op over convolution `g`'s output, with its pooled dy (input
// dy_input) and argmax (input argmax_input) checked against it.
void check_pooled_gradient(const InferContext& ctx, const Conv2dGeometry& g, size_t dy_input,
                           size_t argmax_input) {
  Pool2dGeometry pool;
  std::string problem = try_pool2d_geometry(g.output_shape(), fused_pool_attrs(ctx.attrs), &pool);
  if (!problem.empty()) ctx.fail("pooling of the convolution's output: ", problem);
  if (pool.kh * pool.kw > kMaxPoolArgmaxWindow) {
    ctx.fail("a ", pool.kh, "x", pool.kw, " window has more than ", kMaxPoolArgmaxWindow,
             " positions");
  }
  require_dy_shape(ctx, dy_input, pool.output_shape());
  const TensorType& argmax = ctx.input(argmax_input);
  if (argmax.dtype != DType::kU8 || argmax.shape != pool.output_shape()) {
    ctx.fail("argmax must be ", TensorType{DType::kU8, pool.output_shape()}.to_string(), ", got ",
             argmax.to_string());
  }
}

// conv2d_backprop_filter_pooled(x, dy, argmax){filter_shape, conv attrs, dfilter_dtype, pool
// attrs}: conv2d_backprop_filter of x and max_pool2d_grad_argmax(dy, argmax) over the
// convolution's output. dy and argmax have the pooling's output shape.
std::vector<TensorType> infer_conv2d_backprop_filter_pooled(const InferContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  Shape filter = shape_attr(ctx, "filter_shape");
  Conv2dGeometry g = conv_geometry_or_fail(ctx, ctx.input(0).shape, filter);
  check_pooled_gradient(ctx, g, 1, 2);
  return {dfilter_type(ctx, filter)};
}

// conv2d_backprop_input_pooled(dy, filter, argmax){input_shape, conv attrs, pool attrs}:
// conv2d_backprop_input of max_pool2d_grad_argmax(dy, argmax) over the convolution's output.
std::vector<TensorType> infer_conv2d_backprop_input_pooled(const InferContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  Shape x = shape_attr(ctx, "input_shape");
  Conv2dGeometry g = conv_geometry_or_fail(ctx, x, ctx.input(1).shape);
  check_pooled_gradient(ctx, g, 0, 2);
  return {{ctx.input(0).dtype, x}};
}

// conv2d_backprop_pooled(x, dy, filter, argmax){conv attrs, dfilter_dtype, pool attrs}: both
// conv2d_backprop_input_pooled's dx (x's type) and conv2d_backprop_filter_pooled's dfilter, from
// one node.
std::vector<TensorType> infer_conv2d_backprop_pooled(const InferContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  require_same_dtype(ctx, 0, 2);
  const Shape& filter = ctx.input(2).shape;
  Conv2dGeometry g = conv_geometry_or_fail(ctx, ctx.input(0).shape, filter);
  check_pooled_gradient(ctx, g, 1, 3);
  return {ctx.input(0), dfilter_type(ctx, filter)};
}

std::vector<TensorType> infer_pool2d(const InferContext& ctx) {
  Pool2dGeometry g = pool_geometry_or_fail(ctx, ctx.input(0).shape);
  return {{ctx.input(0).dtype, g.output_shape()}};
}

// max_pool2d_grad(x, dy) -> dx [x].
std::vector<TensorType> infer_max_pool2d_grad(const InferContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  Pool2dGeometry g = pool_geometry_or_fail(ctx, ctx.input(0).shape);
  require_dy_shape(ctx, 1, g.output_shape());
  return {ctx.input(0)};
}

// max_pool2d_argmax(x) -> (y, argmax u8 [y's shape]); windows of at most 256 positions.
std::vector<TensorType> infer_max_pool2d_argmax(const InferContext& ctx) {
  Pool2dGeometry g = pool_geometry_or_fail(ctx, ctx.input(0).shape);
  if (g.kh * g.kw > kMaxPoolArgmaxWindow) {
    ctx.fail("a ", g.kh, "x", g.kw, " window has more than ", kMaxPoolArgmaxWindow,
             " positions (argmax is u8)");
  }
  return {{ctx.input(0).dtype, g.output_shape()}, {DType::kU8, g.output_shape()}};
}

// max_pool2d_grad_argmax(dy, argmax u8){input_shape} -> dx [input_shape].
std::vector<TensorType> infer_max_pool2d_grad_argmax(const InferContext& ctx) {
  Shape x = shape_attr(ctx, "input_shape");
  Pool2dGeometry g = pool_geometry_or_fail(ctx, x);
  require_dy_shape(ctx, 0, g.output_shape());
  if (ctx.input(1).dtype != DType::kU8 || ctx.input(1).shape != g.output_shape()) {
    ctx.fail("argmax must be ", TensorType{DType::kU8, g.output_shape()}.to_string(), ", got ",
             ctx.input(1).to_string());
  }
  if (g.kh * g.kw > kMaxPoolArgmaxWindow) {
    ctx.fail("a ", g.kh, "x", g.kw, " window has more than ", kMaxPoolArgmaxWindow, " positions");
  }
  return {{ctx.input(0).dtype, x}};
}

// avg_pool2d_grad(dy){input_shape} -> dx [input_shape].
std::vector<TensorType> infer_avg_pool2d_grad(const InferContext& ctx) {
  Shape x = shape_attr(ctx, "input_shape");
  Pool2dGeometry g = pool_geometry_or_fail(ctx, x);
  require_dy_shape(ctx, 0, g.output_shape());
  return {{ctx.input(0).dtype, x}};
}

std::vector<TensorType> infer_global_avg_pool(const InferContext& ctx) {
  require_rank(ctx, 0, 4);
  const Shape& x = ctx.input(0).shape;
  if (x[1] == 0 || x[2] == 0) ctx.fail("spatial dims must be non-empty");
  Shape out = ctx.attrs.get_bool("keepdims") ? Shape{x[0], 1, 1, x[3]} : Shape{x[0], x[3]};
  return {{ctx.input(0).dtype, out}};
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  r.add({.name = "conv2d",
         .family = "conv",
         .doc = "2-D convolution: x NHWC, filter HWIO [kh, kw, c_in/groups, c_out] -> y NHWC.",
         .inputs = {"x", "filter"},
         .attrs = conv2d_attrs(),
         .dtypes = kFloatDTypes,
         .infer = infer_conv2d});
  r.add({.name = "conv2d_backprop_input",
         .family = "conv",
         .doc = "Gradient of conv2d with respect to its input x (shape input_shape).",
         .inputs = {"dy", "filter"},
         .attrs = with_shape_attr("input_shape", conv2d_attrs()),
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_conv2d_backprop_input});
  r.add({.name = "conv2d_backprop_filter",
         .family = "conv",
         .doc = "Gradient of conv2d with respect to its filter (shape filter_shape).",
         .inputs = {"x", "dy"},
         .attrs = with_dfilter_dtype(with_shape_attr("filter_shape", conv2d_attrs())),
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_conv2d_backprop_filter});
  r.add({.name = "conv2d_backprop_filter_pooled",
         .family = "conv",
         .doc = "conv2d_backprop_filter(x, max_pool2d_grad_argmax(dy, argmax)) without the "
                "convolution-sized gradient: dy and argmax are a max pooling's, over the "
                "convolution's output (pool_ksize, pool_strides, pool_padding).",
         .inputs = {"x", "dy", "argmax"},
         .attrs =
             with_pool_attrs(with_dfilter_dtype(with_shape_attr("filter_shape", conv2d_attrs()))),
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_conv2d_backprop_filter_pooled});
  r.add({.name = "conv2d_backprop_input_pooled",
         .family = "conv",
         .doc = "conv2d_backprop_input(max_pool2d_grad_argmax(dy, argmax), filter) without the "
                "convolution-sized gradient: dy and argmax are a max pooling's, over the "
                "convolution's output (pool_ksize, pool_strides, pool_padding).",
         .inputs = {"dy", "filter", "argmax"},
         .attrs = with_pool_attrs(with_shape_attr("input_shape", conv2d_attrs())),
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_conv2d_backprop_input_pooled});
  r.add({.name = "conv2d_backprop_pooled",
         .family = "conv",
         .doc = "conv2d_backprop_input_pooled(dy, filter, argmax) and "
                "conv2d_backprop_filter_pooled(x, dy, argmax) from one node (dx, dfilter): a "
                "kernel reads each expanded tile of the convolution's gradient once for both.",
         .inputs = {"x", "dy", "filter", "argmax"},
         .attrs = with_pool_attrs(with_dfilter_dtype(conv2d_attrs())),
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_conv2d_backprop_pooled});
  r.add({.name = "max_pool2d",
         .family = "conv",
         .doc = "2-D max pooling over NHWC windows; SAME padding never selects a pad element.",
         .inputs = {"x"},
         .attrs = pool2d_attrs(),
         .dtypes = kFloatDTypes,
         .infer = infer_pool2d});
  r.add({.name = "avg_pool2d",
         .family = "conv",
         .doc = "2-D average pooling over NHWC windows; SAME averages over the in-bounds elements.",
         .inputs = {"x"},
         .attrs = pool2d_attrs(),
         .dtypes = kFloatDTypes,
         .infer = infer_pool2d});
  r.add({.name = "max_pool2d_grad",
         .family = "conv",
         .doc = "Gradient of max_pool2d: each dy goes to the first maximum of its window.",
         .inputs = {"x", "dy"},
         .attrs = pool2d_attrs(),
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_max_pool2d_grad});
  r.add({.name = "max_pool2d_argmax",
         .family = "conv",
         .doc = "max_pool2d, and where each maximum came from: argmax (u8) is its position in the "
                "window, row-major over ksize (pad positions counted, never chosen). Its "
                "gradient routes dy by argmax, without reading x again.",
         .inputs = {"x"},
         .attrs = pool2d_attrs(),
         .dtypes = kFloatDTypes,
         .infer = infer_max_pool2d_argmax});
  r.add({.name = "max_pool2d_grad_argmax",
         .family = "conv",
         .doc = "Gradient of max_pool2d from max_pool2d_argmax's argmax: each dy is added to the "
                "element of its window that argmax names (dx of shape input_shape).",
         .inputs = {"dy", "argmax"},
         .attrs = with_shape_attr("input_shape", pool2d_attrs()),
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_max_pool2d_grad_argmax});
  r.add(
      {.name = "avg_pool2d_grad",
       .family = "conv",
       .doc = "Gradient of avg_pool2d: each dy spread evenly over its window's in-bounds elements.",
       .inputs = {"dy"},
       .attrs = with_shape_attr("input_shape", pool2d_attrs()),
       .dtypes = kFloatDTypes,
       .traits = kTraitNotDifferentiable,
       .infer = infer_avg_pool2d_grad});
  r.add({.name = "global_avg_pool",
         .family = "conv",
         .doc = "Mean over H and W of NHWC x: [N, C], or [N, 1, 1, C] with keepdims.",
         .inputs = {"x"},
         .attrs = {{"keepdims", AttrKind::kBool, false}},
         .dtypes = kFloatDTypes,
         .infer = infer_global_avg_pool});
}

}  // namespace tern::ops
