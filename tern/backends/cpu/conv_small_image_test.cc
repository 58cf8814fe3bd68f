// The small-image convolution kernel (conv_small_image_cpu.cc): which signatures it takes (a
// constant filter only), its results against ref over every geometry it is compiled for, with
// each epilogue, and its packed filter kept per buffer. Also the Winograd tile a kept filter gets.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/onednn_conv.h"
#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

using Ints = std::vector<int64_t>;

// The signature of `op` with its filter (input 1) marked constant, as a served model's.
kernels::KernelSignature constant_filter(std::string_view op, const std::vector<TensorType>& in,
                                         ops::Attrs* attrs, bool constant = true) {
  kernels::KernelSignature sig = signature_of(op, in, attrs);
  sig.constant_inputs.assign(in.size(), false);
  sig.constant_inputs[1] = constant;
  return sig;
}

std::string chosen(std::string_view op, const std::vector<TensorType>& in, ops::Attrs attrs,
                   bool constant = true) {
  return kernels::KernelRegistry::global()
      .select(constant_filter(op, in, &attrs, constant))
      .candidate->name;
}

ops::Attrs fused(std::string activation, bool bias, bool residual, ops::Attrs base = {}) {
  base.set("activation", std::move(activation));
  base.set("has_bias", bias);
  base.set("has_residual", residual);
  return base;
}

const ops::Attrs kSame = {{"padding", std::string("SAME")}};

TEST(ConvSmallImage, TakesConstantFiltersOverSmallImages) {
  if (!runs_avx512_kernels()) GTEST_SKIP() << "needs AVX-512 and the vectorized kernels";
  auto conv = [](DType d, Shape x, Shape f, ops::Attrs attrs = kSame, bool constant = true) {
    return chosen("conv2d", {{d, x}, {d, f}}, attrs, constant);
  };
  EXPECT_EQ(conv(DType::kF32, {1, 4, 4, 512}, {3, 3, 512, 512}), "cpu_small_image");
  EXPECT_EQ(conv(DType::kF32, {4, 4, 4, 32}, {3, 3, 32, 16}), "cpu_small_image");  // 64 pixels
  EXPECT_EQ(conv(DType::kF32, {1, 8, 8, 256}, {3, 3, 256, 512},
                 {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}}),
            "cpu_small_image");
  EXPECT_NE(conv(DType::kF32, {1, 4, 4, 512}, {3, 3, 512, 512}, kSame, false), "cpu_small_image");
  EXPECT_NE(conv(DType::kF32, {5, 4, 4, 32}, {3, 3, 32, 16}), "cpu_small_image");  // 80 pixels
  EXPECT_NE(conv(DType::kF32, {1, 8, 8, 32}, {3, 3, 32, 16}), "cpu_small_image");  // 8x8 outputs
  EXPECT_NE(conv(DType::kF32, {1, 4, 4, 32}, {3, 3, 32, 24}),
            "cpu_small_image");  // 24 channels out
  EXPECT_NE(conv(DType::kF32, {1, 4, 4, 32}, {5, 5, 32, 16}), "cpu_small_image");  // 5x5
  EXPECT_NE(conv(DType::kF32, {1, 4, 4, 32}, {3, 3, 32, 16}, {}),
            "cpu_small_image");  // VALID: 2x2 of 4x4
  EXPECT_NE(conv(DType::kF32, {1, 4, 4, 32}, {3, 3, 32, 16},
                 {{"padding", std::string("SAME")}, {"dilations", Ints{2, 2}}}),
            "cpu_small_image");
  if (cpu_supports_bf16()) {
    EXPECT_NE(conv(DType::kBF16, {1, 4, 4, 32}, {3, 3, 32, 16}), "cpu_small_image");
  }
  const std::vector<TensorType> with_bias = {
      {DType::kF32, {1, 4, 4, 32}}, {DType::kF32, {3, 3, 32, 16}}, {DType::kF32, {16}}};
  EXPECT_EQ(chosen("fused_conv2d", with_bias, fused("relu", true, false, kSame)),
            "cpu_small_image");
  EXPECT_NE(chosen("fused_conv2d", with_bias, fused("tanh", true, false, kSame)),
            "cpu_small_image");
  // Why it declines, in the selection's words.
  ops::Attrs attrs = kSame;
  const auto declined =
      kernels::KernelRegistry::global()
          .select(constant_filter("conv2d",
                                  {{DType::kF32, {1, 4, 4, 512}}, {DType::kF32, {3, 3, 512, 512}}},
                                  &attrs, false))
          .declined;
  bool said = false;
  for (const std::string& d : declined) said |= d == "cpu_small_image: the filter is not constant";
  EXPECT_TRUE(said) << ::testing::PrintToString(declined);
}

