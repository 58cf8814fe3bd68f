// cpu_matmul_f32 (matmul_f32_cpu.cc): which f32 row products it takes (a b or a b^T of 4096 rows
// or more with K and N at most 256, a bias at most), its results against ref with and without
// the bias on rows off the 48-row blocks and 6-row tiles and columns off the 64-column tiles, and
// the same bits whatever the thread count. cpu_weight_grad_f32 (same file): which a^T b it takes
// (K of 2048 or more, C of at most 512 KB), its results against ref on K, M and N off its blocks
// and tiles, and the same bits on one thread and two.
#include <gtest/gtest.h>

#include <cstring>

#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

constexpr const char* kRows = "cpu_matmul_f32";

ops::Attrs rows_attrs(bool transpose_b, int bias = -1) {
  ops::Attrs attrs = {{"transpose_b", transpose_b}};
  if (bias >= 0) {
    attrs.set("has_bias", bias > 0);
    attrs.set("has_residual", false);
    attrs.set("activation", std::string("none"));
  }
  return attrs;
}

class RowsF32 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!has_candidate("matmul", kRows)) {
      GTEST_SKIP() << "not registered here (an AMD CPU with AVX-512)";
    }
  }
};

TEST_F(RowsF32, TakesManyRowsAgainstASmallB) {
  const TensorType a{DType::kF32, {4096, 256}}, w{DType::kF32, {256, 256}};
  EXPECT_EQ(selected_kernel("matmul", {a, w}, rows_attrs(false)), kRows);
  EXPECT_EQ(selected_kernel("matmul", {a, w}, rows_attrs(true)), kRows);
  EXPECT_EQ(selected_kernel("fused_matmul", {a, w, {DType::kF32, {256}}}, rows_attrs(false, 1)),
            kRows);
  EXPECT_NE(selected_kernel("matmul", {{DType::kF32, {2048, 256}}, w}, rows_attrs(false)),
            kRows);  // too few rows
  EXPECT_NE(selected_kernel("matmul", {a, {DType::kF32, {256, 1024}}}, rows_attrs(false)),
            kRows);  // an FFN's b: oneDNN's
  EXPECT_NE(selected_kernel("matmul", {{DType::kF32, {4096, 1024}}, {DType::kF32, {1024, 256}}},
                            rows_attrs(false)),
            kRows);  // deep K: oneDNN's
  EXPECT_NE(selected_kernel("matmul", {{DType::kF32, {256, 4096}}, {DType::kF32, {256, 256}}},
                            {{"transpose_a", true}}),
            kRows);  // a weight gradient
  EXPECT_NE(selected_kernel("matmul", {{DType::kBF16, {4096, 256}}, {DType::kBF16, {256, 256}}},
                            rows_attrs(false)),
            kRows);
  ops::Attrs relu = rows_attrs(false, 1);
  relu.set("activation", std::string("relu"));
  EXPECT_NE(selected_kernel("fused_matmul", {a, w, {DType::kF32, {256}}}, relu), kRows);
  ops::Attrs residual = rows_attrs(false, 0);
  residual.set("has_residual", true);
  EXPECT_NE(selected_kernel("fused_matmul", {a, w, {DType::kF32, {4096, 256}}}, residual), kRows);
}

// Against ref: both layouts of b, with and without a bias; rows off the 48-row blocks and 6-row
// tiles, columns off the 64-column tiles, K of 1.
TEST_F(RowsF32, MatchesRef) {
  struct Case {
    int64_t m, k, n;
    bool transpose_b, bias;
  };
  const std::vector<Case> cases = {{4096, 256, 256, false, true},
                                   {4099, 37, 70, true, false},
                                   {4133, 1, 130, false, false},
                                   {4100, 200, 17, true, true},
                                   {4097, 64, 5, false, true}};
  uint64_t seed = 200;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.m << "x" << c.k << "x" << c.n << " tb " << c.transpose_b
                                      << " bias " << c.bias);
    std::vector<Tensor> in = {
        random_tensor(DType::kF32, {c.m, c.k}, seed++),
        random_tensor(DType::kF32, c.transpose_b ? Shape{c.n, c.k} : Shape{c.k, c.n}, seed++)};
    if (c.bias) in.push_back(random_tensor(DType::kF32, {c.n}, seed++));
    const ops::Attrs attrs = rows_attrs(c.transpose_b, c.bias ? 1 : -1);
    const std::string op = c.bias ? "fused_matmul" : "matmul";
    runtime::EagerOptions ref, fast;
    ref.kernel = "ref";
    fast.kernel = kRows;
    const Tensor want = runtime::eager_call1(op, in, attrs, ref);
    const Tensor got = runtime::eager_call1(op, in, attrs, fast);
    ASSERT_EQ(got.type(), want.type());
    EXPECT_LE(max_rel_error(got, want), 2e-5);  // the summation order only
  }
}

