// The bf16 matmul kernels of matmul_bf16_cpu.cc. cpu_weight_grad_bf16: which matmuls it takes
// (bf16 a^T b with an f32 result, 2-D), its results against ref on each way it cuts the work (over
// halves of K, by columns, by rows; odd K, tails of rows and columns), and the same bits whatever
// the thread count. cpu_matmul_bf16: which row products it takes (a b or a b^T of 4096 rows or
// more, even K, a bias at most), its results against ref with each result and bias type.
#include <gtest/gtest.h>

#include <cstring>

#include "tern/backends/cpu/onednn_conv.h"
#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

using Ints = std::vector<int64_t>;

constexpr const char* kKernel = "cpu_weight_grad_bf16";
constexpr const char* kRows = "cpu_matmul_bf16";

const ops::Attrs kWeightGradient = {
    {"transpose_a", true}, {"transpose_b", false}, {"out_dtype", std::string("f32")}};

class WeightGradBf16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!has_candidate("matmul", kKernel) || !has_candidate("matmul", kRows)) {
      GTEST_SKIP() << "not registered here (an AMD CPU with AVX512_BF16 and bf16 contractions "
                      "not widened)";
    }
  }
};

TEST_F(WeightGradBf16, TakesBf16TransposedAWithF32Results) {
  const Shape a{4096, 256}, b{4096, 1024};
  EXPECT_EQ(selected_kernel("matmul", {{DType::kBF16, a}, {DType::kBF16, b}}, kWeightGradient),
            kKernel);
  ops::Attrs bf16_out = kWeightGradient;
  bf16_out.set("out_dtype", std::string(""));
  EXPECT_NE(selected_kernel("matmul", {{DType::kBF16, a}, {DType::kBF16, b}}, bf16_out), kKernel);
  EXPECT_NE(
      selected_kernel("matmul", {{DType::kF32, a}, {DType::kF32, b}}, {{"transpose_a", true}}),
      kKernel);
  EXPECT_NE(selected_kernel("matmul", {{DType::kBF16, {256, 4096}}, {DType::kBF16, b}},
                            {{"out_dtype", std::string("f32")}}),
            kKernel);  // not transposed
  EXPECT_NE(selected_kernel("matmul", {{DType::kBF16, {2, 64, 16}}, {DType::kBF16, {2, 64, 32}}},
                            kWeightGradient),
            kKernel);  // batched
}

// Against ref over shapes that take each path: K >= 1024 with a small C (halves of K), odd K, C
// wider than tall (columns), taller than wide (rows), rows and columns off the 6 x 64 tiles.
TEST_F(WeightGradBf16, MatchesRef) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1100, 20}, {1100, 70}},  {{1025, 33}, {1025, 48}}, {{4096, 64}, {4096, 64}},
      {{64, 10}, {64, 200}},     {{7, 130}, {7, 20}},      {{1, 5}, {1, 3}},
      {{300, 256}, {300, 1024}}, {{513, 1030}, {513, 17}}};
  uint64_t seed = 1;
  for (const auto& [a_shape, b_shape] : cases) {
    SCOPED_TRACE(a_shape.to_string() + "^T x " + b_shape.to_string());
    const Tensor a = random_tensor(DType::kBF16, a_shape, seed++);
    const Tensor b = random_tensor(DType::kBF16, b_shape, seed++);
    runtime::EagerOptions ref, fast;
    ref.kernel = "ref";
    fast.kernel = kKernel;
    const Tensor want = runtime::eager_call1("matmul", {a, b}, kWeightGradient, ref);
    const Tensor got = runtime::eager_call1("matmul", {a, b}, kWeightGradient, fast);
    ASSERT_EQ(got.type(), want.type());
    // Exact bf16 products summed in f32 in another order: within a few f32 roundings of |C|.
    EXPECT_LE(max_rel_error(got, want), 2e-5);
  }
}

