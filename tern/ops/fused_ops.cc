// Fused ops, created by the fusion passes (and accepted in text IR):
//   fused_elementwise(x...)  {opcodes, operands, immediates, column_sum, sum_dtype}: a chain of
//       elementwise ops in one loop; the program format is in tern/ops/fused_program.h. Inputs
//       broadcast to the output y. With column_sum, a second output: y (as stored, in y's dtype)
//       summed over every axis but the last, [y's last dim], in sum_dtype ("" = y's dtype, "f32"
//       from a 16-bit y: sum(y) {axes = leading, out_dtype}), e.g. a bias gradient read in the
//       pass that writes y (created by column-sum fusion).
//   fused_matmul(a, b[, bias][, residual])  {matmul attrs, activation, has_bias, has_residual}
//   fused_conv2d(x, filter[, bias][, residual])  {conv2d attrs, activation, has_bias, has_residual,
//       pool, pool_ksize, pool_strides, pool_padding}
//       y = act(op(a, b) + bias + residual), evaluated left to right; bias is [N] (the last dim
//       of the output), residual has the output's type; activation is one of
//       "none", "relu", "gelu_tanh", "gelu_erf", "sigmoid", "tanh". fused_conv2d with
//       pool = "max" (no residual) returns max_pool2d(that, ksize = pool_ksize, strides =
//       pool_strides, padding = pool_padding) instead: the convolution's output is never stored
//       whole (an inference graph's conv -> pool, where nothing else reads the convolution).
//       pool = "max_argmax" (activation "none") returns max_pool2d_argmax's pair instead: the
//       pooled values and argmax (u8), for training (pass fuse_epilogue, one-channel layers).
#include "tern/ops/conv_geometry.h"
#include "tern/ops/families.h"
#include "tern/ops/fused_program.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

std::vector<TensorType> infer_fused_elementwise(const InferContext& ctx) {
  FusedProgram program;
  std::string problem =
      decode_fused_program(ctx.attrs, static_cast<int>(ctx.inputs.size()), &program);
  if (!problem.empty()) ctx.fail("bad program: ", problem);
  std::vector<TensorType> out = infer_broadcast(ctx, ctx.input(0).dtype);
  const std::string& sum_dtype = ctx.attrs.get_string("sum_dtype");
  if (!ctx.attrs.get_bool("column_sum")) {
    if (!sum_dtype.empty()) ctx.fail("sum_dtype \"", sum_dtype, "\" needs column_sum = true");
    return out;
  }
  const TensorType& y = out[0];
  if (y.shape.rank() == 0) ctx.fail("column_sum needs an output of rank >= 1, got ", y.to_string());
  DType sum = y.dtype;
  if (sum_dtype == "f32") {
    if (y.dtype != DType::kBF16 && y.dtype != DType::kF16 && y.dtype != DType::kF32) {
      ctx.fail("sum_dtype \"f32\" needs an f32, bf16 or f16 output, got ", dtype_name(y.dtype));
    }
    sum = DType::kF32;
  } else if (!sum_dtype.empty()) {
    ctx.fail("sum_dtype must be \"\" (the output's dtype) or \"f32\", got \"", sum_dtype, "\"");
  }
  out.push_back({sum, Shape{y.shape.dim(y.shape.rank() - 1)}});
  return out;
}

// Checks the epilogue inputs (bias, residual) against the base op's output type `out`.
void check_epilogue(const InferContext& ctx, const TensorType& out) {
  bool has_bias = ctx.attrs.get_bool("has_bias"), has_residual = ctx.attrs.get_bool("has_residual");
  size_t want = 2 + (has_bias ? 1 : 0) + (has_residual ? 1 : 0);
  if (ctx.inputs.size() != want) {
    ctx.fail("has_bias=", has_bias, " has_residual=", has_residual, " needs ", want,
             " inputs, got ", ctx.inputs.size());
  }
  const std::string& act = ctx.attrs.get_string("activation");
  if (!parse_activation(act)) {
    ctx.fail("unknown activation \"", act, "\" (expected one of ", activation_names(), ")");
  }
  size_t i = 2;
  if (has_bias) {
    const TensorType& bias = ctx.input(i++);
    int64_t n = out.shape.rank() > 0 ? out.shape.dim(out.shape.rank() - 1) : 1;
    if (bias.dtype != out.dtype || bias.shape != Shape{n}) {
      ctx.fail("bias must be ", TensorType{out.dtype, Shape{n}}.to_string(), ", got ",
               bias.to_string());
    }
  }
  if (has_residual && ctx.input(i) != out) {
    ctx.fail("residual must be ", out.to_string(), ", got ", ctx.input(i).to_string());
  }
}

std::vector<AttrSpec> epilogue_attrs() {
  return {{"activation", AttrKind::kString, std::string("none")},
          {"has_bias", AttrKind::kBool, false},
          {"has_residual", AttrKind::kBool, false}};
}

std::vector<AttrSpec> with_epilogue(std::vector<AttrSpec> base) {
  for (auto& a : epilogue_attrs()) base.push_back(std::move(a));
  return base;
}

