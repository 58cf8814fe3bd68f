// Tests of conv/pool geometry against TensorFlow's known output sizes and paddings, and of the
// conv family's inference error messages.
#include "tern/ops/conv_geometry.h"

#include <gtest/gtest.h>

#include "tern/base/error.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

using Ints = std::vector<int64_t>;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.message();
  }
  return "(no error)";
}

TEST(ConvGeometry, ValidIsUnpadded) {
  // ResNet stem without padding: 224 -> (224 - 7) / 2 + 1 = 109.
  Conv2dGeometry g = conv2d_geometry({1, 224, 224, 3}, {7, 7, 3, 64}, {{"strides", Ints{2, 2}}});
  EXPECT_EQ(g.out_h, 109);
  EXPECT_EQ(g.out_w, 109);
  EXPECT_EQ(g.pad_top + g.pad_bottom + g.pad_left + g.pad_right, 0);
  EXPECT_EQ(g.output_shape(), Shape({1, 109, 109, 64}));
}

TEST(ConvGeometry, SamePutsTheExtraPadBottomRight) {
  // TF: 224, k7, s2 SAME -> 112, total pad 5 = 2 top + 3 bottom.
  Conv2dGeometry g = conv2d_geometry({1, 224, 224, 3}, {7, 7, 3, 64},
                                     {{"strides", Ints{2, 2}}, {"padding", std::string("SAME")}});
  EXPECT_EQ(g.out_h, 112);
  EXPECT_EQ(g.pad_top, 2);
  EXPECT_EQ(g.pad_bottom, 3);
  EXPECT_EQ(g.pad_left, 2);
  EXPECT_EQ(g.pad_right, 3);
  // 6, k3, s2 -> 3, total pad 1 (all bottom); 7, k3, s2 -> 4, pads 1/1.
  g = conv2d_geometry({1, 6, 7, 1}, {3, 3, 1, 1},
                      {{"strides", Ints{2, 2}}, {"padding", std::string("SAME")}});
  EXPECT_EQ(g.out_h, 3);
  EXPECT_EQ(g.pad_top, 0);
  EXPECT_EQ(g.pad_bottom, 1);
  EXPECT_EQ(g.out_w, 4);
  EXPECT_EQ(g.pad_left, 1);
  EXPECT_EQ(g.pad_right, 1);
  // A 1x1 kernel with stride 2 needs no padding: 5 -> 3.
  g = conv2d_geometry({1, 5, 5, 1}, {1, 1, 1, 1},
                      {{"strides", Ints{2, 2}}, {"padding", std::string("SAME")}});
  EXPECT_EQ(g.out_h, 3);
  EXPECT_EQ(g.pad_top + g.pad_bottom, 0);
}

TEST(ConvGeometry, DilationWidensTheKernel) {
  // k3 dilated by 2 spans 5: SAME on 6 pads 2/2; VALID on 10 gives 6.
  Conv2dGeometry g = conv2d_geometry({1, 6, 10, 1}, {3, 3, 1, 1},
                                     {{"dilations", Ints{2, 2}}, {"padding", std::string("SAME")}});
  EXPECT_EQ(g.out_h, 6);
  EXPECT_EQ(g.pad_top, 2);
  EXPECT_EQ(g.pad_bottom, 2);
  g = conv2d_geometry({1, 6, 10, 1}, {3, 3, 1, 1}, {{"dilations", Ints{2, 2}}});
  EXPECT_EQ(g.out_h, 2);
  EXPECT_EQ(g.out_w, 6);
}

TEST(ConvGeometry, ExplicitPaddingAndGroups) {
  Conv2dGeometry g = conv2d_geometry({2, 5, 5, 4}, {3, 2, 2, 6},
                                     {{"padding", std::string("EXPLICIT")},
                                      {"explicit_paddings", Ints{1, 2, 0, 1}},
                                      {"groups", int64_t{2}}});
  EXPECT_EQ(g.pad_top, 1);
  EXPECT_EQ(g.pad_bottom, 2);
  EXPECT_EQ(g.pad_left, 0);
  EXPECT_EQ(g.pad_right, 1);
  EXPECT_EQ(g.out_h, 6);  // 5 + 3 - 3 + 1
  EXPECT_EQ(g.out_w, 5);  // 5 + 1 - 2 + 1
  EXPECT_EQ(g.c_in_per_group(), 2);
  EXPECT_EQ(g.c_out_per_group(), 3);
  EXPECT_EQ(g.filter_shape(), Shape({3, 2, 2, 6}));
}

TEST(ConvGeometry, DepthwiseIsGroupsEqualChannels) {
  Conv2dGeometry g = conv2d_geometry({1, 8, 8, 3}, {3, 3, 1, 6}, {{"groups", int64_t{3}}});
  EXPECT_EQ(g.c_in_per_group(), 1);
  EXPECT_EQ(g.c_out_per_group(), 2);
  EXPECT_EQ(g.output_shape(), Shape({1, 6, 6, 6}));
}

