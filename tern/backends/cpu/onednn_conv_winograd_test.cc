// Tests for tern's Winograd convolutions, F(2x2, 3x3) and F(4x4, 3x3) (onednn_conv_winograd.cc):
// the forward convolution, its epilogue, the input gradient (flipped filter) and the filter
// gradient against the reference kernels over paddings, odd sizes and tiles that leave the image;
// chunks of images; which layers take which tile; and that the conv family's kernels run it.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/onednn_conv.h"
#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

using Ints = std::vector<int64_t>;
using cpu::onednn::Epilogue;

struct Case {
  Shape x;
  int64_t c_out;
  ops::Attrs attrs;
};

// The classes run any channel counts and tile counts; the kernels use them from
// kWinogradMinChannels channels (the cases keep fewer, for speed) and kWinogradMinTiles tiles.
std::vector<Case> cases() {
  return {
      {{8, 4, 4, 32}, 48, {{"padding", std::string("SAME")}}},  // ResNet's small layers' shape
      {{3, 5, 7, 16}, 32, {{"padding", std::string("SAME")}}},  // odd sizes: tiles leave y
      {{8, 6, 5, 16}, 16, {{"padding", std::string("VALID")}}},
      {{32, 2, 2, 64}, 64, {{"padding", std::string("SAME")}}},  // one tile per image
      {{32, 1, 1, 16}, 16, {{"padding", std::string("SAME")}}},  // only the centre tap
      // odd channel counts: partial 16 x 16 blocks of the flipped filter's transposed transform
      {{2, 6, 6, 19}, 5, {{"padding", std::string("SAME")}}},
      {{4, 7, 6, 16},
       24,
       {{"padding", std::string("EXPLICIT")}, {"explicit_paddings", Ints{2, 0, 1, 2}}}},
  };
}

// fused_conv2d's epilogue as the Winograd classes take it: inputs x, filter, bias, residual.
Epilogue bias_residual_relu() {
  Epilogue ep;
  ep.bias_input = 2;
  ep.residual_input = 3;
  ep.activation = ops::Activation::kRelu;
  return ep;
}

// The reference fused_conv2d (SAME, bias, residual, relu) of `in` = {x, filter, bias, residual}.
Tensor ref_bias_residual_relu(const std::vector<Tensor>& in) {
  runtime::EagerOptions o;
  o.kernel = "ref";
  return runtime::eager_call1("fused_conv2d", in,
                              {{"padding", std::string("SAME")},
                               {"activation", std::string("relu")},
                               {"has_bias", true},
                               {"has_residual", true}},
                              o);
}

// The three directions of `g` (x's shape xs, filter's fs) with tile m against ref: the forward
// with bias, residual and relu (within tol), the input gradient and the filter gradient (within
// 10 tol); returns the filter gradient.
Tensor expect_directions_match_ref(const ops::Conv2dGeometry& g, const Shape& xs, const Shape& fs,
                                   int m, double tol, uint64_t seed) {
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  auto ref = [](std::string_view op, const std::vector<Tensor>& in, const ops::Attrs& attrs) {
    runtime::EagerOptions o;
    o.kernel = "ref";
    return runtime::eager_call1(op, in, attrs, o);
  };
  Tensor x = random_tensor(DType::kF32, xs, seed), f = random_tensor(DType::kF32, fs, seed + 1);
  Tensor bias = random_tensor(DType::kF32, {fs[3]}, seed + 2);
  Tensor residual = random_tensor(DType::kF32, g.output_shape(), seed + 3);
  Tensor want = ref_bias_residual_relu({x, f, bias, residual});
  Tensor y = residual.clone();
  cpu::onednn::WinogradForward(g, m, false, bias_residual_relu())
      .run(x.raw_data(), f.raw_data(), false, bias.raw_data(), y.raw_data());
  EXPECT_LE(max_rel_error(y, want), tol);

  Tensor dy = random_tensor(DType::kF32, g.output_shape(), seed + 4);
  ops::Attrs in_attrs = same;
  in_attrs.set("input_shape", xs.dims());
  Tensor dx(DType::kF32, xs);
  cpu::onednn::WinogradForward(*cpu::onednn::flipped_forward_geometry(g), m, true, Epilogue{})
      .run(dy.raw_data(), f.raw_data(), false, nullptr, dx.raw_data());
  EXPECT_LE(max_rel_error(dx, ref("conv2d_backprop_input", {dy, f}, in_attrs)), tol * 10);
  Tensor dw(DType::kF32, fs);
  cpu::onednn::WinogradFilterGradient fgrad(g, m);
  fgrad.run(x.raw_data(), dy.raw_data(), dw.raw_data());
  ops::Attrs f_attrs = same;
  f_attrs.set("filter_shape", fs.dims());
  EXPECT_LE(max_rel_error(dw, ref("conv2d_backprop_filter", {x, dy}, f_attrs)), tol * 10);
  // The filter gradient again on one thread: the same bits where it runs fused or per block of
  // output channels.
  Tensor dw1(DType::kF32, fs);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  fgrad.run(x.raw_data(), dy.raw_data(), dw1.raw_data());
  omp_set_num_threads(threads);
  if (m == 4 && (cpu::onednn::winograd_fused(g, 4) || cpu::onednn::winograd_columns(g)) &&
      cpu::cpu_runs_v4_variants()) {
    EXPECT_EQ(std::memcmp(dw.raw_data(), dw1.raw_data(), dw.nbytes()), 0);
  }
  return dw;
}

class Winograd : public ::testing::TestWithParam<int> {  // the output tile: 2 or 4
 protected:
  void SetUp() override {
    runtime::initialize();
    if (cpu::cpu_isa() < cpu::CpuIsa::kX86_64_v3) {
      GTEST_SKIP() << "tern's Winograd convolutions run on x86-64-v3 CPUs";
    }
  }
  int m() const { return GetParam(); }
  // F(2x2, 3x3)'s transforms use the coefficients 1 and 1/2: a few ulps per sum; F(4x4, 3x3)'s
  // up to 8 and 1/24: about ten times more.
  double tol() const { return m() == 2 ? 2e-5 : 2e-4; }

  static Tensor ref(std::string_view op, const std::vector<Tensor>& in, const ops::Attrs& attrs) {
    runtime::EagerOptions o;
    o.kernel = "ref";
    return runtime::eager_call1(op, in, attrs, o);
  }
};

