// Consistency cases for the shape paths the oneDNN kernels take that the family cases (small
// shapes) do not reach: matmuls big enough for oneDNN's blocked GEMM, convolutions with
// channel counts that select its blocked kernels (multiples of 16) in f32 and bf16, depthwise,
// strided backprops, fused epilogues at those sizes, NHWC batch norm with many channels, and a
// long softmax row. Values only (gradients are checked by the family cases).
#include <vector>

#include "tests/consistency/op_case.h"

namespace tern::testing {

TERN_OP_CASES(onednn) {
  using Ints = std::vector<int64_t>;
  const std::vector<DType> fast = {DType::kF32, DType::kBF16};
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  const ops::Attrs same_s2 = {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}};
  auto with = [](ops::Attrs a, std::string_view name, ops::AttrValue v) {
    a.set(name, std::move(v));
    return a;
  };
  return {
      {"matmul", {In({96, 200}), In({200, 130})}, {}, false, fast, 0, "onednn-gemm"},
      {"matmul",
       {In({3, 200, 40}), In({3, 72, 200})},
       {{"transpose_a", true}, {"transpose_b", true}},
       false,
       fast,
       0,
       "onednn-batched-tt"},
      {"conv2d", {In({2, 12, 12, 32}), In({3, 3, 32, 48})}, same, false, fast, 0, "onednn-blocked"},
      {"conv2d",
       {In({2, 13, 13, 32}), In({3, 3, 32, 32})},
       same_s2,
       false,
       fast,
       0,
       "onednn-blocked-stride2"},
      {"conv2d", {In({2, 10, 10, 32}), In({1, 1, 32, 64})}, {}, false, fast, 0, "onednn-1x1"},
      {"conv2d",
       {In({2, 10, 10, 32}), In({3, 3, 1, 32})},
       with(same, "groups", int64_t{32}),
       false,
       fast,
       0,
       "onednn-depthwise"},
      {"conv2d_backprop_input",
       {In({2, 7, 7, 48}), In({3, 3, 32, 48})},
       with(same_s2, "input_shape", Ints{2, 13, 13, 32}),
       false,
       fast,
       0,
       "onednn-blocked-stride2"},
      {"conv2d_backprop_filter",
       {In({2, 13, 13, 32}), In({2, 7, 7, 48})},
       with(same_s2, "filter_shape", Ints{3, 3, 32, 48}),
       false,
       fast,
       0,
       "onednn-blocked-stride2"},
      {"conv2d_backprop_filter",
       {In({2, 12, 12, 32}), In({2, 12, 12, 48})},
       with(with(same, "filter_shape", Ints{3, 3, 32, 48}), "dfilter_dtype", std::string("f32")),
       false,
       fast,
       0,
       "onednn-f32-dfilter"},
      {"fused_conv2d",
       {In({2, 12, 12, 32}), In({3, 3, 32, 32}), In({32}), In({2, 12, 12, 32})},
       with(with(with(same, "has_bias", true), "has_residual", true), "activation",
            std::string("relu")),
       false,
       fast,
       0,
       "onednn-bias-residual-relu"},
      {"fused_matmul",
       {In({64, 96}), In({96, 80}), In({80})},
       {{"has_bias", true}, {"activation", std::string("gelu_tanh")}},
       false,
       fast,
       0,
       "onednn-bias-gelu"},
      {"max_pool2d",
       {In({2, 14, 14, 32})},
       {{"ksize", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"padding", std::string("SAME")}},
       false,
       fast,
       0,
       "onednn-3x3s2"},
      {"batch_norm_training",
       {In({4, 6, 6, 64}, -2, 3), In({64}, 0.5, 1.5), In({64})},
       {},
       false,
       fast,
       0,
       "onednn-nhwc"},
      {"softmax", {In({4, 3000}, -5, 5)}, {}, false, fast, 0, "onednn-long-row"},
  };
}

}  // namespace tern::testing