// Each element of C sums its K in the same order with one thread as with two.
TEST_F(WeightGradBf16, SameBitsWhateverTheThreads) {
  const int before = runtime::intra_op_threads();
  for (const auto& [a_shape, b_shape] :
       std::vector<std::pair<Shape, Shape>>{{{2048, 96}, {2048, 80}}, {{200, 40}, {200, 300}}}) {
    const Tensor a = random_tensor(DType::kBF16, a_shape, 7);
    const Tensor b = random_tensor(DType::kBF16, b_shape, 8);
    runtime::EagerOptions fast;
    fast.kernel = kKernel;
    runtime::set_intra_op_threads(1);
    const Tensor one = runtime::eager_call1("matmul", {a, b}, kWeightGradient, fast);
    runtime::set_intra_op_threads(2);
    const Tensor two = runtime::eager_call1("matmul", {a, b}, kWeightGradient, fast);
    ASSERT_EQ(one.type(), two.type());
    EXPECT_EQ(std::memcmp(one.raw_data(), two.raw_data(), one.nbytes()), 0) << a_shape.to_string();
  }
  runtime::set_intra_op_threads(before);
}

// bf16 filter gradients of 1024 output pixels or more run as GEMMs multiply on the same product:
// a 1x1 layer (x read in place as its patches, past kFilterGradientGemmMaxRows pixels) gives the
// matmul kernel's bits for x^T dy, and with a bf16 result those rounded; a 3x3 layer (im2col
// patches) within bf16-product error of ref; fewer pixels, or f32, take the GEMM's old limits.
TEST_F(WeightGradBf16, FilterGradientsAsGemmsMultiplyOnIt) {
  const ops::Attrs valid = {{"padding", std::string("VALID")}};
  auto geometry = [&](const Shape& x, const Shape& f) { return ops::conv2d_geometry(x, f, valid); };
  EXPECT_TRUE(cpu::onednn::filter_gradient_gemm_applies(geometry({32, 16, 16, 64}, {1, 1, 64, 32}),
                                                        DType::kBF16));  // 8192 rows
  EXPECT_FALSE(cpu::onednn::filter_gradient_gemm_applies(geometry({32, 16, 16, 64}, {1, 1, 64, 32}),
                                                         DType::kF32));
  EXPECT_FALSE(cpu::onednn::filter_gradient_gemm_applies(geometry({32, 18, 18, 64}, {3, 3, 64, 32}),
                                                         DType::kBF16));  // patches to copy

  const Shape xs{32, 16, 16, 64}, dys{32, 16, 16, 32};
  const Tensor x = random_tensor(DType::kBF16, xs, 11), dy = random_tensor(DType::kBF16, dys, 12);
  runtime::EagerOptions onednn, fast, ref;
  onednn.kernel = "onednn";
  fast.kernel = kKernel;
  ref.kernel = "ref";
  ops::Attrs f32_attrs = {{"filter_shape", Ints{1, 1, 64, 32}},
                          {"dfilter_dtype", std::string("f32")}};
  const Tensor dw = runtime::eager_call1("conv2d_backprop_filter", {x, dy}, f32_attrs, onednn);
  const Tensor product = runtime::eager_call1(
      "matmul", {x.reshape({8192, 64}), dy.reshape({8192, 32})}, kWeightGradient, fast);
  ASSERT_EQ(dw.nbytes(), product.nbytes());
  EXPECT_EQ(std::memcmp(dw.raw_data(), product.raw_data(), dw.nbytes()), 0);
  const Tensor want = runtime::eager_call1("conv2d_backprop_filter", {x, dy}, f32_attrs, ref);
  EXPECT_LE(max_rel_error(dw, want), 2e-5);
  ops::Attrs bf16_attrs = {{"filter_shape", Ints{1, 1, 64, 32}}};
  const Tensor dw16 = runtime::eager_call1("conv2d_backprop_filter", {x, dy}, bf16_attrs, onednn);
  ASSERT_EQ(dw16.dtype(), DType::kBF16);
  for (int64_t i = 0; i < dw16.num_elements(); ++i) {
    ASSERT_EQ(dw16.get(i),
              static_cast<double>(static_cast<float>(bfloat16(static_cast<float>(dw.get(i))))))
        << i;
  }

  const Shape x3{16, 10, 10, 24}, dy3{16, 8, 8, 40};  // 1024 rows, 3x3 patches
  const Tensor xa = random_tensor(DType::kBF16, x3, 13), dya = random_tensor(DType::kBF16, dy3, 14);
  ops::Attrs attrs3 = {{"filter_shape", Ints{3, 3, 24, 40}}, {"dfilter_dtype", std::string("f32")}};
  EXPECT_LE(max_rel_error(runtime::eager_call1("conv2d_backprop_filter", {xa, dya}, attrs3, onednn),
                          runtime::eager_call1("conv2d_backprop_filter", {xa, dya}, attrs3, ref)),
            2e-5);
}