TEST_P(Winograd, ForwardMatchesRef) {
  uint64_t seed = 1;
  for (const Case& c : cases()) {
    SCOPED_TRACE(str_cat("x ", c.x, " c_out ", c.c_out));
    const Shape fshape{3, 3, c.x[3], c.c_out};
    const ops::Conv2dGeometry g = ops::conv2d_geometry(c.x, fshape, c.attrs);
    Tensor x = random_tensor(DType::kF32, c.x, seed++);
    Tensor f = random_tensor(DType::kF32, fshape, seed++);
    Tensor want = ref("conv2d", {x, f}, c.attrs);
    Tensor y(DType::kF32, want.shape());
    cpu::onednn::WinogradForward w(g, m(), /*flipped=*/false, Epilogue{});
    w.run(x.raw_data(), f.raw_data(), false, nullptr, y.raw_data());
    EXPECT_LE(max_rel_error(y, want), tol());
  }
}

// Bias, the residual `out` holds and relu, in the output transform; relu keeps a NaN the input
// carries: F(2x2, 3x3) in exactly the output pixels whose window reads it (each input of a tile
// reaches only those), F(4x4, 3x3) in those and may spread it over more of its tile.
TEST_P(Winograd, EpilogueMatchesRefAndKeepsNaN) {
  const Shape xs{8, 4, 4, 16}, fs{3, 3, 16, 32};
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  Tensor x = random_tensor(DType::kF32, xs, 7);
  x.data<float>()[(1 * 16 + 1 * 4 + 2) * 16 + 3] = std::numeric_limits<float>::quiet_NaN();
  Tensor f = random_tensor(DType::kF32, fs, 8);
  Tensor bias = random_tensor(DType::kF32, {32}, 9);
  Tensor residual = random_tensor(DType::kF32, {8, 4, 4, 32}, 10);
  Tensor want = ref_bias_residual_relu({x, f, bias, residual});
  const Epilogue ep = bias_residual_relu();
  Tensor y = residual.clone();  // y holds the residual
  cpu::onednn::WinogradForward w(ops::conv2d_geometry(xs, fs, same), m(), false, ep);
  w.run(x.raw_data(), f.raw_data(), false, bias.raw_data(), y.raw_data());
  int nan = 0, both = 0;
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    const bool a = std::isnan(y.get(i)), b = std::isnan(want.get(i));
    nan += a;
    both += a && b;
    if (!a && !b) {
      EXPECT_LE(std::fabs(y.get(i) - want.get(i)) / (1 + std::fabs(want.get(i))), tol()) << i;
    }
  }
  int ref_nan = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) ref_nan += std::isnan(want.get(i));
  EXPECT_EQ(ref_nan, 9 * 32);  // the 3x3 output pixels around the NaN, every output channel
  EXPECT_EQ(both, ref_nan);    // every one of them NaN here too
  if (m() == 2) {
    EXPECT_EQ(nan, ref_nan);
  }
}

// The input gradient as the forward convolution of the flipped filter: the filter's taps
// transformed in reverse order, read transposed.
TEST_P(Winograd, InputGradientMatchesRef) {
  uint64_t seed = 100;
  for (const Case& c : cases()) {
    SCOPED_TRACE(str_cat("x ", c.x, " c_out ", c.c_out));
    const Shape fshape{3, 3, c.x[3], c.c_out};
    const ops::Conv2dGeometry g = ops::conv2d_geometry(c.x, fshape, c.attrs);
    std::optional<ops::Conv2dGeometry> fg = cpu::onednn::flipped_forward_geometry(g);
    ASSERT_TRUE(fg.has_value());
    Tensor f = random_tensor(DType::kF32, fshape, seed++);
    Tensor dy = random_tensor(DType::kF32, g.output_shape(), seed++);
    ops::Attrs attrs = c.attrs;
    attrs.set("input_shape", c.x.dims());
    Tensor want = ref("conv2d_backprop_input", {dy, f}, attrs);
    Tensor dx(DType::kF32, c.x);
    cpu::onednn::WinogradForward w(*fg, m(), /*flipped=*/true, Epilogue{});
    w.run(dy.raw_data(), f.raw_data(), false, nullptr, dx.raw_data());
    EXPECT_LE(max_rel_error(dx, want), tol());
  }
}

TEST_P(Winograd, FilterGradientMatchesRef) {
  uint64_t seed = 200;
  for (const Case& c : cases()) {
    SCOPED_TRACE(str_cat("x ", c.x, " c_out ", c.c_out));
    const Shape fshape{3, 3, c.x[3], c.c_out};
    const ops::Conv2dGeometry g = ops::conv2d_geometry(c.x, fshape, c.attrs);
    Tensor x = random_tensor(DType::kF32, c.x, seed++);
    Tensor dy = random_tensor(DType::kF32, g.output_shape(), seed++);
    ops::Attrs attrs = c.attrs;
    attrs.set("filter_shape", fshape.dims());
    Tensor want = ref("conv2d_backprop_filter", {x, dy}, attrs);
    Tensor dw(DType::kF32, fshape);
    cpu::onednn::WinogradFilterGradient w(g, m());
    w.run(x.raw_data(), dy.raw_data(), dw.raw_data());
    // Sums over n x out_h x out_w products: relative to the gradient's scale.
    EXPECT_LE(max_rel_error(dw, want), tol() * 10);
  }
}

// A batch whose transformed tiles exceed kWinogradChunkBytes runs in chunks of images, the
// last one shorter: forward (with the epilogue), input gradient and filter gradient (the chunks'
// GEMMs summed) against ref.
TEST_P(Winograd, ChunksOfImagesMatchRef) {
  const Shape xs{37, 1, 1, 64},
      fs{3, 3, 64, 4096};  // 256 KB (F2) or 576 KB (F4) of tiles per image
  const ops::Conv2dGeometry g = ops::conv2d_geometry(xs, fs, {{"padding", std::string("SAME")}});
  const int64_t chunk = cpu::onednn::winograd_chunk_images(g, m());
  ASSERT_LT(chunk, 37);
  ASSERT_NE(37 % chunk, 0);
  expect_directions_match_ref(g, xs, fs, m(), tol(), 1);
}

