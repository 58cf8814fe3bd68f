// Tests for the oneDNN matmul kernels (native, and bf16 widened to f32): agreement with ref over
// transposes, batch broadcasting and dtypes, selection, and the reasons they decline.
#include <gtest/gtest.h>

#include "tern/backends/cpu/cpu_backend.h"
#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

struct MatmulShape {
  Shape a, b;
  bool ta = false, tb = false;
};

class OneDnnMatmul : public OneDnnDTypeTest {
 protected:
  // The candidates to check for this dtype: bf16 also runs widened to f32.
  std::vector<std::string> kernels() const {
    if (GetParam() == DType::kBF16) return {"onednn", "onednn_f32"};
    return {"onednn"};
  }
};

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
  };
  uint64_t seed = 1;
  for (const auto& s : shapes) {
    SCOPED_TRACE(str_cat("a ", s.a, " b ", s.b, " ta ", s.ta, " tb ", s.tb));
    Tensor a = random_tensor(d, s.a, seed++);
    Tensor b = random_tensor(d, s.b, seed++);
    for (const std::string& k : kernels()) {
      SCOPED_TRACE(k);
      expect_onednn_matches_ref("matmul", {a, b}, {{"transpose_a", s.ta}, {"transpose_b", s.tb}},
                                tol, k);
    }
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
      for (const std::string& k : kernels()) {
        SCOPED_TRACE(k);
        expect_onednn_matches_ref("fused_matmul", in,
                                  {{"transpose_b", true},
                                   {"activation", std::string(act)},
                                   {"has_bias", has_bias},
                                   {"has_residual", has_residual}},
                                  tol, k);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, OneDnnMatmul, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// The widened kernel is the f32 product of the bf16 operands, rounded once: within one bf16 ulp
// of that, and (with an f32 result) equal to it up to f32 summation order. The native kernel's
// products are exact in f32 too, so the two forms agree as closely.
TEST(OneDnnMatmulWidened, IsTheF32ProductOfTheBf16Operands) {
  if (!cpu_supports_bf16()) GTEST_SKIP() << "this CPU has no AVX-512: oneDNN declines bf16";
  runtime::EagerOptions widened, f32;
  widened.kernel = "onednn_f32";
  f32.kernel = "onednn";
  for (bool ta : {false, true}) {
    SCOPED_TRACE(str_cat("transpose_a ", ta));
    Tensor a = random_tensor(DType::kBF16, ta ? Shape{300, 67} : Shape{67, 300}, 1);
    Tensor b = random_tensor(DType::kBF16, {300, 129}, 2);
    ops::Attrs attrs = {{"transpose_a", ta}};
    Tensor exact =
        runtime::eager_call1("matmul",
                             {runtime::eager_call1("cast", {a}, {{"dtype", DType::kF32}}),
                              runtime::eager_call1("cast", {b}, {{"dtype", DType::kF32}})},
                             attrs, f32);
    Tensor rounded = runtime::eager_call1("cast", {exact}, {{"dtype", DType::kBF16}});
    Tensor got = runtime::eager_call1("matmul", {a, b}, attrs, widened);
    ASSERT_EQ(got.dtype(), DType::kBF16);
    EXPECT_LE(max_rel_error(got, rounded), 1.0 / 128);  // one bf16 ulp, relative to 1 + |x|
    ops::Attrs f32_out = attrs;
    f32_out.set("out_dtype", std::string("f32"));
    Tensor got_f32 = runtime::eager_call1("matmul", {a, b}, f32_out, widened);
    ASSERT_EQ(got_f32.dtype(), DType::kF32);
    EXPECT_LE(max_rel_error(got_f32, exact), 1e-5);
    Tensor native = runtime::eager_call1("matmul", {a, b}, f32_out, f32);
    EXPECT_LE(max_rel_error(native, exact), 1e-5);
  }
}

TEST(OneDnnMatmulSelect, PickedForF32AndBF16) {
  EXPECT_EQ(selected_kernel("matmul", {{DType::kF32, {8, 16}}, {DType::kF32, {16, 4}}}), "onednn");
  std::vector<TensorType> bf16 = {{DType::kBF16, {2, 8, 16}}, {DType::kBF16, {16, 4}}};
  if (!cpu_supports_bf16()) {
    expect_onednn_picked_for_bf16("matmul", bf16);
    return;
  }
  // bf16 widened to f32 where oneDNN has no AMX (or TERN_BF16_MATMUL=f32), natively elsewhere.
  const std::string mode = cpu::bf16_matmul_mode();
  const bool widened = mode.rfind("widened to f32", 0) == 0;
  EXPECT_TRUE(widened || mode.rfind("bf16", 0) == 0) << mode;
  EXPECT_EQ(selected_kernel("matmul", bf16), widened ? "onednn_f32" : "onednn") << mode;
  EXPECT_EQ(selected_kernel("fused_matmul", bf16, {{"activation", std::string("relu")}}),
            widened ? "onednn_f32" : "onednn")
      << mode;
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