// The output may be written over the residual (input 2, or 3 after a bias): the kernels add the
// product to what the output holds (oneDNN's sum post-op), copying the residual there first when
// it is elsewhere, so a residual that dies at the node costs no copy. (A bias is read while the
// output is written: never paired, even where a [1, N] output has its element count.)
std::vector<std::pair<int, int>> residual_in_place(const Attrs& attrs) {
  if (!attrs.get_bool("has_residual")) return {};
  return {{0, attrs.get_bool("has_bias") ? 3 : 2}};
}

}  // namespace

Attrs fused_base_attrs(const Attrs& fused) {
  Attrs out;
  for (const auto& [name, value] : fused.items()) {
    if (name != "activation" && name != "has_bias" && name != "has_residual" &&
        !name.starts_with("pool")) {
      out.set(name, value);
    }
  }
  return out;
}

void register_fused_ops(OpRegistry& r) {
  r.add({.name = "fused_elementwise",
         .family = "fused",
         .doc = "A chain of elementwise ops evaluated in one loop (created by elementwise fusion); "
                "with column_sum, also the output summed over all axes but the last.",
         .inputs = {"x"},
         .variadic = true,
         .min_inputs = 1,
         .attrs = {{"opcodes", AttrKind::kInts, std::nullopt},
                   {"operands", AttrKind::kInts, std::nullopt},
                   {"immediates", AttrKind::kFloats, std::nullopt},
                   {"column_sum", AttrKind::kBool, false},
                   {"sum_dtype", AttrKind::kString, std::string()}},
         .dtypes = kFloatDTypes,
         .traits = kTraitElementwise,
         // Kernels read an element's inputs before writing it; the planner only pairs inputs
         // with the output's dtype and element count (not broadcast).
         .inplace = {{0, 0}, {0, 1}, {0, 2}, {0, 3}},
         .infer = infer_fused_elementwise});

  const OpDef& matmul = r.get("matmul");
  InferFn matmul_infer = matmul.infer;
  r.add({.name = "fused_matmul",
         .family = "fused",
         .doc = "act(matmul(a, b) + bias + residual) (created by epilogue fusion).",
         .inputs = {"a", "b", "epilogue"},
         .variadic = true,
         .min_inputs = 2,
         .attrs = with_epilogue(matmul.attrs),
         .dtypes = kFloatDTypes,
         .inplace_for = residual_in_place,
         .infer = [matmul_infer](const InferContext& ctx) {
           std::vector<TensorType> out = matmul_infer(ctx);
           check_epilogue(ctx, out[0]);
           return out;
         }});

  r.add({.name = "fused_conv2d",
         .family = "fused",
         .doc = "act(conv2d(x, filter) + bias + residual) (created by epilogue fusion).",
         .inputs = {"x", "filter", "epilogue"},
         .variadic = true,
         .min_inputs = 2,
         .attrs = with_epilogue({{"strides", AttrKind::kInts, std::vector<int64_t>{1, 1}},
                                 {"padding", AttrKind::kString, std::string("VALID")},
                                 {"explicit_paddings", AttrKind::kInts, std::vector<int64_t>{}},
                                 {"dilations", AttrKind::kInts, std::vector<int64_t>{1, 1}},
                                 {"groups", AttrKind::kInt, int64_t{1}},
                                 {"pool", AttrKind::kString, std::string("none")},
                                 {"pool_ksize", AttrKind::kInts, std::vector<int64_t>{}},
                                 {"pool_strides", AttrKind::kInts, std::vector<int64_t>{1, 1}},
                                 {"pool_padding", AttrKind::kString, std::string("VALID")}}),
         .dtypes = kFloatDTypes,
         .inplace_for = residual_in_place,
         .infer = [](const InferContext& ctx) -> std::vector<TensorType> {
           require_same_dtype(ctx, 0, 1);
           Conv2dGeometry geo;
           std::string problem =
               try_conv2d_geometry(ctx.input(0).shape, ctx.input(1).shape, ctx.attrs, &geo);
           if (!problem.empty()) ctx.fail(problem);
           std::vector<TensorType> out = {{ctx.input(0).dtype, geo.output_shape()}};
           check_epilogue(ctx, out[0]);
           const std::string& pool = ctx.attrs.get_string("pool");
           if (pool == "none") return out;
           if (pool != "max" && pool != "max_argmax") {
             ctx.fail("pool must be \"none\", \"max\" or \"max_argmax\", got \"", pool, "\"");
           }
           if (ctx.attrs.get_bool("has_residual"))
             ctx.fail("pool = \"", pool, "\" takes no residual");
           Pool2dGeometry pg;
           problem = try_pool2d_geometry(out[0].shape, fused_pool_attrs(ctx.attrs), &pg);
           if (!problem.empty()) ctx.fail("pool: ", problem);
           out[0].shape = pg.output_shape();
           if (pool == "max_argmax") {
             if (ctx.attrs.get_string("activation") != "none") {
               ctx.fail("pool = \"max_argmax\" takes activation \"none\", got \"",
                        ctx.attrs.get_string("activation"), "\"");
             }
             if (pg.kh * pg.kw > kMaxPoolArgmaxWindow) {
               ctx.fail("pool: a ", pg.kh, "x", pg.kw, " window has more than ",
                        kMaxPoolArgmaxWindow, " positions (argmax is u8)");
             }
             out.push_back({DType::kU8, pg.output_shape()});
           }
           return out;
         }});
}

}  // namespace tern::ops