struct Case {
  Shape x;
  int64_t c_out;
  ops::Attrs attrs;
};

// Every geometry of kGeometries, odd input channel counts, batches up to the pixel limit.
std::vector<Case> cases() {
  const ops::Attrs s2_same = {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}};
  const ops::Attrs s2_pad1 = {{"padding", std::string("EXPLICIT")},
                              {"explicit_paddings", Ints{1, 1, 1, 1}},
                              {"strides", Ints{2, 2}}};
  return {{{1, 1, 1, 7}, 16, kSame},    {{3, 2, 2, 5}, 32, kSame},    {{1, 4, 4, 37}, 48, kSame},
          {{4, 4, 4, 16}, 16, kSame},   {{1, 2, 2, 9}, 16, s2_same},  {{2, 4, 4, 33}, 32, s2_same},
          {{1, 8, 8, 21}, 16, s2_same}, {{1, 2, 2, 9}, 16, s2_pad1},  {{1, 4, 4, 11}, 32, s2_pad1},
          {{2, 8, 8, 3}, 16, s2_pad1},  {{1, 3, 3, 13}, 16, s2_same}, {{1, 7, 7, 64}, 64, s2_same}};
}

// The kernel's outputs (plain conv2d; bias + relu; bias + residual + relu, the residual in the
// output's buffer as the planner puts it) against ref's.
TEST(ConvSmallImage, MatchesRefOnEveryGeometry) {
  if (!runs_avx512_kernels()) GTEST_SKIP() << "needs AVX-512 and the vectorized kernels";
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  uint64_t seed = 1;
  for (const Case& c : cases()) {
    SCOPED_TRACE(str_cat("x ", c.x, " c_out ", c.c_out));
    const Shape fs{3, 3, c.x[3], c.c_out};
    const ops::Conv2dGeometry g = ops::conv2d_geometry(c.x, fs, c.attrs);
    Tensor x = random_tensor(DType::kF32, c.x, seed++);
    Tensor f = random_tensor(DType::kF32, fs, seed++);
    Tensor bias = random_tensor(DType::kF32, {c.c_out}, seed++);
    Tensor residual = random_tensor(DType::kF32, g.output_shape(), seed++);
    struct Form {
      std::string op;
      ops::Attrs attrs;
      std::vector<Tensor> inputs;
    };
    const std::vector<Form> forms = {
        {"conv2d", c.attrs, {x, f}},
        {"fused_conv2d", fused("relu", true, false, c.attrs), {x, f, bias}},
        {"fused_conv2d", fused("relu", true, true, c.attrs), {x, f, bias, residual}}};
    for (const Form& form : forms) {
      SCOPED_TRACE(str_cat(form.op, " with ", form.inputs.size(), " inputs"));
      std::vector<TensorType> types;
      for (const Tensor& t : form.inputs) types.push_back(t.type());
      ops::Attrs attrs = form.attrs;
      auto sel = kernels::KernelRegistry::global().select(constant_filter(form.op, types, &attrs));
      ASSERT_EQ(sel.candidate->name, "cpu_small_image");
      std::vector<Tensor> out = {form.inputs.size() == 4 ? residual.clone()
                                                         : Tensor(DType::kF32, g.output_shape())};
      std::vector<Tensor> in = form.inputs;
      if (in.size() == 4) in[3] = out[0];  // planned in place: the residual is the output
      kernels::KernelContext ctx{in, out, attrs, host_stream()};
      sel.kernel->run(ctx);
      Tensor want = runtime::eager_call1(form.op, form.inputs, attrs, ref);
      EXPECT_LE(max_rel_error(out[0], want), 1e-5);
    }
  }
}

