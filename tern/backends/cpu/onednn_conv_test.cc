// Tests for the oneDNN convolution kernels (conv2d, fused_conv2d, conv2d_backprop_input,
// conv2d_backprop_filter): agreement with ref over strides, paddings, dilations and groups, in
// f32 and bf16; selection and decline reasons.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

#include "tern/backends/cpu/onednn_conv.h"
#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

using Ints = std::vector<int64_t>;

struct ConvCase {
  Shape x, filter;
  ops::Attrs attrs;
};

std::vector<ConvCase> conv_cases() {
  return {
      {{2, 7, 6, 3}, {3, 3, 3, 4}, {{"padding", std::string("SAME")}}},
      {{2, 7, 6, 3}, {3, 3, 3, 4}, {{"padding", std::string("VALID")}}},
      {{1, 9, 8, 4}, {3, 2, 4, 5}, {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}}},
      {{1, 9, 8, 4}, {3, 3, 4, 5}, {{"padding", std::string("VALID")}, {"strides", Ints{2, 3}}}},
      {{2, 8, 8, 3}, {3, 3, 3, 2}, {{"padding", std::string("SAME")}, {"dilations", Ints{2, 2}}}},
      {{1, 6, 7, 2},
       {2, 3, 2, 3},
       {{"padding", std::string("EXPLICIT")}, {"explicit_paddings", Ints{1, 0, 2, 1}}}},
      {{2, 5, 5, 6}, {3, 3, 3, 4}, {{"padding", std::string("SAME")}, {"groups", int64_t{2}}}},
      {{2, 6, 6, 8}, {3, 3, 1, 8}, {{"padding", std::string("SAME")}, {"groups", int64_t{8}}}},
      {{2, 6, 6, 16}, {1, 1, 16, 32}, {}},
      {{4, 10, 10, 32}, {3, 3, 32, 48}, {{"padding", std::string("SAME")}}},
  };
}

class OneDnnConv : public OneDnnDTypeTest {
 protected:
  double tol() const { return GetParam() == DType::kF32 ? 1e-5 : 2e-2; }
  // f32 3x3 stride-1 convolutions with 16k channels run as Winograd (choose_conv_algorithm),
  // whose input/output transforms cost about one more decimal digit: ~2.5e-5 relative here.
  double tol(const ConvCase& c) const {
    bool winograd = GetParam() == DType::kF32 && c.filter[0] == 3 && c.filter[1] == 3 &&
                    c.filter[2] % 16 == 0 && c.filter[3] % 16 == 0 && !c.attrs.has("strides") &&
                    !c.attrs.has("dilations") && !c.attrs.has("groups");
    return winograd ? 1e-4 : tol();
  }
};

TEST_P(OneDnnConv, ForwardAndBackpropsMatchRef) {
  DType d = GetParam();
  uint64_t seed = 1;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(str_cat("x ", c.x, " filter ", c.filter));
    Tensor x = random_tensor(d, c.x, seed++);
    Tensor f = random_tensor(d, c.filter, seed++);
    expect_onednn_matches_ref("conv2d", {x, f}, c.attrs, tol(c));
    runtime::EagerOptions ref;
    ref.kernel = "ref";
    Tensor y = runtime::eager_call1("conv2d", {x, f}, c.attrs, ref);
    Tensor dy = random_tensor(d, y.shape(), seed++);
    ops::Attrs in_attrs = c.attrs;
    in_attrs.set("input_shape", c.x.dims());
    expect_onednn_matches_ref("conv2d_backprop_input", {dy, f}, in_attrs, tol(c));
    ops::Attrs filter_attrs = c.attrs;
    filter_attrs.set("filter_shape", c.filter.dims());
    expect_onednn_matches_ref("conv2d_backprop_filter", {x, dy}, filter_attrs, tol(c));
  }
}

