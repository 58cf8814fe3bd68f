// Tests for small_gemm, small_gemm_acc, small_gemm_bias and transpose_f32 (small_gemm.h): both
// builds (x86-64-v3, and x86-64-v4 where the CPU has it) and the dispatching entry points against
// plain double-precision loops, over shapes with row and column tails, both trans_a values, leading
// dimensions wider than the matrices and alpha != 1. Cells of C outside the product and of dst
// outside the transpose must keep their values.
#include "tern/backends/cpu/small_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
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

// C[m x n] (row stride ldc) against alpha * sum_p term(i, j, p) in double: |got - want| <= 1e-5
// sqrt(k) times alpha * sum_p |term| (the size of the terms, not of their possibly cancelling
// sum); cells past column n must keep kSentinel.
template <typename Term>
void expect_product(const std::vector<float>& c, int64_t m, int64_t n, int64_t k, int64_t ldc,
                    float alpha, Term term) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (j >= n) {
        ASSERT_EQ(got, kSentinel) << "wrote past column n at (" << i << ", " << j << ")";
        continue;
      }
      double want = 0, size = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double t = term(i, j, p);
        want += t;
        size += std::fabs(t);
      }
      const double tol = 1e-5 * std::sqrt(static_cast<double>(k) + 1) * alpha * size + 1e-30;
      ASSERT_NEAR(got, alpha * want, tol) << "at (" << i << ", " << j << ")";
    }
  }
}

// One product through gemm against the double-precision loop (expect_product).
void check_gemm(GemmFn gemm, bool trans_a, int64_t m, int64_t n, int64_t k) {
  SCOPED_TRACE(::testing::Message() << (trans_a ? "TN " : "NN ") << m << "x" << n << "x" << k);
  const int64_t lda = (trans_a ? m : k) + 3, ldb = n + 5, ldc = n + 2;
  const float alpha = 0.37f;
  const std::vector<float> a = random_floats((trans_a ? k : m) * lda, 1 + m * 7 + k);
  const std::vector<float> b = random_floats(k * ldb, 2 + n * 11 + k);
  std::vector<float> c(m * ldc, kSentinel);
  gemm(trans_a, m, n, k, alpha, a.data(), lda, b.data(), ldb, c.data(), ldc);
  expect_product(c, m, n, k, ldc, alpha, [&](int64_t i, int64_t j, int64_t p) {
    return static_cast<double>(trans_a ? a[p * lda + i] : a[i * lda + p]) *
           static_cast<double>(b[p * ldb + j]);
  });
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

using GemmAccFn = void (*)(bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*,
                           int64_t, float*, int64_t);

// The accumulating form adds op(A) B to what C holds (C's prior values plus the double-precision
// product), over shapes with row and column tails and both trans_a values; cells past column n
// keep their values.
void check_gemm_acc(GemmAccFn gemm, bool trans_a, int64_t m, int64_t n, int64_t k) {
  SCOPED_TRACE(::testing::Message()
               << "acc " << (trans_a ? "TN " : "NN ") << m << "x" << n << "x" << k);
  const int64_t lda = (trans_a ? m : k) + 3, ldb = n + 5, ldc = n + 2;
  const std::vector<float> a = random_floats((trans_a ? k : m) * lda, 4 + m * 7 + k);
  const std::vector<float> b = random_floats(k * ldb, 5 + n * 11 + k);
  const std::vector<float> c0 = random_floats(m * ldc, 6 + m + n);
  std::vector<float> c = c0;
  gemm(trans_a, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float got = c[i * ldc + j];
      if (j >= n) {
        ASSERT_EQ(got, c0[i * ldc + j]) << "wrote past column n at (" << i << ", " << j << ")";
        continue;
      }
      double want = c0[i * ldc + j], size = std::fabs(want);
      for (int64_t p = 0; p < k; ++p) {
        const double t = static_cast<double>(trans_a ? a[p * lda + i] : a[i * lda + p]) *
                         static_cast<double>(b[p * ldb + j]);
        want += t;
        size += std::fabs(t);
      }
      ASSERT_NEAR(got, want, 1e-5 * std::sqrt(static_cast<double>(k) + 1) * size + 1e-30)
          << "at (" << i << ", " << j << ")";
    }
  }
}

