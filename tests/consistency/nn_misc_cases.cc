// Consistency cases: dropout / dropout_apply and embedding, plus dropout's mask properties (the
// packed mask output, dropout_apply with it equal to dropout of the same seed and offset) and the
// range checks on ids, rates and masks.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>  // before random_tensor.h, which uses std::floor

#include "tern/base/row_error.h"
#include "tern/runtime/eager.h"
#include "tests/consistency/op_case.h"
#include "tests/support/random_tensor.h"

namespace tern::testing {

TERN_OP_CASES(nn_misc) {
  const ops::Attrs drop = {{"rate", 0.3}, {"seed", int64_t{42}}};
  const ops::Attrs keep_all = {{"rate", 0.0}, {"seed", int64_t{42}}};
  return {
      {"dropout", {In({4, 6}), Idx({}, 0, 100)}, drop},
      {"dropout", {In({3, 5}), Idx({}, 0, 100)}, keep_all, true, {}, 1e-5, "rate0"},
      // With a residual (fuse_dropout_residual): its gradient is dy.
      {"dropout", {In({4, 6}), Idx({}, 0, 100), In({4, 6})}, drop, true, {}, 1e-5, "residual"},
      {"dropout",
       {In({40, 37}), Idx({}, 0, 100), In({40, 37})},
       drop,
       false,
       {},
       1e-5,
       "residual-ragged"},
      // Random bit patterns as masks: 24 elements in one word, 200 in seven (a ragged last word).
      {"dropout_apply", {In({4, 6}), Idx({1}, INT32_MIN, INT32_MAX, DType::kI32)}, {{"rate", 0.3}}},
      {"dropout_apply",
       {In({5, 40}), Idx({7}, INT32_MIN, INT32_MAX, DType::kI32)},
       {{"rate", 0.5}},
       true,
       {},
       1e-5,
       "words"},
      {"embedding", {In({6, 3}), Idx({2, 4}, 0, 6)}},
      {"embedding", {In({5, 2}), Idx({7}, 0, 5, DType::kI32)}, {}, true, {}, 1e-5, "i32-ids"},
      {"embedding", {In({4, 2, 3}), Idx({3}, 0, 4)}, {}, true, {}, 1e-5, "row-blocks"},
      // Over the fast kernel's threshold for threads (256 KB of output).
      {"embedding", {In({50, 64}), Idx({64, 32}, 0, 50)}, {}, false, {}, 1e-5, "threads"},
  };
}

// --- behaviour beyond the case table ---

namespace {

Tensor offset(int64_t v) {
  return Tensor::scalar(DType::kI64, static_cast<double>(v));
}

std::vector<Tensor> drop(const Tensor& x, int64_t off, double rate, int64_t seed) {
  return runtime::eager_call("dropout", {x, offset(off)}, {{"rate", rate}, {"seed", seed}});
}

}  // namespace

TEST(Dropout, MaskIsAPureFunctionOfSeedAndOffset) {
  Tensor x = Tensor::full(DType::kF32, {1000}, 1.0);
  Tensor a = drop(x, 5, 0.5, 7)[0], b = drop(x, 5, 0.5, 7)[0];
  EXPECT_TRUE(bitwise_equal(a, b));
  EXPECT_FALSE(bitwise_equal(a, drop(x, 6, 0.5, 7)[0])) << "a new offset must give a new mask";
  EXPECT_FALSE(bitwise_equal(a, drop(x, 5, 0.5, 8)[0])) << "a new seed must give a new mask";
}

// dropout's second output packs its mask (bit i % 32 of word i / 32 = element i kept), and
// dropout_apply with it scales another tensor exactly as dropout of the same seed and offset
// does (the mask is what dropout drew): the gradient rule reads the mask. Ragged sizes; fast
// kernels and ref.
TEST(Dropout, PackedMaskMatchesTheDrawnOne) {
  runtime::EagerOptions ref, fast;
  ref.kernel = "ref";
  const ops::Attrs attrs = {{"rate", 0.3}, {"seed", int64_t{9}}};
  for (const runtime::EagerOptions& o : {ref, fast}) {
    for (DType d : {DType::kF32, DType::kF64, DType::kBF16}) {
      for (int64_t n : {1, 31, 32, 33, 64, 65, 1000, 70001}) {
        SCOPED_TRACE(str_cat(o.kernel, " ", dtype_name(d), " n=", n));
        Tensor x = random_tensor(d, {n}, 3, 0.5, 1.5);  // never 0: kept <=> y != 0
        std::vector<Tensor> out = runtime::eager_call("dropout", {x, offset(4)}, attrs, o);
        ASSERT_EQ(out[1].dtype(), DType::kI32);
        ASSERT_EQ(out[1].shape(), (Shape{(n + 31) / 32}));
        const auto* words = out[1].data<int32_t>();
        for (int64_t i = 0; i < n; ++i) {
          bool bit = (static_cast<uint32_t>(words[i / 32]) >> (i % 32)) & 1u;
          ASSERT_EQ(bit, out[0].get(i) != 0.0) << "element " << i;
        }
        if (n % 32) {  // bits past the end stay clear
          EXPECT_EQ(static_cast<uint32_t>(words[n / 32]) >> (n % 32), 0u);
        }
        Tensor dy = random_tensor(d, {n}, 5);
        Tensor redrawn = runtime::eager_call("dropout", {dy, offset(4)}, attrs, o)[0];
        Tensor applied = runtime::eager_call1("dropout_apply", {dy, out[1]}, {{"rate", 0.3}}, o);
        EXPECT_TRUE(bitwise_equal(applied, redrawn));
      }
    }
  }
}

TEST(Dropout, KeepsOneMinusRateAndScales) {
  const double rate = 0.3;
  Tensor x = Tensor::full(DType::kF64, {200000}, 2.0);
  Tensor y = drop(x, 11, rate, 3)[0];
  int64_t kept = 0;
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    double v = y.get(i);
    if (v != 0.0) {
      ++kept;
      EXPECT_DOUBLE_EQ(v, 2.0 / (1.0 - rate));
    }
  }
  double frac = static_cast<double>(kept) / static_cast<double>(y.num_elements());
  EXPECT_NEAR(frac, 1.0 - rate, 0.005);  // ~5 standard deviations
}