// conv2d_backprop_filter takes three paths: Winograd F(2x2, 3x3) for f32 3x3 stride-1 layers with
// enough tiles (winograd_f2_applies), an im2col GEMM for other layers with at most 2048 output
// pixels, and oneDNN's backward-weights convolution above that; each against ref, also with bf16
// inputs and an f32 result (what mixed_bfloat16 compiles: dfilter_dtype = "f32"; widened to f32,
// it takes the f32 paths). ctest conv_no_winograd_f2 runs the first case as a GEMM too.
TEST_P(OneDnnConv, FilterGradientBothPathsMatchRef) {
  DType d = GetParam();
  uint64_t seed = 300;
  struct Case {
    Shape x, filter;
    ops::Attrs attrs;
  };
  const std::vector<Case> cases = {
      {{2, 9, 9, 64}, {3, 3, 64, 64}, {{"padding", std::string("SAME")}}},  // F2 (50 tiles)
      {{2, 9, 9, 32}, {3, 3, 32, 16}, {{"padding", std::string("SAME")}}},  // GEMM, 162 rows
      {{2, 9, 8, 8},
       {3, 3, 8, 8},
       {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}, {"dilations", Ints{1, 1}}}},
      {{4, 24, 24, 8}, {3, 3, 8, 16}, {{"padding", std::string("SAME")}}},  // conv, 2304 rows
      {{1, 5, 5, 32}, {3, 3, 32, 16}, {{"padding", std::string("SAME")}}},  // GEMM (9 tiles)
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(str_cat("x ", c.x, " filter ", c.filter));
    Tensor x = random_tensor(d, c.x, seed++);
    runtime::EagerOptions ref;
    ref.kernel = "ref";
    Tensor y =
        runtime::eager_call1("conv2d", {x, random_tensor(d, c.filter, seed++)}, c.attrs, ref);
    Tensor dy = random_tensor(d, y.shape(), seed++);
    ops::Attrs attrs = c.attrs;
    attrs.set("filter_shape", c.filter.dims());
    // Sums of up to 2304 products per element: f32 allowed 5e-5 relative. bf16 as F(2x2, 3x3)
    // (TERN_CONV_WINOGRAD=2): bf16 products, compared with the result's scale.
    const double t = d == DType::kF32 ? 5e-5 : tol();
    const bool of_scale = d == DType::kBF16 && cpu::onednn::winograd_tile_bf16(ops::conv2d_geometry(
                                                   c.x, c.filter, c.attrs)) == 2;
    expect_onednn_matches_ref("conv2d_backprop_filter", {x, dy}, attrs, t, of_scale);
    if (d == DType::kBF16) {
      attrs.set("dfilter_dtype", std::string("f32"));
      expect_onednn_matches_ref("conv2d_backprop_filter", {x, dy}, attrs, t, of_scale);
    }
  }
}

// conv2d_backprop_input takes two paths: stride-1 ungrouped convolutions run as the forward
// convolution of the flipped filter (bf16 always; f32 with Winograd or on images of at least
// 7x7), the rest as oneDNN's backward-data convolution. Each case names the path it must take
// and is checked against ref: VALID (paddings 2 on the forward), dilation, an asymmetric
// 2x3 filter with asymmetric explicit paddings, 1x1, Winograd's size, and paddings the flipped
// forward cannot have (3 > kh - 1).
TEST_P(OneDnnConv, InputGradientBothPathsMatchRef) {
  // With the switch off (ctest conv_primitives_only) the same cases check oneDNN's backward data.
  const char* off = std::getenv("TERN_INPUT_GRADIENT_AS_FORWARD");
  const bool enabled = !(off && std::string_view(off) == "0");
  DType d = GetParam();
  const bool f32 = d == DType::kF32;
  struct Case {
    Shape x, filter;
    ops::Attrs attrs;
    bool forward;  // expected path
  };
  const std::vector<Case> cases = {
      {{2, 9, 9, 16}, {3, 3, 16, 8}, {{"padding", std::string("VALID")}}, true},
      {{2, 8, 8, 6},
       {3, 3, 6, 4},
       {{"padding", std::string("SAME")}, {"dilations", Ints{2, 2}}},
       true},
      {{1, 9, 10, 4},
       {2, 3, 4, 5},
       {{"padding", std::string("EXPLICIT")}, {"explicit_paddings", Ints{1, 0, 2, 1}}},
       true},
      {{2, 7, 7, 16}, {1, 1, 16, 32}, {}, true},
      {{2, 5, 5, 16}, {3, 3, 16, 16}, {{"padding", std::string("SAME")}}, !f32},    // f32: < 7x7
      {{2, 32, 32, 16}, {3, 3, 16, 32}, {{"padding", std::string("SAME")}}, true},  // f32: Winograd
      {{2, 9, 9, 8},
       {3, 3, 8, 8},
       {{"padding", std::string("EXPLICIT")}, {"explicit_paddings", Ints{3, 3, 0, 0}}},
       false},
      {{2, 9, 9, 8},
       {3, 3, 8, 8},
       {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}},
       false},
      {{2, 9, 9, 8},
       {3, 3, 4, 8},
       {{"padding", std::string("SAME")}, {"groups", int64_t{2}}},
       false},
  };
  uint64_t seed = 700;
  for (const Case& c : cases) {
    SCOPED_TRACE(str_cat("x ", c.x, " filter ", c.filter));
    ops::Conv2dGeometry g = ops::conv2d_geometry(c.x, c.filter, c.attrs);
    const bool forward = cpu::onednn::input_gradient_forward_descs(g, d).has_value();
    EXPECT_EQ(forward, enabled && c.forward);
    Tensor f = random_tensor(d, c.filter, seed++);
    runtime::EagerOptions ref;
    ref.kernel = "ref";
    Tensor y = runtime::eager_call1("conv2d", {random_tensor(d, c.x, seed++), f}, c.attrs, ref);
    Tensor dy = random_tensor(d, y.shape(), seed++);
    ops::Attrs attrs = c.attrs;
    attrs.set("input_shape", c.x.dims());
    // f32 Winograd: ~1e-5 relative from its transforms (see tol(ConvCase)).
    expect_onednn_matches_ref("conv2d_backprop_input", {dy, f}, attrs, f32 ? 1e-4 : tol());
  }
}