// A batch of many tiles with a small filter runs fused per block of kFusedTiles tiles where
// winograd_fused says so (F(4x4, 3x3) on AVX-512 CPUs; otherwise these are the chunked runs):
// blocks and a last shorter one, tiles leaving the image, the filter gradient's two halves of
// blocks: forward with the epilogue, input gradient and filter gradient against ref, and the
// filter gradient bit for bit the same on one thread as on two.
TEST_P(Winograd, FusedBlocksMatchRef) {
  const Shape xs{5, 11, 18, 16}, fs{3, 3, 16, 24};  // F(4x4): 5 x 3 x 5 = 75 tiles
  const ops::Conv2dGeometry g = ops::conv2d_geometry(xs, fs, {{"padding", std::string("SAME")}});
  expect_directions_match_ref(g, xs, fs, m(), tol(), 11);
}

// A constant filter's transform is made at the first run and kept; another buffer makes it
// again.
TEST_P(Winograd, ConstantFilterTransformKeptPerBuffer) {
  const Shape xs{8, 4, 4, 16}, fs{3, 3, 16, 16};
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  Tensor x = random_tensor(DType::kF32, xs, 1);
  Tensor f1 = random_tensor(DType::kF32, fs, 2), f2 = random_tensor(DType::kF32, fs, 3);
  cpu::onednn::WinogradForward w(ops::conv2d_geometry(xs, fs, same), m(), false, Epilogue{});
  Tensor y(DType::kF32, xs);
  w.run(x.raw_data(), f1.raw_data(), true, nullptr, y.raw_data());
  EXPECT_LE(max_rel_error(y, ref("conv2d", {x, f1}, same)), tol());
  w.run(x.raw_data(), f2.raw_data(), true, nullptr, y.raw_data());
  EXPECT_LE(max_rel_error(y, ref("conv2d", {x, f2}, same)), tol());
}

// bf16 tensors (x, filter, bias, residual, dy) against the f32 run on their widened values, in
// the three directions, over the cases' paddings, odd sizes and channel counts. F(4x4, 3x3)
// multiplies f32 transforms: its results are the f32 run's, rounded once (a bf16 filter
// gradient's f32 result: the same bits). F(2x2, 3x3) multiplies transforms rounded to bf16
// (winograd_products): each product is up to 2^-8 off, which the sums over channels and
// positions carry to within kBf16Products of 1 + the f32 run's largest magnitude
// (max_scaled_error): 2.4e-3 to 6.0e-3 over these cases (~0 where only the centre tap is read).
TEST_P(Winograd, Bf16AgainstTheF32Run) {
  constexpr double kBf16Products = 1e-2;
  uint64_t seed = 300;
  auto widen = [](const Tensor& t) {
    return runtime::eager_call1("cast", {t}, {{"dtype", DType::kF32}});
  };
  auto round = [](const Tensor& t) {
    return runtime::eager_call1("cast", {t}, {{"dtype", DType::kBF16}});
  };
  auto expect_match = [&](const Tensor& got, const Tensor& f32_run) {
    if (m() == 4) {
      Tensor want = got.dtype() == DType::kBF16 ? round(f32_run) : f32_run;
      EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0);
    } else {
      const double e = max_scaled_error(got, f32_run);
      EXPECT_LE(e, kBf16Products);
      EXPECT_GT(e, 0.0);  // the products are bf16's, not f32's
    }
  };
  for (const Case& c : cases()) {
    SCOPED_TRACE(str_cat("x ", c.x, " c_out ", c.c_out));
    const Shape fshape{3, 3, c.x[3], c.c_out};
    const ops::Conv2dGeometry g = ops::conv2d_geometry(c.x, fshape, c.attrs);
    Tensor x = random_tensor(DType::kBF16, c.x, seed++);
    Tensor f = random_tensor(DType::kBF16, fshape, seed++);
    Tensor bias = random_tensor(DType::kBF16, {c.c_out}, seed++);
    Tensor residual = random_tensor(DType::kBF16, g.output_shape(), seed++);
    const Epilogue ep = bias_residual_relu();
    Tensor y = residual.clone(), y32 = widen(residual);
    cpu::onednn::WinogradForward(g, m(), false, ep, DType::kBF16)
        .run(x.raw_data(), f.raw_data(), false, bias.raw_data(), y.raw_data());
    cpu::onednn::WinogradForward(g, m(), false, ep)
        .run(widen(x).raw_data(), widen(f).raw_data(), false, widen(bias).raw_data(),
             y32.raw_data());
    expect_match(y, y32);
    // The input gradient's form: dy [x's batch, out_h, out_w, c_out] -> dx like x.
    const ops::Conv2dGeometry fg = *cpu::onednn::flipped_forward_geometry(g);
    Tensor dy = random_tensor(DType::kBF16, g.output_shape(), seed++);
    Tensor dx(DType::kBF16, c.x), dx32(DType::kF32, c.x);
    cpu::onednn::WinogradForward(fg, m(), true, Epilogue{}, DType::kBF16)
        .run(dy.raw_data(), f.raw_data(), false, nullptr, dx.raw_data());
    cpu::onednn::WinogradForward(fg, m(), true, Epilogue{})
        .run(widen(dy).raw_data(), widen(f).raw_data(), false, nullptr, dx32.raw_data());
    expect_match(dx, dx32);
    Tensor dw(DType::kF32, fshape), dw32(DType::kF32, fshape);
    cpu::onednn::WinogradFilterGradient(g, m(), DType::kBF16)
        .run(x.raw_data(), dy.raw_data(), dw.raw_data());
    cpu::onednn::WinogradFilterGradient(g, m()).run(widen(x).raw_data(), widen(dy).raw_data(),
                                                    dw32.raw_data());
    expect_match(dw, dw32);
  }
}

// The classes take f32, or bf16 (the filter gradient's result f32 or bf16); any other pairing is
// an error naming the dtypes, before anything is built.
TEST_P(Winograd, OtherDTypesAreRefused) {
  const ops::Conv2dGeometry g =
      ops::conv2d_geometry({2, 8, 8, 16}, {3, 3, 16, 16}, {{"padding", std::string("SAME")}});
  EXPECT_TERN_ERROR(cpu::onednn::WinogradForward(g, m(), false, Epilogue{}, DType::kF16),
                    ErrorCode::kInternal, "not f16");
  EXPECT_TERN_ERROR(cpu::onednn::WinogradFilterGradient(g, m(), DType::kF32, DType::kBF16),
                    ErrorCode::kInternal, "not f32 -> bf16");
  EXPECT_TERN_ERROR(cpu::onednn::WinogradFilterGradient(g, m(), DType::kF16, DType::kF32),
                    ErrorCode::kInternal, "not f16 -> f32");
}