TEST(Dropout, RateZeroIsIdentityAndBadRatesAreRejected) {
  Tensor x = random_tensor(DType::kF32, {3, 7}, 9);
  EXPECT_TRUE(bitwise_equal(drop(x, 1, 0.0, 1)[0], x));
  EXPECT_TERN_ERROR(drop(x, 1, 1.0, 1), ErrorCode::kInvalidArgument, "rate must be in [0, 1)");
  EXPECT_TERN_ERROR(drop(x, 1, -0.1, 1), ErrorCode::kInvalidArgument, "op 'dropout'");
  Tensor bad_offset = Tensor::scalar(DType::kI32, 1);
  EXPECT_TERN_ERROR(runtime::eager_call("dropout", {x, bad_offset}, {{"rate", 0.5}}),
                    ErrorCode::kInvalidArgument, "offset must be an i64 scalar");
  // A mask for another size, or of another dtype.
  Tensor mask = Tensor::zeros(DType::kI32, {2});
  EXPECT_TERN_ERROR(runtime::eager_call("dropout_apply", {x, mask}, {{"rate", 0.5}}),
                    ErrorCode::kInvalidArgument,
                    "mask must be i32[1] (dropout's mask for [3, 7]), got i32[2]");
  EXPECT_TERN_ERROR(
      runtime::eager_call("dropout_apply", {x, Tensor::zeros(DType::kI64, {1})}, {{"rate", 0.5}}),
      ErrorCode::kInvalidArgument, "mask must be i32[1]");
}

TEST(Dropout, FastKernelMatchesRefBitwiseOnBigTensors) {
  // Many tiles (threads), a ragged tail, and seed/offset using their high 32 bits.
  const ops::Attrs attrs = {{"rate", 0.37}, {"seed", int64_t{(1LL << 40) + 5}}};
  const Tensor off = offset((1LL << 33) + 17);
  runtime::EagerOptions ref, fast;
  ref.kernel = "ref";
  fast.kernel = "cpu_vec";
  for (DType d : {DType::kF32, DType::kF64, DType::kBF16}) {
    Tensor x = random_tensor(d, {1000, 131}, 4);
    std::vector<Tensor> want = runtime::eager_call("dropout", {x, off}, attrs, ref);
    std::vector<Tensor> got = runtime::eager_call("dropout", {x, off}, attrs, fast);
    for (size_t k = 0; k < 2; ++k)
      EXPECT_TRUE(bitwise_equal(got[k], want[k])) << "output " << k << " " << dtype_name(d);
  }
}

// With a residual: the fast kernel is ref bit for bit, and both are dropout then add (the
// dropped value rounded to the dtype first), NaN and infinities in the residual included.
TEST(Dropout, BadResidualNamesIt) {
  const ops::Attrs attrs = {{"rate", 0.5}, {"seed", int64_t{1}}};
  Tensor x = random_tensor(DType::kF32, {4, 8}, 1);
  EXPECT_TERN_ERROR(
      runtime::eager_call("dropout", {x, offset(1), random_tensor(DType::kF32, {8}, 2)}, attrs),
      ErrorCode::kInvalidArgument, "residual must be f32[4, 8]");
  EXPECT_TERN_ERROR(
      runtime::eager_call("dropout", {x, offset(1), random_tensor(DType::kBF16, {4, 8}, 2)}, attrs),
      ErrorCode::kInvalidArgument, "residual must be f32[4, 8]");
  EXPECT_TERN_ERROR(runtime::eager_call("dropout", {x, offset(1), x, x}, attrs),
                    ErrorCode::kInvalidArgument, "at most 3 inputs");
}

