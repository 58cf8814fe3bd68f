// Tests for small_gemm and transpose_f32 (small_gemm.h): both builds (x86-64-v3, and x86-64-v4
// where the CPU has it) and the dispatching entry points against plain double-precision loops,
// over shapes with row and column tails, both trans_a values, leading dimensions wider than the
// matrices and alpha != 1. Cells of C outside the product and of dst outside the transpose must
// keep their values.
#include "tern/backends/cpu/small_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tern/backends/cpu/cpu_isa.h"

namespace tern::cpu {
namespace {

using GemmFn = void (*)(bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                        int64_t, float*, int64_t);
using TransposeFn = void (*)(int64_t, int64_t, const float*, int64_t, float*, int64_t);

constexpr float kSentinel = -7777.0f;  // C's and dst's cells outside the result

bool cpu_has_v4() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// One product through gemm against the double-precision loop: |got - want| <= 1e-5 sqrt(k) times
// alpha * sum_p |a_ip b_pj| (the size of the terms, not of their possibly cancelling sum).
void check_gemm(GemmFn gemm, bool trans_a, int64_t m, int64_t n, int64_t k) {
  SCOPED_TRACE(::testing::Message() << (trans_a ? "TN " : "NN ") << m << "x" << n << "x" << k);
  const int64_t lda = (trans_a ? m : k) + 3, ldb = n + 5, ldc = n + 2;
  const float alpha = 0.37f;
  const std::vector<float> a = random_floats((trans_a ? k : m) * lda, 1 + m * 7 + k);
  const std::vector<float> b = random_floats(k * ldb, 2 + n * 11 + k);
  std::vector<float> c(m * ldc, kSentinel);
  gemm(trans_a, m, n, k, alpha, a.data(), lda, b.data(), ldb, c.data(), ldc);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (j >= n) {
        ASSERT_EQ(got, kSentinel) << "wrote past column n at (" << i << ", " << j << ")";
        continue;
      }
      double want = 0, size = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double t = static_cast<double>(trans_a ? a[p * lda + i] : a[i * lda + p]) *
                         static_cast<double>(b[p * ldb + j]);
        want += t;
        size += std::fabs(t);
      }
      const double tol = 1e-5 * std::sqrt(static_cast<double>(k) + 1) * alpha * size + 1e-30;
      ASSERT_NEAR(got, alpha * want, tol) << "at (" << i << ", " << j << ")";
    }
  }
}

void check_gemm_shapes(GemmFn gemm) {
  const int64_t sizes[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 128};
  for (bool trans_a : {false, true}) {
    for (int64_t m : sizes) {
      for (int64_t n : sizes) {
        for (int64_t k : sizes) {
          check_gemm(gemm, trans_a, m, n, k);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
  // Attention's shapes, and k past the tested range of 128.
  check_gemm(gemm, false, 128, 128, 64);
  check_gemm(gemm, false, 128, 64, 128);
  check_gemm(gemm, true, 128, 64, 128);
  check_gemm(gemm, false, 40, 72, 512);
  check_gemm(gemm, true, 50, 47, 300);
}

void check_transpose(TransposeFn transpose, int64_t rows, int64_t cols) {
  SCOPED_TRACE(::testing::Message() << rows << "x" << cols);
  const int64_t lds = cols + 3, ldd = rows + 5;
  const std::vector<float> src = random_floats(rows * lds, 3 + rows * 13 + cols);
  std::vector<float> dst(cols * ldd, kSentinel);
  transpose(rows, cols, src.data(), lds, dst.data(), ldd);
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t i = 0; i < ldd; ++i) {
      const float want = i < rows ? src[i * lds + j] : kSentinel;
      ASSERT_EQ(dst[j * ldd + i], want) << "at dst (" << j << ", " << i << ")";
    }
  }
}

void check_transpose_shapes(TransposeFn transpose) {
  const int64_t sizes[] = {1, 2, 5, 7, 8, 9, 15, 16, 17, 24, 31, 33, 64, 100, 128};
  for (int64_t rows : sizes) {
    for (int64_t cols : sizes) {
      check_transpose(transpose, rows, cols);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

class SmallGemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cpu_isa() != CpuIsa::kX86_64_v3)
      GTEST_SKIP() << "the CPU (or TERN_CPU_ISA) lacks x86-64-v3";
  }
};

TEST_F(SmallGemm, V3MatchesDoubleLoops) {
  check_gemm_shapes(detail::small_gemm_v3);
}

TEST_F(SmallGemm, V4MatchesDoubleLoops) {
  if (!cpu_has_v4()) GTEST_SKIP() << "the CPU lacks AVX-512";
  check_gemm_shapes(detail::small_gemm_v4);
}

TEST_F(SmallGemm, DispatchMatchesDoubleLoops) {
  check_gemm(small_gemm, false, 128, 128, 64);
  check_gemm(small_gemm, true, 33, 17, 9);
}

// k == 0: C is zeros (alpha times an empty sum), whatever a and b hold.
TEST_F(SmallGemm, EmptyInnerDimensionWritesZeros) {
  const std::vector<float> nan(9 * 17, NAN);
  for (GemmFn gemm : {detail::small_gemm_v3, detail::small_gemm_v4, small_gemm}) {
    if (gemm == detail::small_gemm_v4 && !cpu_has_v4()) continue;
    std::vector<float> c(9 * 20, kSentinel);
    gemm(false, 9, 17, 0, 2.0f, nan.data(), 0, nan.data(), 17, c.data(), 20);
    for (int64_t i = 0; i < 9; ++i) {
      for (int64_t j = 0; j < 20; ++j) EXPECT_EQ(c[i * 20 + j], j < 17 ? 0.0f : kSentinel);
    }
  }
}

class TransposeF32 : public SmallGemm {};

TEST_F(TransposeF32, V3MatchesLoops) {
  check_transpose_shapes(detail::transpose_f32_v3);
}

TEST_F(TransposeF32, V4MatchesLoops) {
  if (!cpu_has_v4()) GTEST_SKIP() << "the CPU lacks AVX-512";
  check_transpose_shapes(detail::transpose_f32_v4);
}

TEST_F(TransposeF32, DispatchMatchesLoops) {
  check_transpose(transpose_f32, 128, 64);
  check_transpose(transpose_f32, 37, 19);
}

}  // namespace
}  // namespace tern::cpu
