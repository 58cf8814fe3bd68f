// Which fused convolutions the one-channel pooled kernel takes (its results against ref are the
// consistency cases "pool-1ch-*" and the NaN case "onednn-pool-relu").
#include <gtest/gtest.h>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

using Ints = std::vector<int64_t>;

ops::Attrs pooled(std::string activation, ops::Attrs base = {}) {
  base.set("activation", std::move(activation));
  base.set("has_bias", true);
  base.set("pool", std::string("max"));
  base.set("pool_ksize", Ints{2, 2});
  base.set("pool_strides", Ints{2, 2});
  return base;
}

TEST(ConvPoolOneChannel, TakesOneChannel3x3With2x2Pooling) {
  runtime::initialize();
  if (cpu::cpu_isa() != cpu::CpuIsa::kX86_64_v3) GTEST_SKIP() << "vectorized kernels are off";
  auto kernel = [](DType d, int64_t c_in, int64_t k, ops::Attrs attrs) {
    return selected_kernel("fused_conv2d",
                           {{d, {2, 28, 28, c_in}}, {d, {k, k, c_in, 32}}, {d, {32}}}, attrs);
  };
  EXPECT_EQ(kernel(DType::kF32, 1, 3, pooled("relu")), "cpu_vec");
  EXPECT_EQ(kernel(DType::kF32, 1, 3, pooled("none", {{"padding", std::string("SAME")}})),
            "cpu_vec");
  EXPECT_NE(kernel(DType::kF32, 2, 3, pooled("relu")), "cpu_vec");  // two input channels
  EXPECT_NE(kernel(DType::kF32, 1, 5, pooled("relu")), "cpu_vec");  // a 5x5 filter
  EXPECT_NE(kernel(DType::kF32, 1, 3, pooled("tanh")), "cpu_vec");
  EXPECT_NE(kernel(DType::kF32, 1, 3, pooled("relu", {{"strides", Ints{2, 2}}})), "cpu_vec");
  ops::Attrs three = pooled("relu");
  three.set("pool_ksize", Ints{3, 3});
  EXPECT_NE(kernel(DType::kF32, 1, 3, three), "cpu_vec");
  EXPECT_NE(kernel(DType::kBF16, 1, 3, pooled("relu")), "cpu_vec");
  ops::Attrs unpooled = pooled("relu");
  unpooled.set("pool", std::string("none"));
  EXPECT_NE(kernel(DType::kF32, 1, 3, unpooled), "cpu_vec");
}

}  // namespace
}  // namespace tern::testing
