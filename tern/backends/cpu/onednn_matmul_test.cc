// Tests for the oneDNN matmul kernels (native, and bf16 widened to f32): agreement with ref over
// transposes, batch broadcasting and dtypes, selection, and the reasons they decline.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tern/backends/cpu/cpu_backend.h"
#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

struct MatmulShape {
  Shape a, b;
  bool ta = false, tb = false;
};

class OneDnnMatmul : public OneDnnDTypeTest {};

TEST_P(OneDnnMatmul, MatchesRef) {
  DType d = GetParam();
  double tol = d == DType::kF32 ? 1e-5 : 2e-2;
  std::vector<MatmulShape> shapes = {
      {{3, 4}, {4, 5}},
      {{4, 3}, {4, 5}, true, false},
      {{3, 4}, {5, 4}, false, true},
      {{4, 3}, {5, 4}, true, true},
      {{2, 4, 3}, {5, 4}, true, true},
      {{2, 1, 3, 4}, {3, 4, 2}},
      {{5, 7}, {2, 3, 7, 6}},
      {{2, 3, 7, 5}, {2, 3, 6, 7}, true, true},
      {{64, 300}, {300, 129}},
      {{1, 1}, {1, 1}},
      // a^T b with a deep, narrow a: run as b^T a and a transposing reorder (swaps_transposed_a).
      {{256, 16}, {256, 48}, true, false},
      {{300, 70}, {300, 129}, true, false},
  };
  uint64_t seed = 1;
  for (const auto& s : shapes) {
    SCOPED_TRACE(str_cat("a ", s.a, " b ", s.b, " ta ", s.ta, " tb ", s.tb));
    Tensor a = random_tensor(d, s.a, seed++);
    Tensor b = random_tensor(d, s.b, seed++);
    expect_onednn_matches_ref("matmul", {a, b}, {{"transpose_a", s.ta}, {"transpose_b", s.tb}},
                              tol);
  }
}