INSTANTIATE_TEST_SUITE_P(Tiles, Winograd, ::testing::Values(2, 4),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return str_cat("F", p.param, "x", p.param);
                         });

// The conv family's "onednn" kernels run it where it applies, with the tile winograd_tile
// gives: their results are the classes' bit for bit (ResNet-18's 4x4 layer shape, an 8x8 one,
// and 2x2 images, where the small-image GEMMs would otherwise take the forward and the input
// gradient; fewer channels). The input gradient is the forward's adjoint where
// WinogradInputGradient applies (with TERN_WINOGRAD_FUSED=0 these layers run per block of
// channels), else the flipped filter's forward.
TEST(WinogradKernels, RunIt) {
  runtime::initialize();
  for (const Shape& xs : {Shape{8, 4, 4, 64}, Shape{2, 8, 8, 64}, Shape{32, 2, 2, 64}}) {
    SCOPED_TRACE(str_cat("x ", xs));
    const Shape fs{3, 3, 64, 64};
    const ops::Attrs same = {{"padding", std::string("SAME")}};
    const ops::Conv2dGeometry g = ops::conv2d_geometry(xs, fs, same);
    const ops::Conv2dGeometry fg = *cpu::onednn::flipped_forward_geometry(g);
    const int m = cpu::onednn::winograd_tile(g, DType::kF32);
    const int m_input = cpu::onednn::winograd_tile(fg, DType::kF32);
    if (m == 0 || m_input == 0) {
      GTEST_SKIP() << "TERN_CONV_WINOGRAD=0, or not an x86-64-v3 CPU";
    }
    Tensor x = random_tensor(DType::kF32, xs, 1), f = random_tensor(DType::kF32, fs, 2);
    Tensor dy = random_tensor(DType::kF32, xs, 3);
    runtime::EagerOptions onednn;
    onednn.kernel = "onednn";
    auto expect_same = [](const Tensor& got, const Tensor& want) {
      ASSERT_EQ(got.shape(), want.shape());
      EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0);
    };
    Tensor y(DType::kF32, xs), dx(DType::kF32, xs), dw(DType::kF32, fs);
    cpu::onednn::WinogradForward(g, m, false, Epilogue{})
        .run(x.raw_data(), f.raw_data(), false, nullptr, y.raw_data());
    expect_same(runtime::eager_call1("conv2d", {x, f}, same, onednn), y);
    if (cpu::onednn::WinogradInputGradient::applies(g, DType::kF32)) {  // the forward's adjoint
      cpu::onednn::WinogradInputGradient(g).run(dy.raw_data(), f.raw_data(), dx.raw_data());
    } else {
      cpu::onednn::WinogradForward(fg, m_input, true, Epilogue{})
          .run(dy.raw_data(), f.raw_data(), false, nullptr, dx.raw_data());
    }
    ops::Attrs in_attrs = same;
    in_attrs.set("input_shape", xs.dims());
    expect_same(runtime::eager_call1("conv2d_backprop_input", {dy, f}, in_attrs, onednn), dx);
    cpu::onednn::WinogradFilterGradient(g, m).run(x.raw_data(), dy.raw_data(), dw.raw_data());
    ops::Attrs f_attrs = same;
    f_attrs.set("filter_shape", fs.dims());
    expect_same(runtime::eager_call1("conv2d_backprop_filter", {x, dy}, f_attrs, onednn), dw);
  }
}

// F(4x4, 3x3) per block of channels (winograd_columns) against ref: a layer it takes, with
// channel counts that leave a last shorter block (80 = 64 + 16 output channels, 72 = 64 + 8
// input channels) and the flipped filter's 16 x 16 blocks (72 input channels), tiles that leave
// the image and overlap (5x6 outputs: 2x2 tiles an image); forward with the epilogue, the input
// gradient both as the flipped filter's forward (TERN_WINOGRAD_ADJOINT=0's form) and as the
// adjoint of the forward's tiles (WinogradInputGradient, every pixel of a NaN-filled dx
// written), the filter gradient; all bit for bit the same on one thread as on two (each block of
// channels is one thread's).
TEST(WinogradColumns, DirectionsMatchRef) {
  runtime::initialize();
  const Shape xs{6, 5, 6, 72}, fs{3, 3, 72, 80};
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  const ops::Conv2dGeometry g = ops::conv2d_geometry(xs, fs, same);
  const ops::Conv2dGeometry fg = *cpu::onednn::flipped_forward_geometry(g);
  if (!cpu::onednn::winograd_columns(g)) {
    GTEST_SKIP() << "not an AVX-512 CPU, or TERN_WINOGRAD_COLUMNS=0 / TERN_CONV_WINOGRAD=0 or 2";
  }
  ASSERT_TRUE(cpu::onednn::winograd_columns(fg));
  ASSERT_EQ(cpu::onednn::winograd_tile(g, DType::kF32), 4);
  expect_directions_match_ref(g, xs, fs, 4, 2e-4, 21);

  Tensor x = random_tensor(DType::kF32, xs, 31), f = random_tensor(DType::kF32, fs, 32);
  Tensor bias = random_tensor(DType::kF32, {fs[3]}, 33);
  Tensor residual = random_tensor(DType::kF32, g.output_shape(), 34);
  Tensor dy = random_tensor(DType::kF32, g.output_shape(), 35);
  cpu::onednn::WinogradForward forward(g, 4, false, bias_residual_relu());
  cpu::onednn::WinogradForward input_gradient(fg, 4, true, Epilogue{});
  // (not with TERN_WINOGRAD_ADJOINT=0; the class runs it either way)
  const char* adjoint_env = std::getenv("TERN_WINOGRAD_ADJOINT");
  EXPECT_EQ(cpu::onednn::WinogradInputGradient::applies(g, DType::kF32),
            adjoint_env == nullptr || std::string_view(adjoint_env) != "0");
  cpu::onednn::WinogradInputGradient adjoint(g);
  auto run = [&](Tensor& y, Tensor& dx, Tensor& dx_adjoint) {
    y = residual.clone();
    forward.run(x.raw_data(), f.raw_data(), false, bias.raw_data(), y.raw_data());
    dx = Tensor(DType::kF32, xs);
    input_gradient.run(dy.raw_data(), f.raw_data(), false, nullptr, dx.raw_data());
    dx_adjoint = Tensor(DType::kF32, xs);
    for (int64_t i = 0; i < dx_adjoint.num_elements(); ++i) {
      dx_adjoint.set(i, std::numeric_limits<double>::quiet_NaN());
    }
    adjoint.run(dy.raw_data(), f.raw_data(), dx_adjoint.raw_data());
  };
  Tensor y2, dx2, adjoint2, y1, dx1, adjoint1;
  run(y2, dx2, adjoint2);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  run(y1, dx1, adjoint1);
  omp_set_num_threads(threads);
  ops::Attrs in_attrs = same;
  in_attrs.set("input_shape", xs.dims());
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  // max_rel_error counts a NaN left in adjoint2 (a pixel never written) as an infinite error.
  EXPECT_LE(max_rel_error(adjoint2,
                          runtime::eager_call1("conv2d_backprop_input", {dy, f}, in_attrs, ref)),
            2e-3);
  EXPECT_EQ(std::memcmp(y1.raw_data(), y2.raw_data(), y1.nbytes()), 0);
  EXPECT_EQ(std::memcmp(dx1.raw_data(), dx2.raw_data(), dx1.nbytes()), 0);
  EXPECT_EQ(std::memcmp(adjoint1.raw_data(), adjoint2.raw_data(), adjoint1.nbytes()), 0);
}