ops::Attrs rows_attrs(bool transpose_b, std::string out_dtype, int bias = -1) {
  ops::Attrs attrs = {{"transpose_b", transpose_b}, {"out_dtype", std::move(out_dtype)}};
  if (bias >= 0) {
    attrs.set("has_bias", bias > 0);
    attrs.set("has_residual", false);
    attrs.set("activation", std::string("none"));
  }
  return attrs;
}

using RowsBf16 = WeightGradBf16;

TEST_F(RowsBf16, TakesRowProductsWithABias) {
  const TensorType a{DType::kBF16, {4096, 256}}, w{DType::kBF16, {256, 1024}},
      wt{DType::kBF16, {1024, 256}};
  EXPECT_EQ(selected_kernel("matmul", {a, w}, rows_attrs(false, "")), kRows);
  EXPECT_EQ(selected_kernel("matmul", {a, wt}, rows_attrs(true, "f32")), kRows);
  EXPECT_EQ(
      selected_kernel("fused_matmul", {a, w, {DType::kBF16, {1024}}}, rows_attrs(false, "", 1)),
      kRows);
  EXPECT_EQ(
      selected_kernel("fused_matmul", {a, w, {DType::kF32, {1024}}}, rows_attrs(false, "f32", 1)),
      kRows);
  EXPECT_NE(selected_kernel("matmul", {{DType::kBF16, {2048, 256}}, w}, rows_attrs(false, "")),
            kRows);  // too few rows
  EXPECT_NE(selected_kernel("matmul", {{DType::kBF16, {4096, 255}}, {DType::kBF16, {255, 64}}},
                            rows_attrs(false, "")),
            kRows);  // odd K
  ops::Attrs relu = rows_attrs(false, "", 1);
  relu.set("activation", std::string("relu"));
  EXPECT_NE(selected_kernel("fused_matmul", {a, w, {DType::kBF16, {1024}}}, relu), kRows);
  ops::Attrs residual = rows_attrs(false, "", 0);
  residual.set("has_residual", true);
  EXPECT_NE(selected_kernel("fused_matmul", {a, w, {DType::kBF16, {4096, 1024}}}, residual), kRows);
}

// Against ref: both layouts of b, bf16 and f32 results (a bias of the result's type); rows off the
// 48-row blocks and 6-row tiles, columns off the 64-column tiles.
TEST_F(RowsBf16, MatchesRef) {
  struct Case {
    int64_t m, k, n;
    bool transpose_b;
    std::string out;
    DType bias;  // kBool: no bias
  };
  const std::vector<Case> cases = {{4096, 34, 70, false, "", DType::kBool},
                                   {4100, 2, 16, true, "f32", DType::kBool},
                                   {4133, 48, 130, false, "", DType::kBF16},
                                   {4096, 64, 100, true, "f32", DType::kF32},
                                   {4097, 20, 5, false, "f32", DType::kF32}};
  uint64_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.m << "x" << c.k << "x" << c.n << " tb " << c.transpose_b
                                      << " out '" << c.out << "' bias " << dtype_name(c.bias));
    std::vector<Tensor> in = {
        random_tensor(DType::kBF16, {c.m, c.k}, seed++),
        random_tensor(DType::kBF16, c.transpose_b ? Shape{c.n, c.k} : Shape{c.k, c.n}, seed++)};
    const bool fused = c.bias != DType::kBool;
    if (fused) in.push_back(random_tensor(c.bias, {c.n}, seed++));
    const ops::Attrs attrs = rows_attrs(c.transpose_b, c.out, fused ? 1 : -1);
    const std::string op = fused ? "fused_matmul" : "matmul";
    runtime::EagerOptions ref, fast;
    ref.kernel = "ref";
    fast.kernel = kRows;
    const Tensor want = runtime::eager_call1(op, in, attrs, ref);
    const Tensor got = runtime::eager_call1(op, in, attrs, fast);
    ASSERT_EQ(got.type(), want.type());
    // f32: summation order only; bf16: one rounding (2^-8 relative) either way of a tie.
    EXPECT_LE(max_rel_error(got, want), want.dtype() == DType::kF32 ? 2e-5 : 1e-2);
  }
}

}  // namespace
}  // namespace tern::testing