TEST_P(OneDnnMatmul, FusedEpiloguesMatchRef) {
  DType d = GetParam();
  double tol = d == DType::kF32 ? 1e-5 : 2e-2;
  uint64_t seed = 100;
  for (const char* act : {"none", "relu", "gelu_tanh", "gelu_erf", "sigmoid", "tanh"}) {
    for (int mask = 0; mask < 4; ++mask) {
      bool has_bias = mask & 1, has_residual = mask & 2;
      SCOPED_TRACE(str_cat(act, " bias ", has_bias, " residual ", has_residual));
      std::vector<Tensor> in = {random_tensor(d, {2, 6, 33}, seed++),
                                random_tensor(d, {17, 33}, seed++)};
      if (has_bias) in.push_back(random_tensor(d, {17}, seed++));
      if (has_residual) in.push_back(random_tensor(d, {2, 6, 17}, seed++));
      expect_onednn_matches_ref("fused_matmul", in,
                                {{"transpose_b", true},
                                 {"activation", std::string(act)},
                                 {"has_bias", has_bias},
                                 {"has_residual", has_residual}},
                                tol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, OneDnnMatmul, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// The widened kernel is the f32 kernel run on the bf16 values: bit for bit that result, rounded
// once to bf16 (or kept, with out_dtype = "f32").
TEST(OneDnnMatmulWidened, IsTheF32KernelOnTheBf16Values) {
  for (bool ta : {false, true}) {
    SCOPED_TRACE(str_cat("transpose_a ", ta));
    Tensor a = random_tensor(DType::kBF16, ta ? Shape{300, 67} : Shape{67, 300}, 1);
    Tensor b = random_tensor(DType::kBF16, {300, 129}, 2);
    expect_widened_is_f32_kernel("matmul", {a, b}, {{"transpose_a", ta}});
    expect_widened_is_f32_kernel("matmul", {a, b},
                                 {{"transpose_a", ta}, {"out_dtype", std::string("f32")}});
  }
  Tensor x = random_tensor(DType::kBF16, {2, 5, 33}, 3),
         w = random_tensor(DType::kBF16, {17, 33}, 4);
  Tensor bias = random_tensor(DType::kBF16, {17}, 5),
         res = random_tensor(DType::kBF16, {2, 5, 17}, 6);
  expect_widened_is_f32_kernel("fused_matmul", {x, w, bias, res},
                               {{"transpose_b", true},
                                {"activation", std::string("gelu_erf")},
                                {"has_bias", true},
                                {"has_residual", true}});
}

TEST(OneDnnMatmulSelect, PickedForF32AndBF16) {
  EXPECT_EQ(selected_kernel("matmul", {{DType::kF32, {8, 16}}, {DType::kF32, {16, 4}}}), "onednn");
  std::vector<TensorType> bf16 = {{DType::kBF16, {2, 8, 16}}, {DType::kBF16, {16, 4}}};
  expect_onednn_picked_for_bf16("matmul", bf16);
  expect_onednn_picked_for_bf16("fused_matmul", bf16, {{"activation", std::string("relu")}});
}

// Where nothing in the environment chooses and the CPU has AVX512_BF16 but no AMX, the choice is
// the CPU's: native on AMD (vdpbf16ps at twice the f32 FLOP rate), widened elsewhere; never a
// timing (the two forms differ in the last bits). The mode records the measured rate.
TEST(OneDnnMatmulSelect, Bf16FormFollowsTheCpu) {
  const std::string mode = cpu::bf16_contractions_mode();
  if (std::getenv("TERN_BF16_CONTRACTIONS") != nullptr || mode.find("AMX)") != std::string::npos ||
      !cpu_supports_bf16() || !__builtin_cpu_supports("avx512bf16")) {
    GTEST_SKIP() << mode;
  }
  const bool amd = __builtin_cpu_is("amd");
  EXPECT_EQ(cpu::bf16_contractions_widened(), !amd) << mode;
  EXPECT_EQ(mode.rfind(amd ? "bf16 (AMD, no AMX; " : "widened to f32 (no AMX; ", 0), 0u) << mode;
  const double speedup = cpu::bf16_dot_speedup();
  EXPECT_GT(speedup, 0.0);
  EXPECT_NE(mode.find("AVX512_BF16 dot products at "), std::string::npos) << mode;
  // Measured once: every later call agrees.
  EXPECT_EQ(cpu::bf16_dot_speedup(), speedup);
}

TEST(OneDnnMatmulSelect, DeclinesWithReasons) {
  EXPECT_NE(
      onednn_decline_reason("matmul", {{DType::kF64, {2, 3}}, {DType::kF64, {3, 4}}}).find("f64"),
      std::string::npos);
  EXPECT_NE(
      onednn_decline_reason("matmul", {{DType::kF32, {0, 3}}, {DType::kF32, {3, 4}}}).find("empty"),
      std::string::npos);
  // The widened candidate is for bf16 operands only.
  ops::Attrs attrs;
  kernels::KernelSignature f32 =
      signature_of("matmul", {{DType::kF32, {2, 3}}, {DType::kF32, {3, 4}}}, &attrs);
  try {
    kernels::KernelRegistry::global().select(f32, "onednn_f32");
    ADD_FAILURE() << "onednn_f32 accepted f32 operands";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("onednn_f32: dtype f32 not supported"), std::string::npos)
        << e.what();
  }
  // f64 still runs, on ref.
  EXPECT_EQ(selected_kernel("matmul", {{DType::kF64, {2, 3}}, {DType::kF64, {3, 4}}}), "ref");
}

TEST(OneDnnMatmulRun, KernelReusedAcrossRuns) {
  runtime::initialize();
  ops::Attrs attrs;
  kernels::KernelSignature sig =
      signature_of("matmul", {{DType::kF32, {3, 5}}, {DType::kF32, {5, 2}}}, &attrs);
  auto sel = kernels::KernelRegistry::global().select(sig);
  ASSERT_EQ(sel.candidate->name, "onednn");
  for (uint64_t seed = 0; seed < 3; ++seed) {
    std::vector<Tensor> in = {random_tensor(DType::kF32, {3, 5}, seed),
                              random_tensor(DType::kF32, {5, 2}, seed + 10)};
    std::vector<Tensor> out = {Tensor(DType::kF32, {3, 2})};
    kernels::KernelContext ctx{in, out, attrs, host_stream()};
    sel.kernel->run(ctx);
    runtime::EagerOptions ref;
    ref.kernel = "ref";
    EXPECT_LE(max_rel_error(out[0], runtime::eager_call1("matmul", in, attrs, ref)), 1e-6);
  }
}

}  // namespace
}  // namespace tern::testing