// A WinogradForward built for a kept filter (a served model's) runs such a layer in chunks and
// keeps the filter's transform: changing the filter's values in its buffer does not change the
// next run's output; built without, it runs per block of channels and reads the filter anew.
TEST(WinogradColumns, AKeptFilterKeepsItsTransform) {
  runtime::initialize();
  const Shape xs{6, 5, 6, 72}, fs{3, 3, 72, 80};
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  const ops::Conv2dGeometry g = ops::conv2d_geometry(xs, fs, same);
  if (!cpu::onednn::winograd_columns(g)) GTEST_SKIP() << "no Winograd per block of channels here";
  Tensor x = random_tensor(DType::kF32, xs, 41), f = random_tensor(DType::kF32, fs, 42);
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  const Tensor want = runtime::eager_call1("conv2d", {x, f}, same, ref);
  for (bool kept : {true, false}) {
    SCOPED_TRACE(kept ? "kept" : "per block of channels");
    Tensor filter = f.clone();
    cpu::onednn::WinogradForward w(g, 4, false, Epilogue{}, DType::kF32, kept);
    Tensor y(DType::kF32, g.output_shape()), again(DType::kF32, g.output_shape());
    w.run(x.raw_data(), filter.raw_data(), kept, nullptr, y.raw_data());
    EXPECT_LE(max_rel_error(y, want), 2e-4);
    for (int64_t i = 0; i < filter.num_elements(); ++i) filter.set(i, 0.0);
    w.run(x.raw_data(), filter.raw_data(), kept, nullptr, again.raw_data());
    EXPECT_EQ(std::memcmp(y.raw_data(), again.raw_data(), y.nbytes()) == 0, kept);
  }
}

// Which layers run per block of output channels: ResNet-18's 512-channel layers at 4x4 and 256 at
// 4x4 (batch 32: 2.4 and 1.2 MB of transformed tiles), not its 256-channel layers at 8x8 (4.7 MB:
// slower so), 2x2 outputs, a filter fused F(4x4, 3x3) takes (64 x 64), a kept filter (a served
// model: the chunks keep its transform) or bf16 (F(2x2, 3x3) with bf16 products).
TEST(WinogradColumns, WhereTheyApply) {
  runtime::initialize();
  for (const char* env : {"TERN_CONV_WINOGRAD", "TERN_WINOGRAD_FUSED", "TERN_WINOGRAD_COLUMNS",
                          "TERN_WINOGRAD_ADJOINT"}) {
    if (std::getenv(env) != nullptr) GTEST_SKIP() << env << " is set";
  }
  if (!cpu::cpu_runs_v4_variants()) GTEST_SKIP() << "not an AVX-512 CPU";
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  auto geometry = [&](const Shape& x, int64_t c_out) {
    return ops::conv2d_geometry(x, {3, 3, x[3], c_out}, same);
  };
  using cpu::onednn::winograd_columns;
  EXPECT_TRUE(winograd_columns(geometry({32, 4, 4, 512}, 512)));
  EXPECT_TRUE(winograd_columns(geometry({32, 4, 4, 256}, 256)));
  EXPECT_TRUE(winograd_columns(geometry({8, 4, 4, 512}, 512)));
  EXPECT_FALSE(winograd_columns(geometry({32, 8, 8, 256}, 256)));
  EXPECT_FALSE(winograd_columns(geometry({32, 2, 2, 512}, 512)));
  EXPECT_FALSE(winograd_columns(geometry({32, 8, 8, 64}, 64)));
  EXPECT_FALSE(winograd_columns(geometry({32, 4, 4, 32}, 32)));  // no Winograd at all
  const ops::Conv2dGeometry g = geometry({32, 4, 4, 512}, 512);
  EXPECT_EQ(cpu::onednn::winograd_tile(g, DType::kF32), 4);
  EXPECT_EQ(cpu::onednn::winograd_tile(g, DType::kF32, /*kept_filter=*/true), 2);
  // the input gradient as the adjoint of the forward's tiles (per block of input channels)
  EXPECT_TRUE(cpu::onednn::WinogradInputGradient::applies(g, DType::kF32));
  EXPECT_FALSE(cpu::onednn::WinogradInputGradient::applies(g, DType::kBF16));
  if (cpu::onednn::bf16_native_on_amd() && std::getenv("TERN_WINOGRAD_BF16_PRODUCTS") == nullptr) {
    EXPECT_EQ(cpu::onednn::winograd_tile_bf16(g), 2);
  }
}