void check_gemm_acc_shapes(GemmAccFn gemm) {
  const int64_t sizes[] = {1, 5, 6, 7, 16, 17, 33, 64, 70};
  for (bool trans_a : {false, true}) {
    for (int64_t m : sizes) {
      for (int64_t n : sizes) {
        for (int64_t k : {1, 7, 18, 64}) {
          check_gemm_acc(gemm, trans_a, m, n, k);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST_F(SmallGemm, AccumulatingFormAddsToC) {
  check_gemm_acc_shapes(detail::small_gemm_acc_v3);
  if (cpu_has_v4()) check_gemm_acc_shapes(detail::small_gemm_acc_v4);
  check_gemm_acc(small_gemm_acc, true, 64, 64, 18);  // a Winograd filter gradient's block
}

// small_gemm_bias: A B plus the bias on every row (or A B alone with a null bias, bit for bit
// small_gemm's with alpha 1), over shapes with row and column tails; cells past column n keep
// their values. Both builds through the entry point (v4 where the CPU has it, else v3 and a pass).
TEST_F(SmallGemm, BiasFormAddsTheBiasToEveryRow) {
  const int64_t sizes[] = {1, 5, 6, 7, 16, 17, 33, 64, 70, 130};
  for (int64_t m : {1, 5, 6, 7, 13, 48}) {
    for (int64_t n : sizes) {
      for (int64_t k : {1, 7, 64, 256}) {
        SCOPED_TRACE(::testing::Message() << "bias " << m << "x" << n << "x" << k);
        const int64_t lda = k + 3, ldb = n + 5, ldc = n + 2;
        const std::vector<float> a = random_floats(m * lda, 7 + m * 7 + k);
        const std::vector<float> b = random_floats(k * ldb, 8 + n * 11 + k);
        const std::vector<float> bias = random_floats(n, 9 + n);
        std::vector<float> c(m * ldc, kSentinel), plain(m * ldc, kSentinel), c0(m * ldc, kSentinel);
        small_gemm_bias(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc, bias.data());
        expect_product(c, m, n, k + 1, ldc, 1.0f, [&](int64_t i, int64_t j, int64_t p) {
          return p == k ? static_cast<double>(bias[j])
                        : static_cast<double>(a[i * lda + p]) * static_cast<double>(b[p * ldb + j]);
        });
        small_gemm_bias(m, n, k, a.data(), lda, b.data(), ldb, plain.data(), ldc, nullptr);
        small_gemm(false, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, c0.data(), ldc);
        ASSERT_EQ(plain, c0);
        if (::testing::Test::HasFatalFailure()) return;
      }
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

// --- small_gemm_bf16 and its packers ---

float round_bf16(float x) {
  return static_cast<float>(bfloat16(x));
}

// One product through small_gemm_bf16 against the double-precision loop over the bf16-rounded
// operands, packed as attention packs them: A's rows rounded in place (round_rows_f32, k padded to
// even with +0) or, with trans_a, A^T's rows paired (pair_rows_f32); B's rows paired. The
// tolerance is expect_product's (f32 accumulation of exact bf16 products).
void check_gemm_bf16(bool trans_a, int64_t m, int64_t n, int64_t k) {
  SCOPED_TRACE(::testing::Message()
               << "bf16 " << (trans_a ? "TN " : "NN ") << m << "x" << n << "x" << k);
  const int64_t kp = (k + 1) / 2, ldc = n + 2;
  const float alpha = 0.37f;
  // op(A) as stored: [m, k] (rows i) or [k, m] (trans_a), and B [k, n], f32.
  const std::vector<float> a = random_floats(m * k, 1 + m * 7 + k);
  const std::vector<float> b = random_floats(k * n, 2 + n * 11 + k);
  auto a_at = [&](int64_t i, int64_t p) { return trans_a ? a[p * m + i] : a[i * k + p]; };
  std::vector<uint32_t> ap, bp(kp * (n + 1), 0xDEADBEEFu);
  int64_t lda = 0;
  if (trans_a) {
    lda = m + 1;
    ap.assign(kp * lda, 0xDEADBEEFu);
    pair_rows_f32(k, m, a.data(), m, ap.data(), lda);
  } else {
    lda = kp + 1;  // in pairs
    ap.assign(m * lda, 0);
    round_rows_f32(m, k, a.data(), k, reinterpret_cast<bfloat16*>(ap.data()), 2 * lda);
  }
  pair_rows_f32(k, n, b.data(), n, bp.data(), n + 1);
  std::vector<float> c(m * ldc, kSentinel);
  small_gemm_bf16(trans_a, m, n, kp, alpha, ap.data(), lda, bp.data(), n + 1, c.data(), ldc);
  expect_product(c, m, n, k, ldc, alpha, [&](int64_t i, int64_t j, int64_t p) {
    return static_cast<double>(round_bf16(a_at(i, p))) *
           static_cast<double>(round_bf16(b[p * n + j]));
  });
}

class SmallGemmBf16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!small_gemm_bf16_available()) GTEST_SKIP() << "the CPU lacks AVX512_BF16";
  }
};

TEST_F(SmallGemmBf16, MatchesDoubleLoopsOnRoundedOperands) {
  const int64_t sizes[] = {1, 2, 3, 7, 16, 17, 33, 64, 100};
  for (bool trans_a : {false, true}) {
    for (int64_t m : sizes) {
      for (int64_t n : sizes) {
        for (int64_t k : sizes) {
          check_gemm_bf16(trans_a, m, n, k);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
  // Attention's shapes.
  check_gemm_bf16(false, 128, 128, 64);
  check_gemm_bf16(false, 128, 64, 128);
  check_gemm_bf16(true, 128, 64, 128);
}

// small_gemm_bf16_acc adds A B to what C holds (A as with trans_a): C's prior values plus the
// double-precision product of the rounded operands.
TEST_F(SmallGemmBf16, AccumulatingFormAddsToC) {
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                         {7, 33, 5},
                         {24, 64, 64},
                         {25, 100, 17},
                         {6, 17, 128}}) {
    SCOPED_TRACE(::testing::Message() << "acc " << m << "x" << n << "x" << k);
    const int64_t kp = (k + 1) / 2, ldc = n + 3;
    const std::vector<float> a = random_floats(k * m, 3 + m + k);  // [k, m]
    const std::vector<float> b = random_floats(k * n, 4 + n + k);
    const std::vector<float> c0 = random_floats(m * ldc, 5 + m * n);
    std::vector<uint32_t> ap(kp * (m + 2)), bp(kp * n);
    pair_rows_f32(k, m, a.data(), m, ap.data(), m + 2);
    pair_rows_f32(k, n, b.data(), n, bp.data(), n);
    std::vector<float> c = c0;
    small_gemm_bf16_acc(m, n, kp, ap.data(), m + 2, bp.data(), n, c.data(), ldc);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double want = c0[i * ldc + j], scale = std::abs(want);
        for (int64_t p = 0; p < k; ++p) {
          const double t = static_cast<double>(round_bf16(a[p * m + i])) *
                           static_cast<double>(round_bf16(b[p * n + j]));
          want += t;
          scale += std::abs(t);
        }
        EXPECT_NEAR(c[i * ldc + j], want, 1e-5 * std::sqrt(static_cast<double>(k) + 1) * scale)
            << i << ", " << j;
      }
      for (int64_t j = n; j < ldc; ++j) EXPECT_EQ(c[i * ldc + j], c0[i * ldc + j]);  // untouched
    }
  }
}

// The packers' layout: word q of column j holds rows 2q (low half) and 2q + 1 (high half); an odd
// last row pairs with +0; f32 values round to nearest even (ties included), NaN stays NaN.
TEST_F(SmallGemmBf16, PackersPairRowsAndRoundToNearestEven) {
  const int64_t rows = 5;
  for (int64_t cols : {19, 77}) {  // 77: two groups of 32 columns (the bf16 packer's wide step)
    std::vector<bfloat16> src(rows * (cols + 1));
    std::vector<float> f(rows * (cols + 1));
    for (int64_t i = 0; i < static_cast<int64_t>(src.size()); ++i) {
      src[i].bits = static_cast<uint16_t>(0x3F80 + i);  // distinct bf16 values
      f[i] = static_cast<float>(src[i]);
    }
    std::vector<uint32_t> from_bf16(3 * cols, 0), from_f32(3 * cols, 0);
    pair_rows_bf16(rows, cols, src.data(), cols + 1, from_bf16.data(), cols);
    pair_rows_f32(rows, cols, f.data(), cols + 1, from_f32.data(), cols);
    for (int64_t q = 0; q < 3; ++q) {
      for (int64_t j = 0; j < cols; ++j) {
        const uint32_t lo = src[2 * q * (cols + 1) + j].bits;
        const uint32_t hi = 2 * q + 1 < rows ? src[(2 * q + 1) * (cols + 1) + j].bits : 0u;
        EXPECT_EQ(from_bf16[q * cols + j], lo | hi << 16) << cols << ": " << q << ", " << j;
        EXPECT_EQ(from_f32[q * cols + j], lo | hi << 16) << cols << ": " << q << ", " << j;
      }
    }
  }
  // Rounding: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 (even: 1); 1 + 3 * 2^-9 rounds up.
  const float vals[4] = {1.0f + 0x1p-8f, 1.0f + 0x1.8p-8f, -2.0f, NAN};
  bfloat16 out[4];
  round_rows_f32(1, 4, vals, 4, out, 4);
  EXPECT_EQ(out[0].bits, 0x3F80);
  EXPECT_EQ(out[1].bits, 0x3F81);
  EXPECT_EQ(out[2].bits, 0xC000);
  EXPECT_TRUE(std::isnan(static_cast<float>(out[3])));
}

}  // namespace
}  // namespace tern::cpu
