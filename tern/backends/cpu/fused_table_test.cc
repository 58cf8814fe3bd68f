// The one table per fusable op: every opcode row has a scalar formula and a vector loop that
// agree (f32, and through bf16 rounding), every epilogue activation round-trips name <-> enum,
// maps to its opcode and to a oneDNN post-op, and amp's follow list comes from the rows.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/onednn_common.h"
#include "tern/ops/fused_scalar.h"
#include "tern/tensor/dtype.h"

namespace tern::cpu {
namespace {

// Inputs in the domain of every opcode (log, sqrt and pow need a > 0).
std::vector<float> inputs(bool positive) {
  std::vector<float> v;
  for (int i = 0; i < 64; ++i) {
    float x = -4.f + 8.f * static_cast<float>(i) / 63.f;
    v.push_back(positive ? std::fabs(x) + 0.125f : x);
  }
  return v;
}

bool needs_positive(ops::FusedOpcode op) {
  using F = ops::FusedOpcode;
  return op == F::kLog || op == F::kSqrt || op == F::kRsqrt || op == F::kPow;
}

TEST(FusedTable, EveryOpcodeHasAScalarAndAVectorFormulaThatAgree) {
  int checked = 0;
  for (const ops::FusedOpcodeInfo& row : ops::fused_opcodes()) {
    SCOPED_TRACE(std::string(row.name));
    ASSERT_NE(row.scalar.f32, nullptr);
    ASSERT_NE(row.scalar.f64, nullptr);
    FusedVectorFn vec = fused_vector_fn(row.code);
    ASSERT_NE(vec, nullptr) << "opcode " << row.name << " has no vector loop";
    if (row.arity == 0) continue;
    std::vector<float> a = inputs(needs_positive(row.code)), b = inputs(true);
    std::vector<float> y(a.size());
    vec(a.data(), b.data(), y.data(), static_cast<int64_t>(a.size()));
    for (size_t i = 0; i < a.size(); ++i) {
      double want = row.scalar.f64(a[i], b[i]);
      if (std::isnan(want)) {  // outside the domain (log1p(-4)): both say NaN
        EXPECT_TRUE(std::isnan(y[i])) << "at a=" << a[i];
        continue;
      }
      EXPECT_NEAR(y[i], want, 2e-5 * (1 + std::fabs(want))) << "at a=" << a[i] << " b=" << b[i];
      // bf16 programs compute in float and round once: the rounded results agree to bf16.
      double got16 = static_cast<float>(bfloat16(y[i]));
      double want16 = static_cast<float>(bfloat16(static_cast<float>(want)));
      EXPECT_NEAR(got16, want16, 1e-2 * (1 + std::fabs(want16)));
    }
    ++checked;
  }
  EXPECT_GE(checked, 29);
}

TEST(FusedTable, ActivationsRoundTripAndMapToOneDnn) {
  ASSERT_EQ(ops::activations().size(), static_cast<size_t>(ops::kNumActivations));
  for (int i = 0; i < ops::kNumActivations; ++i) {
    auto act = static_cast<ops::Activation>(i);
    const ops::ActivationInfo& info = ops::activation_info(act);
    EXPECT_EQ(info.activation, act);
    EXPECT_EQ(ops::parse_activation(info.name), act) << info.name;
    if (act == ops::Activation::kNone) {
      EXPECT_EQ(info.opcode, nullptr);
      EXPECT_FALSE(onednn::activation_algorithm(act));
      continue;
    }
    ASSERT_NE(info.opcode, nullptr) << info.name;
    EXPECT_EQ(info.opcode->epilogue, act);
    EXPECT_TRUE(onednn::activation_algorithm(act)) << info.name << " has no oneDNN post-op";
    EXPECT_EQ(onednn::activation_support(act), "");
    EXPECT_EQ(ops::activation_scalar(act, 0.75), info.opcode->scalar.f64(0.75, 0));
  }
  EXPECT_FALSE(ops::parse_activation("swish"));
  EXPECT_EQ(ops::activation_names(), "none, relu, gelu_tanh, gelu_erf, sigmoid, tanh");
  EXPECT_EQ(ops::epilogue_activation_for("gelu", {{"approximate", true}}),
            ops::Activation::kGeluTanh);
  EXPECT_EQ(ops::epilogue_activation_for("gelu", {}), ops::Activation::kGeluErf);
  EXPECT_FALSE(ops::epilogue_activation_for("exp", {}));  // fusable, not an epilogue
}

}  // namespace
}  // namespace tern::cpu