// The input gradient as the adjoint of the forward's F(4x4, 3x3) tiles (WinogradInputGradient)
// against ref: the cases above (SAME, VALID and explicit paddings, odd sizes, tiles leaving the
// image, channel tails), the W3 CNN's VALID layer (9 tiles an image: blocks of kFusedTiles
// across images) and a VALID layer of odd sizes; every pixel written (dx starts as NaN), and the
// same bits on one thread as on two (each thread sums whole images).
TEST(WinogradAdjoint, InputGradientMatchesRef) {
  runtime::initialize();
  if (cpu::cpu_isa() < cpu::CpuIsa::kX86_64_v3) {
    GTEST_SKIP() << "tern's Winograd convolutions run on x86-64-v3 CPUs";
  }
  const ops::Attrs valid = {{"padding", std::string("VALID")}};
  std::vector<Case> all = cases();
  all.push_back({{5, 13, 13, 32}, 64, valid});
  all.push_back({{3, 10, 9, 16}, 24, valid});
  uint64_t seed = 300;
  for (const Case& c : all) {
    SCOPED_TRACE(str_cat("x ", c.x, " c_out ", c.c_out));
    const Shape fshape{3, 3, c.x[3], c.c_out};
    const ops::Conv2dGeometry g = ops::conv2d_geometry(c.x, fshape, c.attrs);
    Tensor f = random_tensor(DType::kF32, fshape, seed++);
    Tensor dy = random_tensor(DType::kF32, g.output_shape(), seed++);
    ops::Attrs attrs = c.attrs;
    attrs.set("input_shape", c.x.dims());
    runtime::EagerOptions o;
    o.kernel = "ref";
    Tensor want = runtime::eager_call1("conv2d_backprop_input", {dy, f}, attrs, o);
    Tensor dx(DType::kF32, c.x), dx1(DType::kF32, c.x);
    for (int64_t i = 0; i < dx.num_elements(); ++i) {
      dx.data<float>()[i] = dx1.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
    }
    cpu::onednn::WinogradInputGradient w(g);
    w.run(dy.raw_data(), f.raw_data(), dx.raw_data());
    // max_rel_error passes NaN over (std::max keeps the larger of a number and NaN's false).
    for (int64_t i = 0; i < dx.num_elements(); ++i) ASSERT_FALSE(std::isnan(dx.get(i))) << i;
    EXPECT_LE(max_rel_error(dx, want), 2e-4);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    w.run(dy.raw_data(), f.raw_data(), dx1.raw_data());
    omp_set_num_threads(threads);
    EXPECT_EQ(std::memcmp(dx.raw_data(), dx1.raw_data(), dx.nbytes()), 0);
  }
}

// The adjoint takes 3x3 ungrouped stride-1 layers only: others are refused by name.
TEST(WinogradAdjoint, OtherGeometriesAreRefused) {
  const ops::Attrs valid = {{"padding", std::string("VALID")}};
  EXPECT_TERN_ERROR(cpu::onednn::WinogradInputGradient(
                        ops::conv2d_geometry({2, 9, 9, 16}, {5, 5, 16, 16}, valid)),
                    ErrorCode::kInternal, "3x3 ungrouped convolution at stride 1");
  ops::Attrs strided = valid;
  strided.set("strides", Ints{2, 2});
  EXPECT_TERN_ERROR(cpu::onednn::WinogradInputGradient(
                        ops::conv2d_geometry({2, 9, 9, 16}, {3, 3, 16, 16}, strided)),
                    ErrorCode::kInternal, "3x3 ungrouped convolution at stride 1");
}

// Where the adjoint takes the input gradient (default settings, AVX-512 CPUs): f32 layers whose
// forward runs fused F(4x4, 3x3) and whose output has fewer tiles than their input, and then the
// "onednn" kernel's result is the class's bit for bit; TERN_WINOGRAD_ADJOINT=0: nowhere.
TEST(WinogradAdjoint, WhereItApplies) {
  runtime::initialize();
  const ops::Attrs valid = {{"padding", std::string("VALID")}};
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  auto applies = [](const Shape& x, const Shape& f, const ops::Attrs& attrs, DType dtype) {
    return cpu::onednn::WinogradInputGradient::applies(ops::conv2d_geometry(x, f, attrs), dtype);
  };
  const Shape w3x{128, 13, 13, 32}, w3f{3, 3, 32, 64};
  const char* env = std::getenv("TERN_WINOGRAD_ADJOINT");
  if (env != nullptr && std::string(env) == "0") {
    EXPECT_FALSE(applies(w3x, w3f, valid, DType::kF32));
    return;
  }
  for (const char* other : {"TERN_CONV_WINOGRAD", "TERN_WINOGRAD_FUSED"}) {
    if (std::getenv(other) != nullptr) GTEST_SKIP() << other << " is set";
  }
  if (!cpu::cpu_runs_v4_variants()) {
    EXPECT_FALSE(applies(w3x, w3f, valid, DType::kF32));
    GTEST_SKIP() << "fused Winograd runs on AVX-512 CPUs";
  }
  EXPECT_TRUE(applies(w3x, w3f, valid, DType::kF32));
  EXPECT_FALSE(applies(w3x, w3f, valid, DType::kBF16));
  EXPECT_FALSE(applies({32, 32, 32, 64}, {3, 3, 64, 64}, same, DType::kF32));      // tiles alike
  EXPECT_FALSE(applies({32, 16, 16, 128}, {3, 3, 128, 128}, valid, DType::kF32));  // not fused
  EXPECT_FALSE(applies({128, 13, 13, 16}, {3, 3, 16, 64}, valid, DType::kF32));    // no Winograd

  const Shape xs{8, 13, 13, 32};
  const ops::Conv2dGeometry g = ops::conv2d_geometry(xs, w3f, valid);
  ASSERT_TRUE(cpu::onednn::WinogradInputGradient::applies(g, DType::kF32));
  Tensor f = random_tensor(DType::kF32, w3f, 1),
         dy = random_tensor(DType::kF32, g.output_shape(), 2);
  Tensor dx(DType::kF32, xs);
  cpu::onednn::WinogradInputGradient(g).run(dy.raw_data(), f.raw_data(), dx.raw_data());
  ops::Attrs attrs = valid;
  attrs.set("input_shape", xs.dims());
  runtime::EagerOptions onednn;
  onednn.kernel = "onednn";
  Tensor got = runtime::eager_call1("conv2d_backprop_input", {dy, f}, attrs, onednn);
  ASSERT_EQ(got.shape(), xs);
  EXPECT_EQ(std::memcmp(got.raw_data(), dx.raw_data(), dx.nbytes()), 0);
}

