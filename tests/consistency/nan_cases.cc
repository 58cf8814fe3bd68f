// Consistency cases: NaN inputs. A NaN anywhere in an input must come out of every fast kernel
// exactly where it comes out of ref (relu(NaN) = NaN, maximum(NaN, x) = NaN, a pooling window or
// reduction holding a NaN gives NaN), through fused epilogues and programs too: a kernel that
// maps NaN to a number hides bad data from the loss, check-numerics and TerminateOnNaN (bad-input
// report F1: matmul+bias+relu fused into oneDNN turned one NaN input cell into NaN weights with
// a finite loss). Values only: finite differences mean nothing at a NaN. "large" cases cross the
// vectorized and threaded paths; NaN sits at vector lanes 0, 3 and 7 and in a tail.
#include <vector>

#include "tern/ops/fused_program.h"
#include "tests/consistency/op_case.h"

namespace tern::testing {
namespace {

using Ints = std::vector<int64_t>;
using ops::FusedOpcode;

const std::vector<DType> kFloats = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16};
const std::vector<DType> kFast = {DType::kF32, DType::kBF16};

OpCase nan_case(std::string op, std::vector<InputSpec> inputs, ops::Attrs attrs, std::string label,
                std::vector<DType> dtypes = kFloats) {
  return {.op = std::move(op),
          .inputs = std::move(inputs),
          .attrs = std::move(attrs),
          .check_grad = false,
          .dtypes = std::move(dtypes),
          .label = "nan-" + std::move(label)};
}

ops::Attrs program(int num_inputs, std::vector<ops::FusedInstruction> code) {
  ops::FusedProgram p;
  p.num_inputs = num_inputs;
  p.code = std::move(code);
  ops::Attrs attrs;
  p.to_attrs(attrs);
  return attrs;
}

ops::Attrs epilogue(std::string act, bool bias, bool residual, ops::Attrs base = {}) {
  base.set("activation", std::move(act));
  base.set("has_bias", bias);
  base.set("has_residual", residual);
  return base;
}

// NaN at lanes 0, 3 and 7 of the first vectors, in the middle and in the last element.
Ints spread(int64_t n) {
  return {0, 3, 7 % n, 17 % n, n / 2, n - 1};
}

std::vector<OpCase> unary_nan_cases() {
  std::vector<OpCase> cases;
  for (const char* op :
       {"relu", "abs", "sign", "neg", "square", "exp", "tanh", "sigmoid", "softplus", "gelu"}) {
    cases.push_back(nan_case(op, {WithNaN({3, 4}, {1, 6, 11})}, {}, "small"));
    cases.push_back(
        nan_case(op, {WithNaN({240, 160}, spread(240 * 160), -3, 3)}, {}, "large", kFast));
  }
  cases.push_back(
      nan_case("gelu", {WithNaN({3, 4}, {1, 6, 11})}, {{"approximate", true}}, "tanh-small"));
  // relu_grad(dy, x): NaN in x gives 0 in ref (x > 0 is false), NaN in dy passes where x > 0.
  cases.push_back(
      nan_case("relu_grad", {WithNaN({3, 4}, {0, 5}), WithNaN({3, 4}, {2, 5, 9})}, {}, "small"));
  cases.push_back(nan_case(
      "relu_grad",
      {WithNaN({240, 160}, spread(240 * 160)), WithNaN({240, 160}, {1, 3, 8, 1000, 240 * 160 - 2})},
      {}, "large", kFast));
  for (const char* op : {"gelu_grad", "sigmoid_grad", "tanh_grad"}) {
    cases.push_back(
        nan_case(op, {WithNaN({3, 4}, {0, 5}), WithNaN({3, 4}, {2, 5, 9})}, {}, "small"));
  }
  return cases;
}

std::vector<OpCase> binary_nan_cases() {
  std::vector<OpCase> cases;
  for (const char* op : {"maximum", "minimum", "add", "mul"}) {
    cases.push_back(
        nan_case(op, {WithNaN({3, 4}, {0, 5}), WithNaN({3, 4}, {2, 5, 9})}, {}, "small"));
    cases.push_back(nan_case(op, {WithNaN({3, 4}, {7}), WithNaN({4}, {1})}, {}, "broadcast"));
    cases.push_back(nan_case(op, {In({240, 160}), WithNaN({}, {0})}, {}, "scalar-nan", kFast));
    cases.push_back(nan_case(
        op, {WithNaN({240, 160}, spread(240 * 160)), WithNaN({240, 160}, {2, 3, 9, 38399})}, {},
        "large", kFast));
  }
  return cases;
}

std::vector<OpCase> reduce_nan_cases() {
  std::vector<OpCase> cases;
  for (const char* op : {"max", "min", "sum", "mean"}) {
    cases.push_back(nan_case(op, {WithNaN({3, 4, 5}, {6, 33, 59})}, {{"axes", Ints{1}}}, "mid"));
    cases.push_back(nan_case(op, {WithNaN({3, 4, 5}, {6})}, {{"axes", Ints{}}}, "all"));
    cases.push_back(
        nan_case(op, {WithNaN({16, 300}, {5, 301, 4799})}, {{"axes", Ints{-1}}}, "rows", kFast));
    cases.push_back(
        nan_case(op, {WithNaN({300, 130}, {5, 131, 38999})}, {{"axes", Ints{0}}}, "cols", kFast));
  }
  for (const char* op : {"argmax", "argmin"}) {
    cases.push_back(nan_case(op, {WithNaN({4, 6}, {3, 7, 23})}, {{"axis", int64_t{1}}}, "rows"));
  }
  return cases;
}

std::vector<OpCase> pool_nan_cases() {
  // NaN first in a window, in its middle, last in it, and in a padded border window.
  const ops::Attrs valid = {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  const ops::Attrs same = {
      {"ksize", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"padding", std::string("SAME")}};
  return {
      nan_case("max_pool2d", {WithNaN({2, 6, 6, 3}, {0, 4, 22, 40, 107, 215})}, valid, "valid"),
      nan_case("max_pool2d", {WithNaN({1, 7, 7, 2}, {1, 16, 30, 97})}, same, "same"),
      // 24 channels: eight-lane blocks (a NaN in lanes of its own block and of another) and a tail.
      nan_case("max_pool2d", {WithNaN({2, 6, 6, 24}, {0, 9, 30, 700, 1200, 1727})}, valid,
               "valid-24ch", kFast),
      nan_case("max_pool2d", {WithNaN({2, 14, 14, 32}, {0, 33, 100, 2000, 6271, 12543})}, same,
               "onednn-3x3s2", kFast),
      nan_case("avg_pool2d", {WithNaN({2, 6, 6, 3}, {0, 4, 22, 40, 107, 215})}, valid, "valid"),
      nan_case("max_pool2d_grad", {WithNaN({1, 6, 6, 2}, {0, 9, 30, 71}), In({1, 3, 3, 2})}, valid,
               "valid"),
      nan_case("max_pool2d_grad",
               {WithNaN({2, 7, 9, 70}, {0, 75, 300, 4000, 8819}), In({2, 4, 5, 70})},
               {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"padding", std::string("SAME")}},
               "same-70ch"),
  };
}

std::vector<OpCase> fused_nan_cases() {
  using F = FusedOpcode;
  std::vector<OpCase> cases = {
      nan_case("fused_elementwise", {WithNaN({3, 4}, {0, 5}), WithNaN({4}, {2})},
               program(2, {{F::kAdd, 0, 1}, {F::kRelu, 2}}), "bias-relu"),
      nan_case("fused_elementwise", {WithNaN({3, 4}, {0, 5}), WithNaN({3, 4}, {2, 5, 9})},
               program(2, {{F::kMaximum, 0, 1},
                           {F::kMinimum, 0, 1},
                           {F::kReluGrad, 0, 1},
                           {F::kAbs, 1},
                           {F::kSign, 0},
                           {F::kAdd, 2, 3}}),
               "max-min-relu-grad"),
      nan_case(
          "fused_elementwise",
          {WithNaN({257, 130}, spread(257 * 130)), WithNaN({257, 1}, {3, 100}), WithNaN({}, {})},
          program(3, {{F::kMul, 0, 1},
                      {F::kRelu, 3},
                      {F::kImm, -1, -1, 0.0},
                      {F::kMaximum, 0, 5},
                      {F::kMinimum, 6, 2},
                      {F::kAdd, 4, 7},
                      {F::kReluGrad, 8, 0}}),
          "large", kFast),
  };
  // Every epilogue activation, NaN in the left operand (a NaN output row), in the bias (a NaN
  // column) and in the residual.
  for (const char* act : {"none", "relu", "gelu_tanh", "gelu_erf", "sigmoid", "tanh"}) {
    cases.push_back(nan_case("fused_matmul",
                             {WithNaN({3, 4}, {5}), In({4, 5}), WithNaN({5}, {3}), In({3, 5})},
                             epilogue(act, true, true), std::string("bias-residual-") + act));
    cases.push_back(nan_case(
        "fused_matmul",
        {In({64, 96}), WithNaN({96, 80}, {100}), In({80}), WithNaN({64, 80}, {0, 3, 7, 5119})},
        epilogue(act, true, true), std::string("onednn-") + act, kFast));
  }
  cases.push_back(nan_case("fused_matmul", {WithNaN({3, 4}, {5}), In({4, 5}), In({5})},
                           epilogue("relu", true, false), "bias-relu"));
  cases.push_back(nan_case("fused_matmul", {WithNaN({96, 200}, {0, 1000, 19199}), In({200, 130})},
                           epilogue("relu", false, false), "onednn-relu-gemm", kFast));
  const ops::Attrs small_conv = epilogue("relu", true, false, {{"padding", std::string("SAME")}});
  const std::vector<InputSpec> small_conv_inputs = {WithNaN({1, 5, 5, 2}, {0, 13, 49}),
                                                    In({3, 3, 2, 4}), In({4})};
  cases.push_back(nan_case("fused_conv2d", small_conv_inputs, small_conv, "same-bias-relu",
                           {DType::kF32, DType::kF64, DType::kF16}));
  // oneDNN's AMX bf16 convolution reads 2 input channels as a block of 16, the neighbouring
  // pixels times zero weights: a NaN spreads to the outputs that read it so.
  OpCase amx = nan_case("fused_conv2d", small_conv_inputs, small_conv, "same-bias-relu-bf16",
                        {DType::kBF16});
  amx.nan_may_spread = true;
  cases.push_back(amx);
  // Direct convolutions (stride 2: never Winograd) must match ref exactly.
  const ops::Attrs same_s2 = {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}};
  cases.push_back(nan_case("fused_conv2d",
                           {WithNaN({2, 13, 13, 32}, {0, 500, 10815}), In({3, 3, 32, 32}),
                            WithNaN({32}, {7}), WithNaN({2, 7, 7, 32}, {3, 3000})},
                           epilogue("relu", true, true, same_s2), "onednn-direct-relu", kFast));
  cases.push_back(nan_case("conv2d", {WithNaN({2, 13, 13, 32}, {0, 500}), In({3, 3, 32, 48})},
                           same_s2, "onednn-direct", kFast));
  // With the pooling folded in (pool = "max"): one input channel (the blocked, chunked path) and
  // a NaN bias channel.
  ops::Attrs pooled = epilogue("relu", true, false, {});
  pooled.set("pool", std::string("max"));
  pooled.set("pool_ksize", Ints{2, 2});
  pooled.set("pool_strides", Ints{2, 2});
  cases.push_back(
      nan_case("fused_conv2d",
               {WithNaN({13, 10, 10, 1}, {0, 57, 1299}), In({3, 3, 1, 32}), WithNaN({32}, {5})},
               pooled, "onednn-pool-relu", kFast));
  // Training's form (pool = "max_argmax", activation none): the one-channel kernel's argmax takes
  // the window's first NaN (max_pool2d_argmax's rule), a NaN bias channel all four.
  ops::Attrs argmax_pooled = epilogue("none", true, false, {});
  argmax_pooled.set("pool", std::string("max_argmax"));
  argmax_pooled.set("pool_ksize", Ints{2, 2});
  argmax_pooled.set("pool_strides", Ints{2, 2});
  cases.push_back(
      nan_case("fused_conv2d",
               {WithNaN({3, 10, 10, 1}, {0, 57, 250}), In({3, 3, 1, 32}), WithNaN({32}, {5})},
               argmax_pooled, "pool-argmax-1ch", {DType::kF32}));
  // f32 3x3 stride-1 layers with channels in multiples of 16 take oneDNN's Winograd path: a NaN
  // input spreads over its output tile, and relu must keep it.
  OpCase winograd = nan_case("fused_conv2d",
                             {WithNaN({2, 12, 12, 32}, {0, 500, 9215}), In({3, 3, 32, 32}),
                              WithNaN({32}, {7}), WithNaN({2, 12, 12, 32}, {3, 4000})},
                             epilogue("relu", true, true, {{"padding", std::string("SAME")}}),
                             "onednn-winograd-relu", kFast);
  winograd.nan_may_spread = true;
  cases.push_back(winograd);
  winograd = nan_case("conv2d", {WithNaN({2, 12, 12, 32}, {0, 500}), In({3, 3, 32, 48})},
                      {{"padding", std::string("SAME")}}, "onednn-winograd", kFast);
  winograd.nan_may_spread = true;
  cases.push_back(winograd);
  // 64-channel 3x3 stride-1 layers over small images take tern's Winograd F(2x2, 3x3): each
  // input of a 4x4 tile reaches exactly the outputs whose 3x3 window reads it, so the NaNs
  // match ref's, and relu keeps them.
  // (bf16 products: compared with the outputs' scale.)
  OpCase f2 = nan_case("fused_conv2d",
                       {WithNaN({4, 4, 4, 64}, {0, 300, 4095}), In({3, 3, 64, 64}),
                        WithNaN({64}, {7}), WithNaN({4, 4, 4, 64}, {3, 2000})},
                       epilogue("relu", true, true, {{"padding", std::string("SAME")}}),
                       "winograd-f2-relu", kFast);
  f2.bf16_error_of_scale = true;
  cases.push_back(f2);
  f2 = nan_case("conv2d", {WithNaN({4, 5, 3, 64}, {0, 500}), In({3, 3, 64, 64})},
                {{"padding", std::string("SAME")}}, "winograd-f2", kFast);
  f2.bf16_error_of_scale = true;
  cases.push_back(f2);
  // From 8x8 outputs, F(4x4, 3x3): an input of its 6x6 tile may reach more of the tile's outputs
  // than read it (as with oneDNN's Winograd).
  OpCase f4 = nan_case("fused_conv2d",
                       {WithNaN({2, 8, 9, 64}, {0, 700, 9215}), In({3, 3, 64, 64}),
                        WithNaN({64}, {7}), WithNaN({2, 8, 9, 64}, {3, 4000})},
                       epilogue("relu", true, true, {{"padding", std::string("SAME")}}),
                       "winograd-f4-relu", kFast);
  f4.nan_may_spread = true;
  cases.push_back(f4);
  cases.push_back(nan_case("matmul", {WithNaN({96, 200}, {0, 1000}), In({200, 130})}, {},
                           "onednn-gemm", kFast));
  return cases;
}