TEST(PoolGeometry, TensorFlowSizes) {
  // ResNet max pool: 112, 3x3, s2, SAME -> 56 with pads 0/1.
  Pool2dGeometry g = pool2d_geometry(
      {1, 112, 112, 64},
      {{"ksize", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"padding", std::string("SAME")}});
  EXPECT_EQ(g.out_h, 56);
  EXPECT_EQ(g.pad_top, 0);
  EXPECT_EQ(g.pad_bottom, 1);
  g = pool2d_geometry({1, 7, 8, 1}, {{"ksize", Ints{3, 2}}, {"strides", Ints{2, 2}}});
  EXPECT_EQ(g.out_h, 3);
  EXPECT_EQ(g.out_w, 4);
  EXPECT_EQ(g.output_shape(), Shape({1, 3, 4, 1}));
}

TEST(ConvGeometry, ErrorsNameTheProblemAndShapes) {
  EXPECT_EQ(error_of([] {
              conv2d_geometry({1, 8, 8, 3}, {3, 3, 4, 8}, {});
            }),
            "conv2d: input channels 3 != filter in-channels*groups 4; x [1, 8, 8, 3], filter [3, "
            "3, 4, 8]");
  EXPECT_NE(error_of([] {
              conv2d_geometry({1, 8, 8, 4}, {3, 3, 2, 5}, {{"groups", int64_t{2}}});
            }).find("filter out-channels 5 is not a multiple of groups 2"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              conv2d_geometry({1, 2, 8, 1}, {3, 3, 1, 1}, {});
            }).find("height: input size 2 (padded 2) is smaller than the kernel size 3"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              conv2d_geometry({1, 8, 8, 1}, {3, 3, 1, 1}, {{"padding", std::string("same")}});
            }).find("padding must be"),
            std::string::npos);
  EXPECT_NE(
      error_of([] {
        conv2d_geometry({1, 8, 8, 1}, {3, 3, 1, 1}, {{"explicit_paddings", Ints{1, 1, 1, 1}}});
      }).find("explicit_paddings given but padding is \"VALID\""),
      std::string::npos);
  EXPECT_NE(error_of([] {
              conv2d_geometry({1, 8, 8, 1}, {3, 3, 1, 1}, {{"strides", Ints{2}}});
            }).find("strides must be two positive ints, got [2]"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              conv2d_geometry({8, 8, 1}, {3, 3, 1, 1}, {});
            }).find("rank 4 (NHWC)"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              pool2d_geometry({1, 8, 8, 1}, {{"ksize", Ints{0, 2}}});
            }).find("pool2d: ksize must be two positive ints"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              pool2d_geometry({1, 8, 8, 1},
                              {{"ksize", Ints{2, 2}}, {"padding", std::string("EXPLICIT")}});
            }).find("padding must be \"SAME\" or \"VALID\""),
            std::string::npos);
}

TEST(ConvOps, InferenceErrorsNameOpNodeAndInputs) {
  const OpDef& conv = OpRegistry::global().get("conv2d");
  std::vector<TensorType> in = {{DType::kF32, {1, 8, 8, 3}}, {DType::kF32, {3, 3, 4, 8}}};
  Attrs attrs;
  EXPECT_EQ(error_of([&] { conv.check_and_infer("c1", in, attrs); }),
            "op 'conv2d' (node 'c1'): input channels 3 != filter in-channels*groups 4; inputs: "
            "f32[1, 8, 8, 3], f32[3, 3, 4, 8]");

  const OpDef& bwd = OpRegistry::global().get("conv2d_backprop_input");
  std::vector<TensorType> bin = {{DType::kF32, {1, 5, 5, 8}}, {DType::kF32, {3, 3, 3, 8}}};
  Attrs battrs = {{"input_shape", Ints{1, 8, 8, 3}}};
  EXPECT_NE(error_of([&] {
              bwd.check_and_infer("c1_grad", bin, battrs);
            }).find("dy shape [1, 5, 5, 8] != forward output shape [1, 6, 6, 8]"),
            std::string::npos);

  const OpDef& pool = OpRegistry::global().get("max_pool2d");
  std::vector<TensorType> pin = {{DType::kF32, {1, 8, 8, 3}}};
  Attrs pattrs;
  EXPECT_NE(error_of([&] { pool.check_and_infer("p1", pin, pattrs); }).find("'ksize' is missing"),
            std::string::npos);
}