// Which bf16 layers take which tile (AMD CPUs running bf16 natively, AVX-512, default
// settings): F(4x4, 3x3) with f32 products where it runs fused or below
// kWinogradBf16MinChannels, F(2x2, 3x3) with bf16 products from kWinogradBf16MinTiles tiles
// elsewhere f32 Winograd applies; input gradients F(4x4, 3x3) fused, else F(2x2, 3x3).
TEST(WinogradKernels, Bf16TileWhereItApplies) {
  runtime::initialize();
  for (const char* env :
       {"TERN_CONV_WINOGRAD", "TERN_WINOGRAD_FUSED", "TERN_WINOGRAD_BF16_PRODUCTS"}) {
    if (std::getenv(env) != nullptr) GTEST_SKIP() << env << " is set";
  }
  if (!cpu::onednn::bf16_native_on_amd() || !cpu::cpu_runs_v4_variants()) {
    GTEST_SKIP() << "not an AVX-512 CPU running bf16 natively";
  }
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  struct Expect {
    Shape x;
    int forward, input_gradient;
  };
  for (const Expect& e : std::vector<Expect>{
           {{32, 32, 32, 64}, 4, 4},   // fused
           {{32, 16, 16, 128}, 4, 2},  // 128 channels
           {{32, 8, 8, 256}, 2, 2},
           {{32, 4, 4, 512}, 2, 2},  // 128 tiles
           {{16, 4, 4, 512}, 2, 2},  // 64 tiles
           {{32, 2, 2, 512}, 0, 0},  // 32 tiles
       }) {
    SCOPED_TRACE(str_cat("x ", e.x));
    const Shape fs{3, 3, e.x[3], e.x[3]};
    const ops::Conv2dGeometry g = ops::conv2d_geometry(e.x, fs, same);
    EXPECT_EQ(cpu::onednn::winograd_tile_bf16(g), e.forward);
    EXPECT_EQ(
        cpu::onednn::winograd_input_gradient_tile_bf16(*cpu::onednn::flipped_forward_geometry(g)),
        e.input_gradient);
  }
}

// bf16 convolutions where winograd_tile_bf16 gives a tile: the conv family's "onednn" kernels run
// the classes on the bf16 tensors, bit for bit: the forward (with fused_conv2d's epilogue too) and
// the filter gradient (f32 result), F(4x4, 3x3) at 8x8 and F(2x2, 3x3) (bf16 products) at 4x4 and
// with 256 channels under the default settings.
TEST(WinogradKernels, Bf16RunsIt) {
  runtime::initialize();
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  for (const Shape& xs : {Shape{2, 8, 8, 64}, Shape{32, 4, 4, 64}, Shape{4, 8, 8, 256}}) {
    SCOPED_TRACE(str_cat("x ", xs));
    const Shape fs{3, 3, xs[3], xs[3]};
    const ops::Conv2dGeometry g = ops::conv2d_geometry(xs, fs, same);
    const int m = cpu::onednn::winograd_tile_bf16(g);
    if (m == 0) continue;  // bf16 runs widened here, or a setting is off
    Tensor x = random_tensor(DType::kBF16, xs, 1), f = random_tensor(DType::kBF16, fs, 2);
    Tensor bias = random_tensor(DType::kBF16, {xs[3]}, 3);
    Tensor residual = random_tensor(DType::kBF16, xs, 4);
    runtime::EagerOptions onednn;
    onednn.kernel = "onednn";
    Tensor y(DType::kBF16, xs);
    cpu::onednn::WinogradForward(g, m, false, Epilogue{}, DType::kBF16)
        .run(x.raw_data(), f.raw_data(), false, nullptr, y.raw_data());
    Tensor got = runtime::eager_call1("conv2d", {x, f}, same, onednn);
    EXPECT_EQ(std::memcmp(got.raw_data(), y.raw_data(), y.nbytes()), 0);
    Tensor fused = residual.clone();
    cpu::onednn::WinogradForward(g, m, false, bias_residual_relu(), DType::kBF16)
        .run(x.raw_data(), f.raw_data(), false, bias.raw_data(), fused.raw_data());
    got = runtime::eager_call1("fused_conv2d", {x, f, bias, residual},
                               {{"padding", std::string("SAME")},
                                {"activation", std::string("relu")},
                                {"has_bias", true},
                                {"has_residual", true}},
                               onednn);
    EXPECT_EQ(std::memcmp(got.raw_data(), fused.raw_data(), fused.nbytes()), 0);
    Tensor dy = random_tensor(DType::kBF16, xs, 5), dw(DType::kF32, fs);
    cpu::onednn::WinogradFilterGradient(g, m, DType::kBF16)
        .run(x.raw_data(), dy.raw_data(), dw.raw_data());
    ops::Attrs f_attrs = same;
    f_attrs.set("filter_shape", fs.dims());
    f_attrs.set("dfilter_dtype", std::string("f32"));
    got = runtime::eager_call1("conv2d_backprop_filter", {x, dy}, f_attrs, onednn);
    EXPECT_EQ(std::memcmp(got.raw_data(), dw.raw_data(), dw.nbytes()), 0);
  }
}

// bf16 input gradients where winograd_input_gradient_tile_bf16 gives a tile run as tern's
// Winograd forward of the flipped filter: the kernel's result is the class's bit for bit
// (F(4x4, 3x3) fused at 64 channels, F(2x2, 3x3) with bf16 products at 4x4 and with 128
// channels under the default settings).
TEST(WinogradKernels, Bf16InputGradientRunsIt) {
  runtime::initialize();
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  for (const Shape& xs : {Shape{4, 16, 16, 64}, Shape{32, 4, 4, 64}, Shape{4, 8, 8, 128}}) {
    SCOPED_TRACE(str_cat("x ", xs));
    const Shape fs{3, 3, xs[3], xs[3]};
    const ops::Conv2dGeometry fg =
        *cpu::onednn::flipped_forward_geometry(ops::conv2d_geometry(xs, fs, same));
    const int tile = cpu::onednn::winograd_input_gradient_tile_bf16(fg);
    if (tile == 0) continue;  // not a CPU running bf16 natively, or a setting is off
    Tensor dy = random_tensor(DType::kBF16, xs, 5), f = random_tensor(DType::kBF16, fs, 6);
    Tensor dx(DType::kBF16, xs);
    cpu::onednn::WinogradForward(fg, tile, true, Epilogue{}, DType::kBF16)
        .run(dy.raw_data(), f.raw_data(), false, nullptr, dx.raw_data());
    ops::Attrs in_attrs = same;
    in_attrs.set("input_shape", xs.dims());
    runtime::EagerOptions onednn;
    onednn.kernel = "onednn";
    Tensor got = runtime::eager_call1("conv2d_backprop_input", {dy, f}, in_attrs, onednn);
    EXPECT_EQ(std::memcmp(got.raw_data(), dx.raw_data(), dx.nbytes()), 0);
  }
}

