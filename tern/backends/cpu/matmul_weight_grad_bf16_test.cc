// The bf16 weight-gradient kernel (matmul_weight_grad_bf16_cpu.cc): which matmuls it takes (bf16
// a^T b with an f32 result, 2-D), its results against ref on each way it cuts the work (over
// halves of K, by columns, by rows; odd K, tails of rows and columns), and the same bits whatever
// the thread count.
#include <gtest/gtest.h>

#include <cstring>

#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

constexpr const char* kKernel = "cpu_weight_grad_bf16";

const ops::Attrs kWeightGradient = {
    {"transpose_a", true}, {"transpose_b", false}, {"out_dtype", std::string("f32")}};

class WeightGradBf16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!has_candidate("matmul", kKernel)) {
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

}  // namespace
}  // namespace tern::testing