TEST(ConvOps, InferredShapes) {
  const OpDef& conv = OpRegistry::global().get("conv2d");
  std::vector<TensorType> in = {{DType::kBF16, {2, 7, 6, 4}}, {DType::kBF16, {3, 3, 2, 6}}};
  Attrs attrs = {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}, {"groups", int64_t{2}}};
  std::vector<TensorType> out = conv.check_and_infer("c", in, attrs);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (TensorType{DType::kBF16, {2, 4, 3, 6}}));

  const OpDef& gap = OpRegistry::global().get("global_avg_pool");
  std::vector<TensorType> gin = {{DType::kF32, {2, 7, 6, 4}}};
  Attrs keep = {{"keepdims", true}};
  EXPECT_EQ(gap.check_and_infer("g", gin, keep)[0].shape, Shape({2, 1, 1, 4}));
  Attrs flat;
  EXPECT_EQ(gap.check_and_infer("g", gin, flat)[0].shape, Shape({2, 4}));
}

// fused_conv2d with pool = "max": the pooled shape, and errors naming the pool attributes.
TEST(ConvOps, FusedConvWithPool) {
  const OpDef& fused = OpRegistry::global().get("fused_conv2d");
  std::vector<TensorType> in = {{DType::kF32, {2, 28, 28, 1}}, {DType::kF32, {3, 3, 1, 32}}};
  Attrs attrs = {
      {"pool", std::string("max")}, {"pool_ksize", Ints{2, 2}}, {"pool_strides", Ints{2, 2}}};
  EXPECT_EQ(fused.check_and_infer("f", in, attrs)[0].shape, Shape({2, 13, 13, 32}));
  Attrs same = {{"pool", std::string("max")},
                {"pool_ksize", Ints{3, 3}},
                {"pool_strides", Ints{2, 2}},
                {"pool_padding", std::string("SAME")}};
  EXPECT_EQ(fused.check_and_infer("f", in, same)[0].shape, Shape({2, 13, 13, 32}));
  Attrs none;
  EXPECT_EQ(fused.check_and_infer("f", in, none)[0].shape, Shape({2, 26, 26, 32}));
  Attrs avg = {{"pool", std::string("avg")}, {"pool_ksize", Ints{2, 2}}};
  EXPECT_NE(error_of([&] {
              fused.check_and_infer("f", in, avg);
            }).find("pool must be \"none\", \"max\" or \"max_argmax\", got \"avg\""),
            std::string::npos);
  Attrs no_ksize = {{"pool", std::string("max")}};
  EXPECT_NE(error_of([&] { fused.check_and_infer("f", in, no_ksize); }).find("pool: "),
            std::string::npos);
  std::vector<TensorType> res = in;
  res.push_back({DType::kF32, {2, 26, 26, 32}});
  Attrs with_residual = attrs;
  with_residual.set("has_residual", true);
  EXPECT_NE(error_of([&] {
              fused.check_and_infer("f", res, with_residual);
            }).find("pool = \"max\" takes no residual"),
            std::string::npos);
}

// fused_conv2d with pool = "max_argmax": the pooled values and a u8 argmax of the same shape;
// activation none only.
TEST(ConvOps, FusedConvWithArgmaxPool) {
  const OpDef& fused = OpRegistry::global().get("fused_conv2d");
  std::vector<TensorType> in = {{DType::kF32, {2, 28, 28, 1}}, {DType::kF32, {3, 3, 1, 32}}};
  Attrs attrs = {{"pool", std::string("max_argmax")},
                 {"pool_ksize", Ints{2, 2}},
                 {"pool_strides", Ints{2, 2}}};
  std::vector<TensorType> out = fused.check_and_infer("f", in, attrs);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (TensorType{DType::kF32, {2, 13, 13, 32}}));
  EXPECT_EQ(out[1], (TensorType{DType::kU8, {2, 13, 13, 32}}));
  attrs.set("activation", std::string("relu"));
  EXPECT_NE(error_of([&] {
              fused.check_and_infer("f", in, attrs);
            }).find("pool = \"max_argmax\" takes activation \"none\", got \"relu\""),
            std::string::npos);
}

// conv2d_backprop_filter_pooled: dy and argmax have the pooling's shape over the convolution's
// output; errors name the input that does not.
TEST(ConvOps, BackpropFilterPooledShapes) {
  const OpDef& op = OpRegistry::global().get("conv2d_backprop_filter_pooled");
  Attrs attrs = {{"filter_shape", Ints{3, 3, 1, 32}},
                 {"pool_ksize", Ints{2, 2}},
                 {"pool_strides", Ints{2, 2}}};
  std::vector<TensorType> in = {
      {DType::kF32, {2, 28, 28, 1}}, {DType::kF32, {2, 13, 13, 32}}, {DType::kU8, {2, 13, 13, 32}}};
  EXPECT_EQ(op.check_and_infer("g", in, attrs)[0], (TensorType{DType::kF32, {3, 3, 1, 32}}));
  std::vector<TensorType> bad_dy = in;
  bad_dy[1].shape = Shape{2, 26, 26, 32};
  EXPECT_NE(error_of([&] {
              op.check_and_infer("g", bad_dy, attrs);
            }).find("dy shape [2, 26, 26, 32] != forward output shape [2, 13, 13, 32]"),
            std::string::npos);
  std::vector<TensorType> bad_argmax = in;
  bad_argmax[2].dtype = DType::kI32;
  EXPECT_NE(error_of([&] { op.check_and_infer("g", bad_argmax, attrs); }).find("argmax must be u8"),
            std::string::npos);
  Attrs no_pool = {{"filter_shape", Ints{3, 3, 1, 32}}};
  EXPECT_NE(error_of([&] { op.check_and_infer("g", in, no_pool); }).find("pool_ksize"),
            std::string::npos);
}