// Which layers take which tile: f32 3x3 stride-1 undilated ungrouped, enough tiles and channels;
// 4x4 tiles from 8x8 outputs (TERN_CONV_WINOGRAD=2 or 4 forces one tile, =0 none).
TEST(WinogradKernels, TileWhereItApplies) {
  runtime::initialize();
  if (cpu::cpu_isa() < cpu::CpuIsa::kX86_64_v3) GTEST_SKIP() << "not an x86-64-v3 CPU";
  auto tile = [](Shape x, Shape f, ops::Attrs attrs, DType d = DType::kF32) {
    return cpu::onednn::winograd_tile(ops::conv2d_geometry(x, f, attrs), d);
  };
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  const char* v = std::getenv("TERN_CONV_WINOGRAD");
  const std::string setting = v ? v : "auto";
  const int small = setting == "auto" ? 2 : setting == "0" ? 0 : setting[0] - '0';
  const int large = setting == "auto" ? 4 : small;
  // 4x4 tiles per block of output channels where winograd_columns says so (the 64-channel ones
  // with TERN_WINOGRAD_FUSED=0).
  auto small_or_columns = [&](Shape x, Shape f) {
    return cpu::onednn::winograd_columns(ops::conv2d_geometry(x, f, same)) ? 4 : small;
  };
  EXPECT_EQ(tile({32, 4, 4, 512}, {3, 3, 512, 512}, same),
            small_or_columns({32, 4, 4, 512}, {3, 3, 512, 512}));
  EXPECT_EQ(tile({32, 8, 8, 256}, {3, 3, 256, 256}, same), large);
  EXPECT_EQ(tile({4, 7, 9, 64}, {3, 3, 64, 64}, same),
            small_or_columns({4, 7, 9, 64}, {3, 3, 64, 64}));  // 7 rows
  EXPECT_EQ(tile({4, 4, 4, 64}, {3, 3, 64, 64}, same),
            small_or_columns({4, 4, 4, 64}, {3, 3, 64, 64}));  // 16 tiles of 2x2
  EXPECT_EQ(tile({32, 4, 4, 512}, {3, 3, 512, 512}, same, DType::kBF16), 0);
  EXPECT_EQ(tile({1, 4, 4, 512}, {3, 3, 512, 512}, same), 0);  // 4 tiles
  EXPECT_EQ(tile({3, 4, 4, 64}, {3, 3, 64, 64}, same), 0);     // 12 tiles
  EXPECT_EQ(tile({32, 4, 4, 32}, {3, 3, 32, 64}, same), 0);    // 32 input channels
  EXPECT_EQ(tile({32, 4, 4, 64}, {3, 3, 64, 32}, same), 0);    // 32 output channels
  EXPECT_EQ(tile({32, 8, 8, 64}, {3, 3, 64, 64},
                 {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}}),
            0);
  EXPECT_EQ(tile({32, 8, 8, 64}, {3, 3, 64, 64},
                 {{"padding", std::string("SAME")}, {"dilations", Ints{2, 2}}}),
            0);
  EXPECT_EQ(tile({32, 8, 8, 64}, {1, 1, 64, 64}, {}), 0);
  EXPECT_EQ(tile({32, 8, 8, 64}, {3, 3, 32, 64}, {{"groups", int64_t{2}}}), 0);
  // From 32 channels where F(4x4, 3x3) runs fused (training; the W3 CNN's 32 -> 64 layer and its
  // input gradient's 64 -> 32 form); not 16 channels, a kept filter or outputs under 8x8.
  const ops::Attrs valid = {{"padding", std::string("VALID")}};
  const bool fused = cpu::cpu_runs_v4_variants() &&
                     cpu::onednn::winograd_fused(
                         ops::conv2d_geometry({128, 13, 13, 32}, {3, 3, 32, 64}, valid), 4);
  const int few = fused && setting != "0" && setting != "2" ? 4 : 0;
  EXPECT_EQ(tile({128, 13, 13, 32}, {3, 3, 32, 64}, valid), few);
  EXPECT_EQ(tile({128, 11, 11, 64}, {3, 3, 64, 32},
                 {{"padding", std::string("EXPLICIT")}, {"explicit_paddings", Ints{2, 2, 2, 2}}}),
            few);
  EXPECT_EQ(tile({128, 13, 13, 16}, {3, 3, 16, 64}, valid), 0);
  EXPECT_EQ(tile({128, 6, 6, 32}, {3, 3, 32, 64}, same), 0);
  EXPECT_EQ(cpu::onednn::winograd_tile(
                ops::conv2d_geometry({128, 13, 13, 32}, {3, 3, 32, 64}, valid), DType::kF32, true),
            0);
}

// F(4x4, 3x3) runs fused where its transformed filter fits kFusedFilterBytes (64 x 64 channels:
// 576 KB), not with larger filters or 2x2 tiles; TERN_WINOGRAD_FUSED=0 turns it off.
TEST(WinogradKernels, FusedWhereTheFilterFits) {
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  auto fused = [&](const Shape& x, const Shape& f, int m) {
    return cpu::onednn::winograd_fused(ops::conv2d_geometry(x, f, same), m);
  };
  const char* env = std::getenv("TERN_WINOGRAD_FUSED");
  const bool on = env == nullptr || std::string(env) == "1";
  EXPECT_EQ(fused({32, 32, 32, 64}, {3, 3, 64, 64}, 4), on);
  EXPECT_EQ(fused({32, 32, 32, 64}, {3, 3, 64, 70}, 4), on);  // 630 KB
  EXPECT_FALSE(fused({32, 32, 32, 64}, {3, 3, 64, 72}, 4));   // 648 KB
  EXPECT_FALSE(fused({32, 16, 16, 128}, {3, 3, 128, 128}, 4));
  EXPECT_FALSE(fused({32, 32, 32, 64}, {3, 3, 64, 64}, 2));
}

}  // namespace
}  // namespace tern::testing