TEST(Dropout, ResidualIsTheAddAfterTheDropoutBitForBit) {
  const ops::Attrs attrs = {{"rate", 0.37}, {"seed", int64_t{11}}};
  const Tensor off = offset(23);
  runtime::EagerOptions ref, fast;
  ref.kernel = "ref";
  fast.kernel = "cpu_vec";
  for (DType d : {DType::kF32, DType::kF64, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(d));
    Tensor x = random_tensor(d, {1000, 131}, 4);
    Tensor r = random_tensor(d, {1000, 131}, 5);
    const double specials[] = {std::nan(""), INFINITY, -INFINITY, -0.0};
    for (int64_t i = 0; i < 4; ++i) r.set(i * 977 + 3, specials[i]);
    for (const runtime::EagerOptions& o : {ref, fast}) {
      std::vector<Tensor> fused = runtime::eager_call("dropout", {x, off, r}, attrs, o);
      std::vector<Tensor> apart = runtime::eager_call("dropout", {x, off}, attrs, o);
      Tensor sum = runtime::eager_call1("add", {apart[0], r}, {}, ref);
      EXPECT_TRUE(bitwise_equal(fused[0], sum)) << o.kernel;
      EXPECT_TRUE(bitwise_equal(fused[1], apart[1])) << o.kernel;
    }
    std::vector<Tensor> want = runtime::eager_call("dropout", {x, off, r}, attrs, ref);
    std::vector<Tensor> got = runtime::eager_call("dropout", {x, off, r}, attrs, fast);
    for (size_t k = 0; k < 2; ++k) EXPECT_TRUE(bitwise_equal(got[k], want[k])) << "output " << k;
  }
}

TEST(Dropout, ApplyFastKernelMatchesRefBitwiseOnBigTensors) {
  // Threads, a ragged last word, and NaN, infinities and subnormals among the values.
  runtime::EagerOptions ref, fast;
  ref.kernel = "ref";
  fast.kernel = "cpu_vec";
  const ops::Attrs attrs = {{"rate", 0.37}};
  for (DType d : {DType::kF32, DType::kF64, DType::kBF16}) {
    Tensor x = random_tensor(d, {1000, 131}, 4);
    const double specials[] = {std::nan(""), INFINITY, -INFINITY, 1e-40, -1e-39, 3.4e38};
    for (int64_t i = 0; i < 6; ++i) x.set(i * 977 + 3, specials[i]);
    Tensor mask =
        random_tensor(DType::kI32, {(1000 * 131 + 31) / 32}, 9, -2147483648.0, 2147483647.0);
    Tensor want = runtime::eager_call1("dropout_apply", {x, mask}, attrs, ref);
    Tensor got = runtime::eager_call1("dropout_apply", {x, mask}, attrs, fast);
    EXPECT_TRUE(bitwise_equal(got, want)) << dtype_name(d);
  }
}

TEST(Embedding, GathersRowsAndRejectsOutOfRangeIds) {
  Tensor params = Tensor::from_values(DType::kF32, {3, 2}, {0, 1, 10, 11, 20, 21});
  Tensor ids = Tensor::from_vector<int32_t>({2, 2}, {2, 0, 1, 2});
  Tensor y = runtime::eager_call1("embedding", {params, ids});
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{20, 21, 0, 1, 10, 11, 20, 21}));
  Tensor bad = Tensor::from_vector<int64_t>({3}, {0, 3, 1});
  EXPECT_TERN_ERROR(runtime::eager_call("embedding", {params, bad}), ErrorCode::kInvalidArgument,
                    "embedding: id 3 at position 1 (row 1 of ids [3]) is out of range [0, 3)");
  // The row, for a caller that knows where the batch's rows came from (bad-input F18).
  Tensor bad_rows = Tensor::from_vector<int64_t>({2, 3}, {0, 1, 2, 1, 7, 0});
  try {
    runtime::eager_call("embedding", {params, bad_rows});
    ADD_FAILURE() << "no error";
  } catch (const RowError& e) {
    EXPECT_EQ(e.row(), 1);
    EXPECT_EQ(e.rows(), 2);
    EXPECT_NE(std::string(e.what()).find("id 7 at position 4 (row 1 of ids [2, 3])"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace tern::testing