// conv2d_backprop_pooled: dx of x's type and dfilter of the filter's (or f32 with dfilter_dtype);
// dy, argmax and the dtypes checked as the two ops it stands for check them, errors naming the
// input.
TEST(ConvOps, BackpropPooledShapes) {
  const OpDef& op = OpRegistry::global().get("conv2d_backprop_pooled");
  Attrs attrs = {{"pool_ksize", Ints{2, 2}}, {"pool_strides", Ints{2, 2}}};
  std::vector<TensorType> in = {{DType::kF32, {2, 13, 13, 32}},
                                {DType::kF32, {2, 5, 5, 64}},
                                {DType::kF32, {3, 3, 32, 64}},
                                {DType::kU8, {2, 5, 5, 64}}};
  std::vector<TensorType> out = op.check_and_infer("g", in, attrs);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (TensorType{DType::kF32, {2, 13, 13, 32}}));
  EXPECT_EQ(out[1], (TensorType{DType::kF32, {3, 3, 32, 64}}));
  std::vector<TensorType> bad_dy = in;
  bad_dy[1].shape = Shape{2, 11, 11, 64};
  EXPECT_NE(error_of([&] {
              op.check_and_infer("g", bad_dy, attrs);
            }).find("dy shape [2, 11, 11, 64] != forward output shape [2, 5, 5, 64]"),
            std::string::npos);
  std::vector<TensorType> bad_argmax = in;
  bad_argmax[3].shape = Shape{2, 5, 5, 32};
  EXPECT_NE(error_of([&] { op.check_and_infer("g", bad_argmax, attrs); }).find("argmax must be u8"),
            std::string::npos);
  std::vector<TensorType> bad_filter = in;
  bad_filter[2].dtype = DType::kBF16;
  EXPECT_NE(error_of([&] {
              op.check_and_infer("g", bad_filter, attrs);
            }).find("inputs 0 and 2 have different dtypes (f32 vs bf16)"),
            std::string::npos);
  std::vector<TensorType> bf16 = in;
  for (size_t i = 0; i < 3; ++i) bf16[i].dtype = DType::kBF16;
  attrs.set("dfilter_dtype", std::string("f32"));
  out = op.check_and_infer("g", bf16, attrs);
  EXPECT_EQ(out[0].dtype, DType::kBF16);
  EXPECT_EQ(out[1], (TensorType{DType::kF32, {3, 3, 32, 64}}));
}

TEST(ConvOps, BackpropFilterOutputDtype) {
  const OpDef& bwd = OpRegistry::global().get("conv2d_backprop_filter");
  std::vector<TensorType> in = {{DType::kBF16, {2, 6, 6, 3}}, {DType::kBF16, {2, 6, 6, 4}}};
  Attrs attrs = {{"filter_shape", Ints{3, 3, 3, 4}}, {"padding", std::string("SAME")}};
  EXPECT_EQ(bwd.check_and_infer("g", in, attrs)[0], (TensorType{DType::kBF16, {3, 3, 3, 4}}));
  attrs.set("dfilter_dtype", std::string("f32"));
  EXPECT_EQ(bwd.check_and_infer("g", in, attrs)[0], (TensorType{DType::kF32, {3, 3, 3, 4}}));
  attrs.set("dfilter_dtype", std::string("f64"));
  EXPECT_NE(error_of([&] {
              bwd.check_and_infer("g", in, attrs);
            }).find("dfilter_dtype must be \"\" or \"f32\", got \"f64\""),
            std::string::npos);
  std::vector<TensorType> f64 = {{DType::kF64, {2, 6, 6, 3}}, {DType::kF64, {2, 6, 6, 4}}};
  attrs.set("dfilter_dtype", std::string("f32"));
  EXPECT_NE(error_of([&] {
              bwd.check_and_infer("g", f64, attrs);
            }).find("needs bf16, f16 or f32 inputs, got f64"),
            std::string::npos);
}

}  // namespace
}  // namespace tern::ops