// Convolutions with at most kConvGemmMaxPixels output pixels per image run as GEMMs (forward,
// input gradient; the filter gradient's GEMM covers them too): against ref with SAME, stride 2,
// dilation 2, asymmetric explicit paddings, 1x1 (the patches are x itself; at strides 2 and 3 the
// input gradient's rows copied to the pixels they belong to) and 2x2 images, and
// fused_conv2d's bias, residual and activation on the matmul.
TEST_P(OneDnnConv, SmallImagesAsGemmMatchRef) {
  // With the switch off (ctest conv_primitives_only) the same cases check oneDNN's convolutions.
  const char* off = std::getenv("TERN_CONV_GEMM");
  const bool enabled = !(off && std::string_view(off) == "0");
  DType d = GetParam();
  const std::vector<ConvCase> cases = {
      {{4, 4, 4, 32}, {3, 3, 32, 48}, {{"padding", std::string("SAME")}}},
      {{2, 2, 2, 16}, {3, 3, 16, 16}, {{"padding", std::string("SAME")}}},
      {{3, 8, 8, 8}, {3, 3, 8, 16}, {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}}},
      {{2, 4, 4, 16}, {1, 1, 16, 8}, {}},
      {{3, 7, 7, 16},
       {1, 1, 16, 8},
       {{"strides", Ints{2, 2}}}},  // rows copied to every other pixel
      {{2, 8, 6, 16}, {1, 1, 16, 24}, {{"strides", Ints{2, 3}}}},
      {{2, 4, 4, 8}, {3, 3, 8, 8}, {{"padding", std::string("SAME")}, {"dilations", Ints{2, 2}}}},
      {{1, 3, 4, 8},
       {2, 3, 8, 8},
       {{"padding", std::string("EXPLICIT")}, {"explicit_paddings", Ints{1, 0, 2, 1}}}},
  };
  uint64_t seed = 900;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(str_cat("x ", c.x, " filter ", c.filter));
    EXPECT_EQ(cpu::onednn::conv_gemm_applies(ops::conv2d_geometry(c.x, c.filter, c.attrs), d),
              enabled);
    Tensor x = random_tensor(d, c.x, seed++);
    Tensor f = random_tensor(d, c.filter, seed++);
    expect_onednn_matches_ref("conv2d", {x, f}, c.attrs, tol());
    runtime::EagerOptions ref;
    ref.kernel = "ref";
    Tensor y = runtime::eager_call1("conv2d", {x, f}, c.attrs, ref);
    ops::Attrs fused = c.attrs;
    fused.set("activation", std::string("relu"));
    fused.set("has_bias", true);
    fused.set("has_residual", true);
    expect_onednn_matches_ref(
        "fused_conv2d",
        {x, f, random_tensor(d, {c.filter[3]}, seed++), random_tensor(d, y.shape(), seed++)}, fused,
        tol());
    Tensor dy = random_tensor(d, y.shape(), seed++);
    ops::Attrs in_attrs = c.attrs;
    in_attrs.set("input_shape", c.x.dims());
    expect_onednn_matches_ref("conv2d_backprop_input", {dy, f}, in_attrs, tol());
    ops::Attrs filter_attrs = c.attrs;
    filter_attrs.set("filter_shape", c.filter.dims());
    expect_onednn_matches_ref("conv2d_backprop_filter", {x, dy}, filter_attrs, tol());
  }
  // Larger images, grouped convolutions: oneDNN's convolution primitives.
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  EXPECT_FALSE(
      cpu::onednn::conv_gemm_applies(ops::conv2d_geometry({2, 5, 5, 8}, {3, 3, 8, 8}, same), d));
  EXPECT_FALSE(cpu::onednn::conv_gemm_applies(
      ops::conv2d_geometry({2, 4, 4, 8}, {3, 3, 4, 8},
                           {{"padding", std::string("SAME")}, {"groups", int64_t{2}}}),
      d));
}

