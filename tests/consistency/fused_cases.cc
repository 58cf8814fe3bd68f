// Consistency cases: fused ops (fused_elementwise programs, fused_matmul, fused_conv2d epilogues).
#include <gtest/gtest.h>

#include "tern/autodiff/autodiff.h"
#include "tern/ops/fused_program.h"
#include "tern/runtime/eager.h"
#include "tests/consistency/op_case.h"
#include "tests/support/random_tensor.h"

namespace tern::testing {
namespace {

using ops::FusedOpcode;

// Program attributes from (opcode, a, b, imm) rows.
struct Ins {
  FusedOpcode op;
  int a = -1;
  int b = -1;
  double imm = 0;
};

ops::Attrs program(int num_inputs, std::vector<Ins> rows) {
  ops::FusedProgram p;
  p.num_inputs = num_inputs;
  for (const Ins& r : rows) p.code.push_back({r.op, r.a, r.b, r.imm});
  ops::Attrs attrs;
  p.to_attrs(attrs);
  return attrs;
}

ops::Attrs with_column_sum(ops::Attrs attrs, std::string sum_dtype = "") {
  attrs.set("column_sum", true);
  attrs.set("sum_dtype", std::move(sum_dtype));
  return attrs;
}

ops::Attrs epilogue(std::string act, bool bias, bool residual, ops::Attrs base = {}) {
  base.set("activation", std::move(act));
  base.set("has_bias", bias);
  base.set("has_residual", residual);
  return base;
}

// fused_conv2d's pool attributes on top of `base`.
ops::Attrs pool_attrs(std::vector<int64_t> ksize, std::vector<int64_t> strides, std::string padding,
                      ops::Attrs base = {}) {
  base.set("pool", std::string("max"));
  base.set("pool_ksize", std::move(ksize));
  base.set("pool_strides", std::move(strides));
  base.set("pool_padding", std::move(padding));
  return base;
}

// pool = "max_argmax" (training's first layer): a 2x2 / 2 pooling of conv + bias, and its argmax.
ops::Attrs argmax_pool_attrs() {
  ops::Attrs a = pool_attrs({2, 2}, {2, 2}, "VALID", epilogue("none", true, false));
  a.set("pool", std::string("max_argmax"));
  return a;
}

}  // namespace

TERN_OP_CASES(fused) {
  using F = FusedOpcode;
  return {
      // relu(x0 + x1) with x1 broadcast along rows (a bias add).
      {"fused_elementwise",
       {In({3, 4}), In({4})},
       program(2, {{F::kAdd, 0, 1}, {F::kRelu, 2}}),
       true,
       {},
       1e-5,
       "bias-relu"},
      // tanh(x0 * 0.5) * x1 - x0 with an immediate.
      {"fused_elementwise",
       {In({2, 3, 4}), In({2, 3, 4})},
       program(2, {{F::kImm, -1, -1, 0.5},
                   {F::kMul, 0, 2},
                   {F::kTanh, 3},
                   {F::kMul, 4, 1},
                   {F::kSub, 5, 0}}),
       true,
       {},
       1e-5,
       "imm-chain"},
      // Every unary opcode on a positive input (log, sqrt, rsqrt need it), summed.
      {"fused_elementwise",
       {In({5, 3}, 0.5, 2.0)},
       program(1, {{F::kNeg, 0},      {F::kAbs, 1},      {F::kExp, 0},      {F::kAdd, 2, 3},
                   {F::kLog, 0},      {F::kAdd, 4, 5},   {F::kLog1p, 0},    {F::kAdd, 6, 7},
                   {F::kSqrt, 0},     {F::kAdd, 8, 9},   {F::kRsqrt, 0},    {F::kAdd, 10, 11},
                   {F::kSquare, 0},   {F::kAdd, 12, 13}, {F::kTanh, 0},     {F::kAdd, 14, 15},
                   {F::kSigmoid, 0},  {F::kAdd, 16, 17}, {F::kSoftplus, 0}, {F::kAdd, 18, 19},
                   {F::kSin, 0},      {F::kAdd, 20, 21}, {F::kCos, 0},      {F::kAdd, 22, 23},
                   {F::kGeluTanh, 0}, {F::kAdd, 24, 25}, {F::kGeluErf, 0},  {F::kAdd, 26, 27}}),
       true,
       {},
       1e-5,
       "unary-all"},
      // relu and sign on mixed-sign input (away from 0 is up to the random draw; sign has no
      // slope).
      {"fused_elementwise",
       {In({4, 4}, -2, 2)},
       program(1, {{F::kRelu, 0}, {F::kSign, 0}, {F::kMul, 1, 2}}),
       true,
       {},
       1e-5,
       "relu-sign"},
      // Every binary opcode.
      {"fused_elementwise",
       {In({3, 4}, 0.5, 2.0), In({3, 4}, 0.5, 2.0), In({4}, -1, 1)},
       program(3, {{F::kAdd, 0, 1},
                   {F::kSub, 3, 2},
                   {F::kMul, 4, 0},
                   {F::kDiv, 5, 1},
                   {F::kPow, 0, 1},
                   {F::kAdd, 6, 7},
                   {F::kMaximum, 8, 2},
                   {F::kMinimum, 9, 0}}),
       true,
       {},
       1e-5,
       "binary-all"},
      // Rounding to bf16 values (a step function: no gradient check), ties and NaN included by
      // the bf16 rounding tests of the fused table.
      {"fused_elementwise",
       {In({6, 7}, -3, 3)},
       program(1, {{F::kRoundBF16, 0}}),
       false,
       {},
       1e-5,
       "round-bf16"},
      // The gradient helpers (themselves first-order only: no gradient check).
      {"fused_elementwise",
       {In({3, 4}), In({3, 4}, 0.1, 0.9), In({4}, -1, 1)},
       program(3, {{F::kReluGrad, 0, 2},
                   {F::kSigmoidGrad, 3, 1},
                   {F::kTanhGrad, 4, 1},
                   {F::kGeluTanhGrad, 5, 2},
                   {F::kGeluErfGrad, 6, 2}}),
       false,
       {},
       1e-5,
       "grad-helpers"},
      // Large enough to split over threads and chunks; a column broadcast and a scalar input.
      {"fused_elementwise",
       {In({257, 130}), In({257, 1}), In({})},
       program(3, {{F::kMul, 0, 1},
                   {F::kSigmoid, 3},
                   {F::kSub, 4, 2},
                   {F::kImm, -1, -1, 1.5},
                   {F::kMaximum, 5, 6},
                   {F::kGeluTanh, 0},
                   {F::kAdd, 7, 8}}),
       false,
       {},
       1e-5,
       "large-column-scalar"},
      // column_sum: the output summed over its leading axes too (a bias gradient). Small, with
      // the gradient checked (the sum's dy spreads over the rows); large enough for several
      // tasks of rows, a chunk wrapping past rows' ends (130 columns) and a broadcast input.
      {"fused_elementwise",
       {In({3, 5}), In({5})},
       with_column_sum(program(2, {{F::kAdd, 0, 1}, {F::kTanh, 2}})),
       true,
       {},
       1e-5,
       "column-sum"},
      {"fused_elementwise",
       {In({3, 100, 130}), In({3, 100, 130}, -3, 3)},
       with_column_sum(program(2, {{F::kGeluErfGrad, 0, 1}})),
       false,
       {},
       1e-5,
       "column-sum-gelu-grad-large"},
      {"fused_elementwise",
       {In({150, 40}), In({40})},
       with_column_sum(program(2, {{F::kReluGrad, 0, 1}}), "f32"),
       false,
       {DType::kBF16, DType::kF16, DType::kF32},
       1e-5,
       "column-sum-f32"},
      // The same input twice.
      {"fused_elementwise",
       {In({6}), In({6})},
       program(2, {{F::kMul, 0, 1}, {F::kAdd, 2, 0}}),
       true,
       {},
       1e-5,
       "two-inputs"},

      {"fused_matmul",
       {In({4096, 8}), In({8, 24}), In({24})},
       epilogue("none", true, false),
       false,
       {DType::kBF16, DType::kF32},
       1e-5,
       "rows-bias"},
      {"fused_matmul",
       {In({3, 4}), In({4, 5})},
       epilogue("none", false, false),
       true,
       {},
       1e-5,
       "plain"},
      {"fused_matmul",
       {In({3, 4}), In({4, 5}), In({5})},
       epilogue("relu", true, false),
       true,
       {},
       1e-5,
       "bias-relu"},
      {"fused_matmul",
       {In({4, 3}), In({5, 4}), In({5}), In({3, 5})},
       epilogue("gelu_tanh", true, true, {{"transpose_a", true}, {"transpose_b", true}}),
       true,
       {},
       1e-5,
       "bias-residual-gelu-tanh-transposed"},
      {"fused_matmul",
       {In({2, 3, 4}), In({4, 5}), In({2, 3, 5})},
       epilogue("gelu_erf", false, true),
       true,
       {},
       1e-5,
       "batched-residual-gelu-erf"},
      {"fused_matmul",
       {In({3, 4}), In({4, 5}), In({5})},
       epilogue("sigmoid", true, false),
       true,
       {},
       1e-5,
       "bias-sigmoid"},
      {"fused_matmul",
       {In({3, 4}), In({4, 5}), In({5})},
       epilogue("tanh", true, false),
       true,
       {},
       1e-5,
       "bias-tanh"},

      {"fused_conv2d",
       {In({1, 5, 5, 2}), In({3, 3, 2, 4}), In({4})},
       epilogue("relu", true, false, {{"padding", std::string("SAME")}}),
       true,
       {},
       1e-5,
       "same-bias-relu"},
      {"fused_conv2d",
       {In({2, 6, 6, 3}), In({3, 3, 3, 4}), In({4}), In({2, 2, 2, 4})},
       epilogue("gelu_erf", true, true, {{"strides", std::vector<int64_t>{2, 2}}}),
       true,
       {},
       1e-5,
       "valid-stride-bias-residual-gelu"},
      {"fused_conv2d",
       {In({1, 4, 4, 4}), In({1, 1, 2, 4}), In({4})},
       epilogue("sigmoid", true, false, {{"groups", int64_t{2}}}),
       true,
       {},
       1e-5,
       "grouped-bias-sigmoid"},
      // pool = "max": max_pool2d(act(conv + bias)), the inference fusion of fuse_epilogue. One
      // input channel into 32 (f32: the one-channel kernel, and oneDNN's blocked layout pooled in
      // chunks of images, 13 = 12 + 1 exercising the shorter last chunk); 16 -> 16 channels 3x3 at
      // 2400 output pixels
      // (f32: Winograd, pooled from its blocked output); an overlapping padded 3x3/2 pooling
      // (the NHWC path with the max_pool2d kernel for the chunk); bf16 and f16 run NHWC.
      // pool = "max_argmax": training's first layer, the pooled values and their argmax (the
      // one-channel kernel; 20 channels: a tail of lanes).
      {"fused_conv2d",
       {In({2, 28, 28, 1}), In({3, 3, 1, 32}), In({32})},
       argmax_pool_attrs(),
       false,
       {DType::kF32},
       1e-5,
       "pool-argmax-1ch"},
      {"fused_conv2d",
       {In({3, 11, 11, 1}), In({3, 3, 1, 20}), In({20})},
       argmax_pool_attrs(),
       false,
       {DType::kF32},
       1e-5,
       "pool-argmax-1ch-odd"},
      // The W3 CNN's 32 -> 64 layer (13x13 -> 11x11, the last row and column not pooled): tern's
      // fused Winograd pools each output tile ("winograd", pooled_winograd_cpu.cc).
      {"fused_conv2d",
       {In({2, 13, 13, 32}), In({3, 3, 32, 64}), In({64})},
       argmax_pool_attrs(),
       false,
       {DType::kF32},
       1e-4,
       "pool-argmax-winograd"},
      {"fused_conv2d",
       {In({13, 28, 28, 1}), In({3, 3, 1, 32}), In({32})},
       epilogue("relu", true, false, pool_attrs({2, 2}, {2, 2}, "VALID")),
       true,
       {},
       1e-5,
       "pool-1ch-chunks"},
      // One input channel, SAME padding (taps in the padding), odd sizes (the pooling leaves
      // the last row and column of the convolution unread), no bias, no activation: the
      // one-channel kernel's edges (cpu_vec).
      {"fused_conv2d",
       {In({3, 27, 25, 1}), In({3, 3, 1, 16})},
       epilogue("none", false, false,
                pool_attrs({2, 2}, {2, 2}, "VALID", {{"padding", std::string("SAME")}})),
       true,
       {},
       1e-5,
       "pool-1ch-same-odd"},
      // A constant filter over a 2x2 image with bias, residual and relu: cpu_small_image.
      {"fused_conv2d",
       {In({3, 2, 2, 7}), In({3, 3, 7, 16}), In({16}), In({3, 2, 2, 16})},
       epilogue("relu", true, true, {{"padding", std::string("SAME")}}),
       false,
       {},
       1e-5,
       "small-image-constant-filter",
       false,
       {false, true, false, false}},
      // Several input channels, VALID, odd sizes, a small batch: the pooled kernel that computes
      // only the pooled pixels (cpu_conv_pool, f32).
      {"fused_conv2d",
       {In({2, 11, 13, 6}), In({3, 3, 6, 32}), In({32})},
       epilogue("relu", true, false, pool_attrs({2, 2}, {2, 2}, "VALID")),
       true,
       {},
       1e-5,
       "pool-multi-channel"},
      {"fused_conv2d",
       {In({24, 12, 12, 16}), In({3, 3, 16, 16})},
       epilogue("none", false, false, pool_attrs({2, 2}, {2, 2}, "VALID")),
       true,
       {},
       1e-4,
       "pool-winograd"},
      {"fused_conv2d",
       {In({3, 9, 9, 8}), In({3, 3, 8, 12}), In({12})},
       epilogue("tanh", true, false,
                pool_attrs({3, 3}, {2, 2}, "SAME", {{"padding", std::string("SAME")}})),
       true,
       {},
       1e-5,
       "pool-overlapping-same"},
  };
}

// round_bf16 has no graph op of its own: its gradient is the one of the casts down and up it
// stands for (they pass dy through, rounded to bf16 on the way).
TEST(FusedGrads, RoundBF16DifferentiatesAsItsCasts) {
  Tensor x = random_tensor(DType::kF32, {4, 6}, 3, -3, 3);
  Tensor w = random_tensor(DType::kF32, {4, 6}, 5, -2, 2);
  std::vector<Tensor> dx;
  for (bool fused : {true, false}) {
    ir::Graph g;
    ir::Value* in = g.input("x", x.type());
    ir::Value* y =
        fused ? g.add("fused_elementwise", {in}, program(1, {{FusedOpcode::kRoundBF16, 0}}))
              : g.add("cast", {g.add("cast", {in}, {{"dtype", DType::kBF16}})},
                      {{"dtype", DType::kF32}});
    ir::Value* loss = g.add("sum", {g.add("mul", {y, g.constant(w)})},
                            {{"axes", std::vector<int64_t>{}}, {"keepdims", false}});
    std::vector<ir::Value*> wrt = {in};
    g.add_output("dx", autodiff::gradients(g, loss, wrt)[0]);
    dx.push_back(runtime::run_graph_eager(g, {{"x", x}}, nullptr, {})[0]);
  }
  EXPECT_TRUE(bitwise_equal(dx[0], dx[1]));
  EXPECT_NE(dx[0].get(0), 0.0);
}

}  // namespace tern::testing