// Each element of C sums its K in the same order with one thread as with two.
TEST_F(RowsF32, SameBitsWhateverTheThreads) {
  const int before = runtime::intra_op_threads();
  const std::vector<Tensor> in = {random_tensor(DType::kF32, {4200, 96}, 7),
                                  random_tensor(DType::kF32, {80, 96}, 8),
                                  random_tensor(DType::kF32, {80}, 9)};
  runtime::EagerOptions fast;
  fast.kernel = kRows;
  runtime::set_intra_op_threads(1);
  const Tensor one = runtime::eager_call1("fused_matmul", in, rows_attrs(true, 1), fast);
  runtime::set_intra_op_threads(2);
  const Tensor two = runtime::eager_call1("fused_matmul", in, rows_attrs(true, 1), fast);
  ASSERT_EQ(one.type(), two.type());
  EXPECT_EQ(std::memcmp(one.raw_data(), two.raw_data(), one.nbytes()), 0);
  runtime::set_intra_op_threads(before);
}

constexpr const char* kWeightGrad = "cpu_weight_grad_f32";
const ops::Attrs kTransposeA = {{"transpose_a", true}};

class WeightGradF32 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!has_candidate("matmul", kWeightGrad)) {
      GTEST_SKIP() << "not registered here (an AMD CPU with AVX-512)";
    }
  }
};

TEST_F(WeightGradF32, TakesDeepProductsWithASmallResult) {
  const TensorType x{DType::kF32, {4096, 256}};
  EXPECT_EQ(selected_kernel("matmul", {x, x}, kTransposeA), kWeightGrad);
  EXPECT_EQ(selected_kernel("matmul", {{DType::kF32, {2048, 64}}, {DType::kF32, {2048, 2048}}},
                            kTransposeA),
            kWeightGrad);  // C of 512 KB
  EXPECT_NE(selected_kernel("matmul", {{DType::kF32, {1024, 256}}, {DType::kF32, {1024, 256}}},
                            kTransposeA),
            kWeightGrad);  // shallow
  EXPECT_NE(selected_kernel("matmul", {x, {DType::kF32, {4096, 1024}}}, kTransposeA),
            kWeightGrad);  // an FFN's 1 MB C: oneDNN's swapped form
  EXPECT_NE(selected_kernel("matmul", {x, {DType::kF32, {256, 256}}}, {}), kWeightGrad);
  EXPECT_NE(selected_kernel("matmul", {{DType::kBF16, {4096, 256}}, {DType::kBF16, {4096, 256}}},
                            kTransposeA),
            kWeightGrad);
}

// Against ref: K off the 128-row blocks (and halves that are not whole blocks), M off the 6-row
// tiles, N off the 64-column tiles.
TEST_F(WeightGradF32, MatchesRef) {
  struct Case {
    int64_t k, m, n;
  };
  const std::vector<Case> cases = {{4096, 256, 256}, {2049, 7, 70}, {3001, 130, 1}, {2300, 1, 200}};
  uint64_t seed = 300;
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.k << "x" << c.m << "x" << c.n);
    const std::vector<Tensor> in = {random_tensor(DType::kF32, {c.k, c.m}, seed++),
                                    random_tensor(DType::kF32, {c.k, c.n}, seed++)};
    runtime::EagerOptions ref, fast;
    ref.kernel = "ref";
    fast.kernel = kWeightGrad;
    const Tensor want = runtime::eager_call1("matmul", in, kTransposeA, ref);
    const Tensor got = runtime::eager_call1("matmul", in, kTransposeA, fast);
    ASSERT_EQ(got.type(), want.type());
    // The summation order only; sums of thousands of terms cancel, so the difference is taken
    // against the largest result.
    EXPECT_LE(max_scaled_error(got, want), 2e-6);
  }
}

// The halves of K are summed in the same order with one thread as with two.
TEST_F(WeightGradF32, SameBitsWhateverTheThreads) {
  const int before = runtime::intra_op_threads();
  const std::vector<Tensor> in = {random_tensor(DType::kF32, {2500, 40}, 11),
                                  random_tensor(DType::kF32, {2500, 90}, 12)};
  runtime::EagerOptions fast;
  fast.kernel = kWeightGrad;
  runtime::set_intra_op_threads(1);
  const Tensor one = runtime::eager_call1("matmul", in, kTransposeA, fast);
  runtime::set_intra_op_threads(2);
  const Tensor two = runtime::eager_call1("matmul", in, kTransposeA, fast);
  ASSERT_EQ(one.type(), two.type());
  EXPECT_EQ(std::memcmp(one.raw_data(), two.raw_data(), one.nbytes()), 0);
  runtime::set_intra_op_threads(before);
}

}  // namespace
}  // namespace tern::testing