// ValidTapsConv (small images, many taps in the padding): each direction against ref, every
// element of its output written (outputs start as NaN, as a reused buffer), on a 3x3 SAME layer
// at 2x2 and 1x1, a 2x3 filter whose explicit paddings leave some windows wholly in the padding
// (their pixels get the bias only, the taps no pixel reads a zero gradient), dilation 2 and
// stride 2; the forward with a bias and a residual; the filter gradient in f32 and in the inputs'
// dtype.
TEST_P(OneDnnConv, ValidTapsMatchRef) {
  using cpu::onednn::ValidTapsConv;
  DType d = GetParam();
  const std::vector<ConvCase> cases = {
      {{3, 2, 2, 16}, {3, 3, 16, 24}, {{"padding", std::string("SAME")}}},
      {{2, 1, 1, 8}, {3, 3, 8, 8}, {{"padding", std::string("SAME")}}},
      {{2, 2, 3, 8},
       {2, 3, 8, 16},
       {{"padding", std::string("EXPLICIT")}, {"explicit_paddings", Ints{3, 1, 0, 4}}}},
      {{2, 4, 4, 8}, {3, 3, 8, 8}, {{"padding", std::string("SAME")}, {"dilations", Ints{2, 2}}}},
      {{2, 3, 3, 8}, {3, 3, 8, 16}, {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}}},
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto filled = [&](DType dtype, const Shape& s) {
    Tensor t(dtype, s);
    for (int64_t i = 0; i < t.num_elements(); ++i) t.set(i, nan);
    return t;
  };
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  uint64_t seed = 1300;
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(str_cat("x ", c.x, " filter ", c.filter));
    const ops::Conv2dGeometry g = ops::conv2d_geometry(c.x, c.filter, c.attrs);
    EXPECT_LE(cpu::onednn::valid_taps_useful(g) * 4, g.out_h * g.out_w * g.kh * g.kw * 3);
    Tensor x = random_tensor(d, c.x, seed++), f = random_tensor(d, c.filter, seed++);
    Tensor bias = random_tensor(d, {c.filter[3]}, seed++);
    Tensor residual = random_tensor(d, g.output_shape(), seed++);
    Tensor dy = random_tensor(d, g.output_shape(), seed++);
    // y = conv(x) + bias + residual.
    cpu::onednn::Epilogue ep;
    ep.bias_input = 2;
    ep.residual_input = 3;
    Tensor y(d, g.output_shape());
    std::memcpy(y.raw_data(), residual.raw_data(), y.nbytes());
    ValidTapsConv(g, d, ValidTapsConv::Direction::kForward, ep)
        .forward(x.raw_data(), f.raw_data(), bias.raw_data(), y.raw_data());
    ops::Attrs fused = c.attrs;
    fused.set("has_bias", true);
    fused.set("has_residual", true);
    EXPECT_LE(
        max_rel_error(y, runtime::eager_call1("fused_conv2d", {x, f, bias, residual}, fused, ref)),
        tol());
    Tensor dx = filled(d, c.x);
    ValidTapsConv(g, d, ValidTapsConv::Direction::kInputGradient)
        .input_gradient(dy.raw_data(), f.raw_data(), dx.raw_data());
    ops::Attrs in_attrs = c.attrs;
    in_attrs.set("input_shape", c.x.dims());
    EXPECT_LE(
        max_rel_error(dx, runtime::eager_call1("conv2d_backprop_input", {dy, f}, in_attrs, ref)),
        tol());
    ops::Attrs filter_attrs = c.attrs;
    filter_attrs.set("filter_shape", c.filter.dims());
    Tensor want = runtime::eager_call1("conv2d_backprop_filter", {x, dy}, filter_attrs, ref);
    for (DType dw_dtype : {DType::kF32, d}) {
      Tensor dw = filled(dw_dtype, c.filter);
      ValidTapsConv(g, d, ValidTapsConv::Direction::kFilterGradient, {}, dw_dtype)
          .filter_gradient(x.raw_data(), dy.raw_data(), dw.raw_data());
      EXPECT_LE(max_rel_error(dw, want), tol()) << dtype_name(dw_dtype);
    }
  }
}