// NaN in x reaches the outputs whose taps read it, through relu, as in ref; a zero pixel's
// neighbours are untouched.
TEST(ConvSmallImage, NaNInputSpreadsAsInRef) {
  if (!runs_avx512_kernels()) GTEST_SKIP() << "needs AVX-512 and the vectorized kernels";
  const Shape xs{1, 4, 4, 8}, fs{3, 3, 8, 16};
  Tensor x = random_tensor(DType::kF32, xs, 7);
  x.set(0, std::numeric_limits<double>::quiet_NaN());  // pixel (0, 0), channel 0
  Tensor f = random_tensor(DType::kF32, fs, 8), bias = random_tensor(DType::kF32, {16}, 9);
  ops::Attrs attrs = fused("relu", true, false, kSame);
  auto sel = kernels::KernelRegistry::global().select(
      constant_filter("fused_conv2d", {x.type(), f.type(), bias.type()}, &attrs));
  ASSERT_EQ(sel.candidate->name, "cpu_small_image");
  std::vector<Tensor> in = {x, f, bias}, out = {Tensor(DType::kF32, {1, 4, 4, 16})};
  kernels::KernelContext ctx{in, out, attrs, host_stream()};
  sel.kernel->run(ctx);
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  Tensor want = runtime::eager_call1("fused_conv2d", in, attrs, ref);
  int nans = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    ASSERT_EQ(std::isnan(out[0].get(i)), std::isnan(want.get(i))) << "element " << i;
    nans += std::isnan(want.get(i)) ? 1 : 0;
  }
  EXPECT_EQ(nans, 4 * 16);  // outputs (0..1, 0..1), every channel
}

// The packed filter is made at the first run and kept while the buffer is the same; another
// buffer is packed again.
TEST(ConvSmallImage, PackedFilterKeptPerBuffer) {
  if (!runs_avx512_kernels()) GTEST_SKIP() << "needs AVX-512 and the vectorized kernels";
  const Shape xs{1, 4, 4, 24}, fs{3, 3, 24, 32};
  ops::Attrs attrs = kSame;
  auto sel = kernels::KernelRegistry::global().select(
      constant_filter("conv2d", {{DType::kF32, xs}, {DType::kF32, fs}}, &attrs));
  ASSERT_EQ(sel.candidate->name, "cpu_small_image");
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  Tensor x = random_tensor(DType::kF32, xs, 1);
  Tensor f1 = random_tensor(DType::kF32, fs, 2), f2 = random_tensor(DType::kF32, fs, 3);
  for (const Tensor& f : {f1, f1, f2}) {
    std::vector<Tensor> in = {x, f}, out = {Tensor(DType::kF32, {1, 4, 4, 32})};
    kernels::KernelContext ctx{in, out, attrs, host_stream()};
    sel.kernel->run(ctx);
    EXPECT_LE(max_rel_error(out[0], runtime::eager_call1("conv2d", in, attrs, ref)), 1e-5);
  }
}

// A kept (constant) filter takes F(2x2, 3x3) below kWinogradF4MinTilesKept F(4x4) tiles; a
// filter transformed at every call keeps the size rule.
TEST(ConvSmallImage, KeptFilterWinogradTile) {
  runtime::initialize();
  if (cpu::cpu_isa() != cpu::CpuIsa::kX86_64_v3 || std::getenv("TERN_CONV_WINOGRAD") != nullptr) {
    GTEST_SKIP() << "tern's Winograd off, or its tile forced";
  }
  auto tile = [](Shape x, bool kept) {
    return cpu::onednn::winograd_tile(ops::conv2d_geometry(x, {3, 3, x[3], x[3]}, kSame),
                                      DType::kF32, kept);
  };
  EXPECT_EQ(tile({1, 8, 8, 256}, true), 2);    // 4 tiles
  EXPECT_EQ(tile({1, 16, 16, 128}, true), 2);  // 16
  EXPECT_EQ(tile({1, 32, 32, 64}, true), 4);   // 64
  EXPECT_EQ(tile({16, 8, 8, 256}, true), 4);   // 64
  EXPECT_EQ(tile({1, 8, 8, 256}, false), 4);
  EXPECT_EQ(tile({1, 16, 16, 128}, false), 4);
}

}  // namespace
}  // namespace tern::testing