std::vector<OpCase> softmax_nan_cases() {
  return {
      nan_case("softmax", {WithNaN({3, 5}, {6})}, {}, "row"),
      nan_case("softmax", {WithNaN({4, 3000}, {1, 4500})}, {}, "long-row", kFast),
      nan_case("log_softmax", {WithNaN({3, 5}, {6})}, {}, "row"),
      nan_case("softmax", {WithNaN({4, 3}, {4})}, {{"axis", int64_t{0}}}, "axis0"),
      nan_case("softmax_grad", {WithNaN({3, 5}, {2}), WithNaN({3, 5}, {6}, 0.05, 1)}, {}, "row"),
      nan_case("log_softmax_grad", {WithNaN({3, 5}, {2}), WithNaN({3, 5}, {6}, -3, -0.1)}, {},
               "row"),
      nan_case("sparse_softmax_cross_entropy", {WithNaN({4, 5}, {7}), Idx({4}, 0, 5)}, {}, "row"),
      nan_case("sparse_softmax_cross_entropy", {WithNaN({64, 10}, {0, 13, 639}), Idx({64}, 0, 10)},
               {}, "batch"),
      nan_case("softmax_cross_entropy", {WithNaN({4, 5}, {7}), In({4, 5}, 0, 1)}, {}, "row"),
      nan_case("softmax_cross_entropy", {WithNaN({64, 10}, {0, 13, 639}), In({64, 10}, 0, 1)}, {},
               "batch"),
      nan_case("sigmoid_cross_entropy", {WithNaN({3, 4}, {5}), In({3, 4}, 0, 1)}, {}, "logit"),
  };
}

}  // namespace

TERN_OP_CASES(nan) {
  std::vector<OpCase> cases;
  for (auto* family : {&unary_nan_cases, &binary_nan_cases, &reduce_nan_cases, &pool_nan_cases,
                       &fused_nan_cases, &softmax_nan_cases}) {
    for (OpCase& c : family()) cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace tern::testing