// Where ValidTapsConv applies: at most 3/4 of the taps inside the image, at most
// kConvGemmMaxPixels output pixels, ungrouped; none with TERN_CONV_VALID_TAPS=0 (ctest
// conv_valid_taps_off runs the convolution tests so; conv_valid_taps_bad_env a bad value).
TEST(ConvValidTaps, WhereItApplies) {
  const char* setting = std::getenv("TERN_CONV_VALID_TAPS");
  if (setting != nullptr && std::string_view(setting) == "0") {
    GTEST_SKIP() << "TERN_CONV_VALID_TAPS=0";  // (a bad value: the first call throws)
  }
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  const ops::Attrs stride2 = {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}};
  auto applies = [](Shape x, Shape f, const ops::Attrs& attrs, DType d) {
    return cpu::onednn::valid_taps_apply(ops::conv2d_geometry(x, f, attrs), d);
  };
  for (DType d : {DType::kF32, DType::kBF16}) {
    EXPECT_TRUE(applies({32, 2, 2, 512}, {3, 3, 512, 512}, same, d));      // 4 of 9 taps
    EXPECT_TRUE(applies({32, 4, 4, 256}, {3, 3, 256, 256}, same, d));      // 100 of 144
    EXPECT_FALSE(applies({32, 8, 8, 256}, {3, 3, 256, 512}, stride2, d));  // 121 of 144
    EXPECT_FALSE(applies({32, 8, 8, 64}, {3, 3, 64, 64}, same, d));        // 64 pixels
    EXPECT_FALSE(applies({32, 4, 4, 64}, {1, 1, 64, 64}, same, d));        // every tap inside
    EXPECT_FALSE(applies({32, 2, 2, 64}, {3, 3, 32, 64},
                         {{"padding", std::string("SAME")}, {"groups", int64_t{2}}}, d));
  }
  EXPECT_FALSE(applies({32, 2, 2, 512}, {3, 3, 512, 512}, same, DType::kF16));
}

// InputGradientGemm of a 1x1 layer at stride 2 writes every pixel of dx, the ones no output
// pixel reads as zeros: dx starts as NaN (a reused buffer), the result is ref's.
TEST_P(OneDnnConv, StridedOneByOneInputGradientWritesEveryPixel) {
  DType d = GetParam();
  const Shape xs{3, 7, 7, 16}, fs{1, 1, 16, 8};
  const ops::Attrs strided = {{"strides", Ints{2, 2}}};
  const ops::Conv2dGeometry g = ops::conv2d_geometry(xs, fs, strided);
  Tensor f = random_tensor(d, fs, 31), dy = random_tensor(d, g.output_shape(), 32);
  Tensor dx(d, xs);
  for (int64_t i = 0; i < dx.num_elements(); ++i) {
    dx.set(i, std::numeric_limits<double>::quiet_NaN());
  }
  cpu::onednn::InputGradientGemm(g, d).run(dy.raw_data(), f.raw_data(), dx.raw_data());
  for (int64_t i = 0; i < dx.num_elements(); ++i) ASSERT_FALSE(std::isnan(dx.get(i))) << i;
  ops::Attrs attrs = strided;
  attrs.set("input_shape", xs.dims());
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  EXPECT_LE(max_rel_error(dx, runtime::eager_call1("conv2d_backprop_input", {dy, f}, attrs, ref)),
            tol());
}

