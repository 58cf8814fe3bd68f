// Tests of the conv/pool reference kernels on hand-computed values (TF padding, groups, dilation,
// first-max ties, SAME averaging over in-bounds elements) and of the adjoint identities tying
// conv2d to its backprop ops: <conv(x, f), dy> == <x, dx(dy, f)> == <f, df(x, dy)>.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/base/philox.h"
#include "tern/kernels/ref/ref.h"
#include "tern/ops/registry.h"

namespace tern::kernels::ref {
namespace {

using Ints = std::vector<int64_t>;

// Runs the ref kernel of `op` on `inputs` (f64 unless given otherwise), returning output 0.
Tensor run_ref(std::string_view op, const std::vector<Tensor>& inputs, ops::Attrs attrs = {}) {
  static KernelRegistry* registry = [] {
    auto* r = new KernelRegistry;
    register_conv_ref(*r);
    return r;
  }();
  const ops::OpDef& def = ops::OpRegistry::global().get(op);
  std::vector<TensorType> in_types;
  for (const Tensor& t : inputs) in_types.push_back(t.type());
  std::vector<TensorType> out_types = def.check_and_infer(op, in_types, attrs);
  KernelSignature sig{&def, &attrs, in_types, out_types};
  KernelSelection sel = registry->select(sig);
  std::vector<Tensor> outs;
  for (const TensorType& t : out_types) outs.emplace_back(t.dtype, t.shape);
  KernelContext ctx{inputs, outs, attrs, host_stream()};
  sel.kernel->run(ctx);
  return outs[0];
}

Tensor values(Shape shape, const std::vector<double>& v) {
  return Tensor::from_values(DType::kF64, std::move(shape), v);
}

Tensor iota(Shape shape) {  // 1, 2, 3, ...
  std::vector<double> v(static_cast<size_t>(shape.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i + 1);
  return values(std::move(shape), v);
}

Tensor random(Shape shape, uint64_t seed) {
  Tensor t(DType::kF64, std::move(shape));
  PhiloxStream rng(seed, 0);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.set(i, 2 * rng.next_double() - 1);
  return t;
}

double dot(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double s = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) s += a.get(i) * b.get(i);
  return s;
}

TEST(ConvRef, SamePaddingSumsInBoundsTaps) {
  Tensor ones_x = Tensor::full(DType::kF64, {1, 3, 3, 1}, 1);
  Tensor ones_f = Tensor::full(DType::kF64, {3, 3, 1, 1}, 1);
  Tensor y = run_ref("conv2d", {ones_x, ones_f}, {{"padding", std::string("SAME")}});
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{4, 6, 4, 6, 9, 6, 4, 6, 4}));
  // Even kernel: the one pad goes bottom/right, so y[0, 0] sees x[0..1, 0..1].
  Tensor y2 = run_ref("conv2d", {iota({1, 3, 3, 1}), Tensor::full(DType::kF64, {2, 2, 1, 1}, 1)},
                      {{"padding", std::string("SAME")}});
  EXPECT_EQ(y2.to_doubles(), (std::vector<double>{12, 16, 9, 24, 28, 15, 15, 17, 9}));
  // Stride 2 on 4x4 with a 2x2 kernel needs no padding: sums of 2x2 blocks.
  Tensor y3 = run_ref("conv2d", {iota({1, 4, 4, 1}), Tensor::full(DType::kF64, {2, 2, 1, 1}, 1)},
                      {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}});
  EXPECT_EQ(y3.to_doubles(), (std::vector<double>{14, 22, 46, 54}));
}

TEST(ConvRef, GroupsAndDepthwise) {
  // groups 2: out 0 reads in 0..1 through f[:, :, :, 0]; out 1 reads in 2..3 through f[:, :, :, 1].
  Tensor y = run_ref("conv2d",
                     {values({1, 1, 1, 4}, {1, 2, 3, 4}), values({1, 1, 2, 2}, {1, 10, 100, 1000})},
                     {{"groups", int64_t{2}}});
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{1 * 1 + 2 * 100, 3 * 10 + 4 * 1000}));
  // Depthwise with multiplier 2: outs 0, 1 from channel 0; outs 2, 3 from channel 1.
  Tensor d = run_ref("conv2d", {values({1, 1, 1, 2}, {2, 3}), values({1, 1, 1, 4}, {1, 2, 3, 4})},
                     {{"groups", int64_t{2}}});
  EXPECT_EQ(d.to_doubles(), (std::vector<double>{2, 4, 9, 12}));
}

