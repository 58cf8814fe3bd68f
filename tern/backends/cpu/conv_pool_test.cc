// The pooled convolution kernel (conv_pool_cpu.cc): which fused convolutions it takes, and its
// results against ref over pooled widths that split into every block size, odd sizes (the
// pooling leaves the last row and column unread), batches up to its limit, and NaN. Its results
// are also the consistency case "pool-multi-channel".
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

using Ints = std::vector<int64_t>;

ops::Attrs pooled(std::string activation, bool bias, ops::Attrs base = {}) {
  base.set("activation", std::move(activation));
  base.set("has_bias", bias);
  base.set("pool", std::string("max"));
  base.set("pool_ksize", Ints{2, 2});
  base.set("pool_strides", Ints{2, 2});
  return base;
}

std::vector<TensorType> types(Shape x, int64_t c_out, bool bias = true) {
  std::vector<TensorType> t = {{DType::kF32, x}, {DType::kF32, {3, 3, x[3], c_out}}};
  if (bias) t.push_back({DType::kF32, {c_out}});
  return t;
}

TEST(ConvPool, TakesPooled3x3ConvolutionsOfSmallBatches) {
  if (!runs_avx512_kernels()) GTEST_SKIP() << "needs AVX-512 and the vectorized kernels";
  EXPECT_EQ(selected_kernel("fused_conv2d", types({1, 13, 13, 32}, 64), pooled("relu", true)),
            "cpu_conv_pool");
  EXPECT_EQ(
      selected_kernel("fused_conv2d", types({16, 13, 13, 32}, 64, false), pooled("none", false)),
      "cpu_conv_pool");
  EXPECT_NE(selected_kernel("fused_conv2d", types({17, 13, 13, 32}, 64), pooled("relu", true)),
            "cpu_conv_pool");
  EXPECT_NE(selected_kernel("fused_conv2d", types({1, 13, 13, 1}, 32), pooled("relu", true)),
            "cpu_conv_pool");  // one channel: the one-channel kernel's
  EXPECT_NE(selected_kernel("fused_conv2d", types({1, 13, 13, 32}, 40), pooled("relu", true)),
            "cpu_conv_pool");
  EXPECT_NE(selected_kernel("fused_conv2d", types({1, 13, 13, 32}, 64), pooled("tanh", true)),
            "cpu_conv_pool");
  EXPECT_NE(selected_kernel("fused_conv2d", types({1, 13, 13, 32}, 64),
                            pooled("relu", true, {{"padding", std::string("SAME")}})),
            "cpu_conv_pool");
  EXPECT_NE(selected_kernel("fused_conv2d", types({1, 13, 13, 32}, 64),
                            pooled("relu", true, {{"strides", Ints{2, 2}}})),
            "cpu_conv_pool");
  ops::Attrs three = pooled("relu", true);
  three.set("pool_ksize", Ints{3, 3});
  EXPECT_NE(selected_kernel("fused_conv2d", types({1, 13, 13, 32}, 64), three), "cpu_conv_pool");
  ops::Attrs unpooled = pooled("relu", true);
  unpooled.set("pool", std::string("none"));
  EXPECT_NE(selected_kernel("fused_conv2d", types({1, 13, 13, 32}, 64), unpooled), "cpu_conv_pool");
}

Tensor run_kernel(const std::vector<Tensor>& in, ops::Attrs attrs) {
  std::vector<TensorType> t;
  for (const Tensor& x : in) t.push_back(x.type());
  kernels::KernelSignature sig = signature_of("fused_conv2d", t, &attrs);
  auto sel = kernels::KernelRegistry::global().select(sig);
  EXPECT_EQ(sel.candidate->name, "cpu_conv_pool");
  std::vector<Tensor> out = {Tensor(sig.outputs[0].dtype, sig.outputs[0].shape)};
  kernels::KernelContext ctx{in, out, attrs, host_stream()};
  sel.kernel->run(ctx);
  return out[0];
}

Tensor ref_of(const std::vector<Tensor>& in, const ops::Attrs& attrs) {
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  return runtime::eager_call1("fused_conv2d", in, attrs, ref);
}

TEST(ConvPool, MatchesRef) {
  if (!runs_avx512_kernels()) GTEST_SKIP() << "needs AVX-512 and the vectorized kernels";
  struct Case {
    Shape x;
    int64_t c_out;
    bool bias;
    std::string act;
  };
  // Pooled widths 5 (blocks 3 + 2), 7 (3 + 3 + 1), 1, 6; odd and even convolution sizes.
  const std::vector<Case> cases = {{{1, 13, 13, 32}, 64, true, "relu"},
                                   {{3, 16, 17, 5}, 16, false, "none"},
                                   {{2, 4, 4, 3}, 32, true, "none"},
                                   {{16, 14, 15, 2}, 16, true, "relu"}};
  uint64_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(str_cat("x ", c.x, " c_out ", c.c_out));
    std::vector<Tensor> in = {random_tensor(DType::kF32, c.x, seed++),
                              random_tensor(DType::kF32, {3, 3, c.x[3], c.c_out}, seed++)};
    if (c.bias) in.push_back(random_tensor(DType::kF32, {c.c_out}, seed++));
    const ops::Attrs attrs = pooled(c.act, c.bias);
    EXPECT_LE(max_rel_error(run_kernel(in, attrs), ref_of(in, attrs)), 1e-5);
  }
}

// A NaN input reaches the pooled outputs whose windows' taps read it, through relu; elsewhere
// the outputs are numbers, as in ref.
TEST(ConvPool, NaNInputSpreadsAsInRef) {
  if (!runs_avx512_kernels()) GTEST_SKIP() << "needs AVX-512 and the vectorized kernels";
  Tensor x = random_tensor(DType::kF32, {1, 9, 9, 4}, 3);
  x.set((4 * 9 + 4) * 4 + 1, std::numeric_limits<double>::quiet_NaN());  // pixel (4, 4)
  std::vector<Tensor> in = {x, random_tensor(DType::kF32, {3, 3, 4, 16}, 4),
                            random_tensor(DType::kF32, {16}, 5)};
  const ops::Attrs attrs = pooled("relu", true);
  Tensor got = run_kernel(in, attrs), want = ref_of(in, attrs);
  int nans = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    ASSERT_EQ(std::isnan(got.get(i)), std::isnan(want.get(i))) << "element " << i;
    nans += std::isnan(want.get(i)) ? 1 : 0;
  }
  EXPECT_EQ(nans, 4 * 16);  // conv pixels 2..4 in each direction: pooled (1..2, 1..2)
}

}  // namespace
}  // namespace tern::testing