// Winograd keeps src/dst in blocked layouts: the nhwc reorders in and out, and the residual
// added by the reorder out (relu or no activation) or reordered into the dst layout before the
// primitive's sum post-op (an activation that must see the sum: tanh), against ref.
TEST_P(OneDnnConv, WinogradShapesWithEpiloguesMatchRef) {
  DType d = GetParam();
  uint64_t seed = 90;
  for (int64_t hw : {32, 37}) {  // >= kWinogradMinOutputPixels (2048) at batch 2
    SCOPED_TRACE(str_cat("hw ", hw));
    std::vector<Tensor> in = {
        random_tensor(d, {2, hw, hw, 16}, seed++), random_tensor(d, {3, 3, 16, 32}, seed++),
        random_tensor(d, {32}, seed++), random_tensor(d, {2, hw, hw, 32}, seed++)};
    ConvCase c{{2, hw, hw, 16}, {3, 3, 16, 32}, {{"padding", std::string("SAME")}}};
    for (const char* act : {"relu", "none", "tanh"}) {
      SCOPED_TRACE(act);
      expect_onednn_matches_ref("fused_conv2d", in,
                                {{"padding", std::string("SAME")},
                                 {"activation", std::string(act)},
                                 {"has_bias", true},
                                 {"has_residual", true}},
                                tol(c));
    }
    ops::Attrs valid = {{"padding", std::string("VALID")}};
    expect_onednn_matches_ref("conv2d", {in[0], in[1]}, valid, tol(c));
  }
}

// Which convolutions choose_conv_algorithm sends to Winograd: f32 3x3 stride-1 with 16k channels
// and a scratchpad under the cap; everything else stays direct.
TEST(OneDnnConvAlgorithm, WinogradOnlyWhereItApplies) {
  if (const char* v = std::getenv("TERN_ONEDNN_WINOGRAD"); v && std::string_view(v) == "0") {
    GTEST_SKIP() << "TERN_ONEDNN_WINOGRAD=0";
  }
  if (dnnl::get_effective_cpu_isa() < dnnl::cpu_isa::avx512_core) {
    GTEST_SKIP() << "oneDNN implements Winograd convolutions for AVX-512 CPUs only";
  }
  runtime::initialize();
  auto algorithm = [](Shape x, Shape f, ops::Attrs attrs, DType d) {
    cpu::onednn::ConvDescs desc =
        cpu::onednn::conv_descs(ops::conv2d_geometry(x, f, attrs), d, false);
    cpu::onednn::choose_conv_algorithm(desc, [](const cpu::onednn::ConvDescs& c) {
      return cpu::onednn::conv_forward_pd(c).scratchpad_desc().get_size();
    });
    return desc.alg;
  };
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  const auto wino = dnnl::algorithm::convolution_winograd;
  const auto direct = dnnl::algorithm::convolution_direct;
  EXPECT_EQ(algorithm({32, 32, 32, 64}, {3, 3, 64, 64}, same, DType::kF32), wino);
  if (cpu_supports_bf16()) {
    EXPECT_EQ(algorithm({32, 32, 32, 64}, {3, 3, 64, 64}, same, DType::kBF16), direct);
  }
  EXPECT_EQ(algorithm({32, 32, 32, 64}, {3, 3, 64, 64},
                      {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}}, DType::kF32),
            direct);
  EXPECT_EQ(algorithm({32, 32, 32, 8}, {3, 3, 8, 64}, same, DType::kF32), direct);  // 8 channels
  EXPECT_EQ(algorithm({32, 32, 32, 64}, {1, 1, 64, 64}, {}, DType::kF32), direct);  // 1x1
  // Too few output pixels (batch x height x width < kWinogradMinOutputPixels): a batch-1 call.
  EXPECT_EQ(algorithm({1, 32, 32, 64}, {3, 3, 64, 64}, same, DType::kF32), direct);
  EXPECT_EQ(algorithm({2, 32, 32, 64}, {3, 3, 64, 64}, same, DType::kF32), wino);
  // ResNet-18's 512-channel layers: Winograd would need ~49 MB of scratchpad (> the cap).
  EXPECT_EQ(algorithm({32, 4, 4, 512}, {3, 3, 512, 512}, same, DType::kF32), direct);
}