TEST(ConvRef, DilationAndExplicitPadding) {
  Tensor f = Tensor::full(DType::kF64, {1, 2, 1, 1}, 1);
  Tensor y = run_ref("conv2d", {iota({1, 1, 5, 1}), f}, {{"dilations", Ints{1, 2}}});
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{4, 6, 8}));
  Tensor e =
      run_ref("conv2d", {iota({1, 1, 3, 1}), f},
              {{"padding", std::string("EXPLICIT")}, {"explicit_paddings", Ints{0, 0, 1, 0}}});
  EXPECT_EQ(e.to_doubles(), (std::vector<double>{1, 3, 5}));
}

// The backprop ops are the adjoints of conv2d in x and in f.
TEST(ConvRef, BackpropOpsAreAdjoints) {
  struct Config {
    Shape x, f;
    ops::Attrs attrs;
  };
  std::vector<Config> configs = {
      {{2, 5, 5, 3}, {3, 3, 3, 4}, {}},
      {{1, 7, 6, 2}, {3, 3, 2, 3}, {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}}},
      {{1, 8, 7, 2}, {2, 3, 2, 2}, {{"padding", std::string("SAME")}, {"strides", Ints{3, 2}}}},
      {{1, 6, 6, 2}, {3, 3, 2, 2}, {{"padding", std::string("SAME")}, {"dilations", Ints{2, 2}}}},
      {{1, 5, 6, 4}, {3, 2, 2, 6}, {{"groups", int64_t{2}}, {"strides", Ints{2, 1}}}},
      {{1, 5, 5, 3}, {3, 3, 1, 6}, {{"groups", int64_t{3}}, {"padding", std::string("SAME")}}},
      {{1, 5, 5, 2},
       {3, 2, 2, 3},
       {{"padding", std::string("EXPLICIT")},
        {"explicit_paddings", Ints{1, 2, 0, 1}},
        {"dilations", Ints{1, 2}}}},
  };
  uint64_t seed = 1;
  for (const Config& c : configs) {
    Tensor x = random(c.x, seed++), f = random(c.f, seed++);
    Tensor y = run_ref("conv2d", {x, f}, c.attrs);
    Tensor dy = random(y.shape(), seed++);
    ops::Attrs ai = c.attrs, af = c.attrs;
    ai.set("input_shape", c.x.dims());
    af.set("filter_shape", c.f.dims());
    Tensor dx = run_ref("conv2d_backprop_input", {dy, f}, ai);
    Tensor df = run_ref("conv2d_backprop_filter", {x, dy}, af);
    double forward = dot(y, dy);
    EXPECT_NEAR(dot(x, dx), forward, 1e-12 * (1 + std::fabs(forward)))
        << "x " << c.x << " f " << c.f;
    EXPECT_NEAR(dot(f, df), forward, 1e-12 * (1 + std::fabs(forward)))
        << "x " << c.x << " f " << c.f;
  }
}

TEST(PoolRef, MaxIgnoresPadsAndGradGoesToTheFirstMax) {
  // SAME pads are never selected, even when every real element is negative.
  Tensor y = run_ref("max_pool2d", {values({1, 1, 2, 1}, {-5, -3})},
                     {{"ksize", Ints{1, 3}}, {"padding", std::string("SAME")}});
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{-3, -3}));
  // Ties: the first maximum in row-major window order takes the gradient.
  Tensor dx = run_ref("max_pool2d_grad",
                      {Tensor::full(DType::kF64, {1, 2, 2, 1}, 1), values({1, 1, 1, 1}, {5})},
                      {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}});
  EXPECT_EQ(dx.to_doubles(), (std::vector<double>{5, 0, 0, 0}));
  // Overlapping windows that pick the same element add up.
  Tensor dx2 =
      run_ref("max_pool2d_grad", {values({1, 1, 3, 1}, {1, 3, 2}), values({1, 1, 2, 1}, {10, 20})},
              {{"ksize", Ints{1, 2}}});
  EXPECT_EQ(dx2.to_doubles(), (std::vector<double>{0, 30, 0}));
}