TEST_P(OneDnnConv, FusedEpiloguesMatchRef) {
  DType d = GetParam();
  uint64_t seed = 50;
  for (const char* act : {"none", "relu", "gelu_tanh", "gelu_erf", "sigmoid", "tanh"}) {
    for (int mask = 0; mask < 4; ++mask) {
      bool has_bias = mask & 1, has_residual = mask & 2;
      SCOPED_TRACE(str_cat(act, " bias ", has_bias, " residual ", has_residual));
      std::vector<Tensor> in = {random_tensor(d, {2, 6, 5, 8}, seed++),
                                random_tensor(d, {3, 3, 8, 16}, seed++)};
      if (has_bias) in.push_back(random_tensor(d, {16}, seed++));
      if (has_residual) in.push_back(random_tensor(d, {2, 3, 3, 16}, seed++));
      expect_onednn_matches_ref("fused_conv2d", in,
                                {{"strides", Ints{2, 2}},
                                 {"padding", std::string("SAME")},
                                 {"activation", std::string(act)},
                                 {"has_bias", has_bias},
                                 {"has_residual", has_residual}},
                                tol());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, OneDnnConv, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Widened to f32 (onednn_widen.cc): each direction is the f32 kernel on the bf16 values, bit for
// bit (with the forward's epilogue, and the filter gradient's f32 result as mixed precision
// compiles it).
TEST(OneDnnConvWidened, IsTheF32KernelOnTheBf16Values) {
  uint64_t seed = 50;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(str_cat("x ", c.x, " filter ", c.filter));
    Tensor x = random_tensor(DType::kBF16, c.x, seed++);
    Tensor f = random_tensor(DType::kBF16, c.filter, seed++);
    expect_widened_is_f32_kernel("conv2d", {x, f}, c.attrs);
    Tensor y = runtime::eager_call1("conv2d", {x, f}, c.attrs);
    Tensor dy = random_tensor(DType::kBF16, y.shape(), seed++);
    ops::Attrs in_attrs = c.attrs;
    in_attrs.set("input_shape", c.x.dims());
    expect_widened_is_f32_kernel("conv2d_backprop_input", {dy, f}, in_attrs);
    ops::Attrs filter_attrs = c.attrs;
    filter_attrs.set("filter_shape", c.filter.dims());
    expect_widened_is_f32_kernel("conv2d_backprop_filter", {x, dy}, filter_attrs);
    filter_attrs.set("dfilter_dtype", std::string("f32"));
    expect_widened_is_f32_kernel("conv2d_backprop_filter", {x, dy}, filter_attrs);
  }
  Tensor x = random_tensor(DType::kBF16, {2, 8, 8, 16}, seed++);
  Tensor f = random_tensor(DType::kBF16, {3, 3, 16, 16}, seed++);
  Tensor bias = random_tensor(DType::kBF16, {16}, seed++);
  Tensor res = random_tensor(DType::kBF16, {2, 8, 8, 16}, seed++);
  expect_widened_is_f32_kernel("fused_conv2d", {x, f, bias, res},
                               {{"padding", std::string("SAME")},
                                {"activation", std::string("relu")},
                                {"has_bias", true},
                                {"has_residual", true}});
}

// On AMD CPUs with AVX512_BF16 (bf16 contractions native), bf16 layers that tern's f32
// F(4x4, 3x3) Winograd takes run it on their bf16 tensors in the native kernels' forward and
// filter gradient (winograd_tile_bf16): the widened candidate's result (the f32 kernel on the
// widened values, rounded once) bit for bit, with fused_conv2d's epilogue and either filter
// gradient dtype. (F(2x2, 3x3) multiplies bf16 transforms: not the widened kernel's bits;
// onednn_conv_winograd_test.cc, Bf16AgainstTheF32Run.)
TEST(OneDnnConvSelect, Bf16WinogradIsTheWidenedF32Kernel) {
  runtime::initialize();
  const std::string mode = cpu::bf16_contractions_mode();
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  if (cpu::onednn::winograd_tile_bf16(ops::conv2d_geometry({2, 8, 8, 64}, {3, 3, 64, 64}, same)) !=
      4) {
    GTEST_SKIP() << "no bf16 F(4x4, 3x3) Winograd here: " << mode;
  }
  runtime::EagerOptions native, widened;
  native.kernel = "onednn";
  widened.kernel = "onednn_f32";
  auto expect_same = [&](std::string_view op, const std::vector<Tensor>& in,
                         const ops::Attrs& attrs) {
    Tensor got = runtime::eager_call1(op, in, attrs, native);
    Tensor want = runtime::eager_call1(op, in, attrs, widened);
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0) << op;
  };
  uint64_t seed = 70;
  for (const Shape& xs : {Shape{2, 8, 8, 64}, Shape{2, 16, 16, 64}}) {
    SCOPED_TRACE(str_cat("x ", xs));
    Tensor x = random_tensor(DType::kBF16, xs, seed++);
    Tensor f = random_tensor(DType::kBF16, {3, 3, 64, 64}, seed++);
    Tensor bias = random_tensor(DType::kBF16, {64}, seed++);
    Tensor dy = random_tensor(DType::kBF16, xs, seed++);
    expect_same("conv2d", {x, f}, same);
    expect_same("fused_conv2d", {x, f, bias, dy},
                {{"padding", std::string("SAME")},
                 {"activation", std::string("relu")},
                 {"has_bias", true},
                 {"has_residual", true}});
    ops::Attrs attrs = same;
    attrs.set("filter_shape", Ints{3, 3, 64, 64});
    expect_same("conv2d_backprop_filter", {x, dy}, attrs);
    attrs.set("dfilter_dtype", std::string("f32"));
    expect_same("conv2d_backprop_filter", {x, dy}, attrs);
  }
}

TEST(OneDnnConvSelect, PickedAndDeclines) {
  EXPECT_EQ(selected_kernel("conv2d", {{DType::kF32, {1, 8, 8, 4}}, {DType::kF32, {3, 3, 4, 8}}}),
            "onednn");
  expect_onednn_picked_for_bf16("conv2d_backprop_filter",
                                {{DType::kBF16, {1, 8, 8, 4}}, {DType::kBF16, {1, 6, 6, 8}}},
                                {{"filter_shape", Ints{3, 3, 4, 8}}});
  EXPECT_NE(
      onednn_decline_reason("conv2d", {{DType::kF64, {1, 8, 8, 4}}, {DType::kF64, {3, 3, 4, 8}}})
          .find("f64"),
      std::string::npos);
  EXPECT_NE(
      onednn_decline_reason("conv2d", {{DType::kF32, {0, 8, 8, 4}}, {DType::kF32, {3, 3, 4, 8}}})
          .find("empty"),
      std::string::npos);
}

// Which input gradients run as GEMMs (input_gradient_gemm_applies): bf16 up to 16 output pixels
// an image, f32 up to 4, or up to 16 at a stride above 1; none with TERN_CONV_GEMM=0.
TEST(ConvGemm, InputGradientWhereItApplies) {
  if (std::getenv("TERN_CONV_GEMM") != nullptr) GTEST_SKIP() << "TERN_CONV_GEMM is set";
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  const ops::Attrs stride2 = {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}};
  auto applies = [](Shape x, Shape f, const ops::Attrs& attrs, DType d) {
    return cpu::onednn::input_gradient_gemm_applies(ops::conv2d_geometry(x, f, attrs), d);
  };
  EXPECT_TRUE(applies({32, 8, 8, 256}, {3, 3, 256, 512}, stride2, DType::kF32));  // 4x4 outputs
  EXPECT_TRUE(applies({32, 8, 8, 256}, {1, 1, 256, 512}, stride2, DType::kF32));
  EXPECT_FALSE(applies({32, 16, 16, 128}, {3, 3, 128, 256}, stride2, DType::kF32));  // 8x8
  EXPECT_FALSE(applies({32, 4, 4, 512}, {3, 3, 512, 512}, same, DType::kF32));
  EXPECT_TRUE(applies({32, 2, 2, 512}, {3, 3, 512, 512}, same, DType::kF32));
  EXPECT_TRUE(applies({32, 4, 4, 512}, {3, 3, 512, 512}, same, DType::kBF16));
}

// The error helpers the kernel tests compare with (onednn_test_util.h) see a NaN or an infinity
// on one side only, and a different element count, as an infinite error; the same NaN or
// infinity on both sides as none.
TEST(TestUtil, ErrorsSeeNaNAndInfinity) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto t = [](std::vector<float> v) {
    Tensor x(DType::kF32, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) x.set(static_cast<int64_t>(i), v[i]);
    return x;
  };
  for (auto error : {max_rel_error, max_scaled_error}) {
    EXPECT_GT(error(t({1, nan}), t({1, 2})), 1e300);
    EXPECT_GT(error(t({1, 2}), t({1, nan})), 1e300);
    EXPECT_GT(error(t({1, inf}), t({1, 2})), 1e300);
    EXPECT_GT(error(t({1, inf}), t({1, -inf})), 1e300);
    EXPECT_GT(error(t({1, 2}), t({1, 2, 3})), 1e300);
    EXPECT_EQ(error(t({1, nan, inf}), t({1, nan, inf})), 0.0);
    EXPECT_NEAR(error(t({1, 2.5f}), t({1, 2})), 0.5 / 3, 1e-12);
  }
}

}  // namespace
}  // namespace tern::testing