TEST(PoolRef, AvgSameDividesByInBoundsCount) {
  Tensor y = run_ref("avg_pool2d", {iota({1, 3, 3, 1})},
                     {{"ksize", Ints{3, 3}}, {"padding", std::string("SAME")}});
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7}));
  // Width 3, window 2, stride 2, SAME: windows {0, 1} and {2, pad}; counts 2 and 1.
  ops::Attrs attrs = {
      {"ksize", Ints{1, 2}}, {"strides", Ints{1, 2}}, {"padding", std::string("SAME")}};
  EXPECT_EQ(run_ref("avg_pool2d", {values({1, 1, 3, 1}, {2, 4, 7})}, attrs).to_doubles(),
            (std::vector<double>{3, 7}));
  attrs.set("input_shape", Ints{1, 1, 3, 1});
  EXPECT_EQ(run_ref("avg_pool2d_grad", {values({1, 1, 2, 1}, {2, 4})}, attrs).to_doubles(),
            (std::vector<double>{1, 1, 4}));
}

// avg_pool2d is linear and max_pool2d is linear near x, so <pool(x), dy> == <x, pool_grad(dy)>.
TEST(PoolRef, GradOpsAreAdjoints) {
  std::vector<ops::Attrs> configs = {
      {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}},
      {{"ksize", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"padding", std::string("SAME")}},
      {{"ksize", Ints{3, 2}}, {"strides", Ints{1, 2}}, {"padding", std::string("SAME")}},
      {{"ksize", Ints{2, 3}}, {"strides", Ints{3, 1}}},
  };
  uint64_t seed = 100;
  for (const ops::Attrs& attrs : configs) {
    Tensor x = random({2, 7, 6, 3}, seed++);
    Tensor ym = run_ref("max_pool2d", {x}, attrs), ya = run_ref("avg_pool2d", {x}, attrs);
    Tensor dy = random(ym.shape(), seed++);
    Tensor dxm = run_ref("max_pool2d_grad", {x, dy}, attrs);
    ops::Attrs ga = attrs;
    ga.set("input_shape", x.shape().dims());
    Tensor dxa = run_ref("avg_pool2d_grad", {dy}, ga);
    EXPECT_NEAR(dot(x, dxm), dot(ym, dy), 1e-12);
    EXPECT_NEAR(dot(x, dxa), dot(ya, dy), 1e-12);
  }
}

TEST(PoolRef, GlobalAvgPool) {
  // x[0, h, w, c] = 1 + (h * 2 + w) * 2 + c over a 2x2 image with 2 channels.
  Tensor y = run_ref("global_avg_pool", {iota({1, 2, 2, 2})});
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{4, 5}));
  EXPECT_EQ(run_ref("global_avg_pool", {iota({1, 2, 2, 2})}, {{"keepdims", true}}).shape(),
            Shape({1, 1, 1, 2}));
}

TEST(ConvRef, AllFloatDTypesAgree) {
  Tensor x = random({1, 5, 5, 2}, 11), f = random({3, 3, 2, 3}, 12);
  ops::Attrs attrs = {{"padding", std::string("SAME")}, {"strides", Ints{2, 2}}};
  Tensor want = run_ref("conv2d", {x, f}, attrs);
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16}) {
    Tensor got = run_ref("conv2d", {x.cast(d), f.cast(d)}, attrs);
    EXPECT_EQ(got.dtype(), d);
    EXPECT_LT(max_abs_diff(got.cast(DType::kF64), want), d == DType::kF32 ? 1e-5 : 0.1)
        << dtype_name(d);
  }
}

}  // namespace
}  // namespace tern::kernels::ref
