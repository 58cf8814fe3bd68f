// Consistency cases: attention and attention_grad (the harness compares the fast kernel with ref
// and the gradient rule with finite differences), plus what the table cannot say: the fused op
// equals the graph it replaces (transposes, scaled matmul, where, softmax, dropout, matmul) with
// the same dropout mask, forward and backward, and bad inputs are refused by name.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>  // before random_tensor.h, which uses std::floor

#include "tern/autodiff/autodiff.h"
#include "tern/runtime/eager.h"
#include "tern/runtime/executable.h"
#include "tern/runtime/runtime.h"
#include "tests/consistency/op_case.h"
#include "tests/support/random_tensor.h"

namespace tern::testing {
namespace {

// Inputs of the forward op: q [B, T, H, D], k and v [B, S, H, D / Dv], offset[, mask].
std::vector<InputSpec> heads(int64_t b, int64_t t, int64_t s, int64_t h, int64_t d, int64_t dv,
                             bool mask) {
  std::vector<InputSpec> in = {In({b, t, h, d}, -2, 2), In({b, s, h, d}, -2, 2), In({b, s, h, dv}),
                               Idx({}, 0, 100)};
  if (mask) in.push_back(Idx({b, t, s}, 0, 2, DType::kBool));
  return in;
}

// Inputs of attention_grad: dout, q, k, v, probs (f32, any values in [0, 1)), dropout's packed
// mask (random words; empty without dropout)[, mask].
std::vector<InputSpec> grad_inputs(int64_t b, int64_t t, int64_t s, int64_t h, int64_t d,
                                   int64_t dv, bool dropout, bool mask) {
  InputSpec probs = In({b, h, t, s}, 0, 1);
  probs.dtype = DType::kF32;
  std::vector<InputSpec> in = {
      In({b, t, h, dv}),
      In({b, t, h, d}),
      In({b, s, h, d}),
      In({b, s, h, dv}),
      probs,
      Idx({dropout ? (b * h * t * s + 31) / 32 : 0}, INT32_MIN, INT32_MAX, DType::kI32)};
  if (mask) in.push_back(Idx({b, t, s}, 0, 2, DType::kBool));
  return in;
}

ops::Attrs attrs(double scale, double rate, bool causal, bool save = true) {
  return {{"scale", scale},
          {"rate", rate},
          {"seed", int64_t{7}},
          {"causal", causal},
          {"save_probs", save}};
}

ops::Attrs grad_attrs(double scale, double rate, bool causal) {
  return {{"scale", scale}, {"rate", rate}, {"causal", causal}};
}

ops::Attrs with_bias_sums(ops::Attrs a) {
  a.set("bias_sums", true);
  return a;
}

}  // namespace

TERN_OP_CASES(attention) {
  return {
      {"attention", heads(2, 3, 4, 2, 3, 5, false), attrs(0.5, 0, false)},
      {"attention", heads(2, 4, 4, 2, 3, 2, true), attrs(0.6, 0, true), true, {}, 1e-5, "masks"},
      // Dropout: T * S = 32 (ref only: the fast kernel wants blocks of 64) and 64 (both).
      {"attention",
       heads(2, 4, 8, 2, 3, 2, false),
       attrs(0.4, 0.3, false),
       true,
       {},
       1e-5,
       "dropout-ref"},
      {"attention",
       heads(1, 8, 8, 3, 4, 4, true),
       attrs(0.4, 0.25, true),
       true,
       {},
       1e-5,
       "dropout"},
      {"attention",
       heads(2, 5, 3, 2, 4, 3, false),
       attrs(0.3, 0, false, false),
       false,
       {},
       1e-5,
       "no-saves"},
      // W6's head shape with tails for the tiles (T = 24, S = 40, D = 20, Dv = 36).
      {"attention",
       heads(2, 24, 40, 2, 20, 36, true),
       attrs(0.2, 0.1, false),
       false,
       {},
       1e-5,
       "tails"},
      {"attention",
       heads(1, 128, 128, 2, 64, 64, false),
       attrs(0.125, 0.1, false),
       false,
       {},
       1e-5,
       "w6-head"},
      // Rows of a multiple of 16 scores (the AVX-512 softmax rows) with a mask and causality.
      {"attention",
       heads(2, 16, 32, 2, 8, 8, true),
       attrs(0.5, 0, true),
       true,
       {},
       1e-5,
       "rows16-masks"},
      {"attention_grad", grad_inputs(2, 3, 4, 2, 3, 5, false, false), grad_attrs(0.5, 0, false)},
      {"attention_grad",
       grad_inputs(2, 16, 32, 2, 8, 8, false, true),
       grad_attrs(0.5, 0, true),
       true,
       {},
       1e-5,
       "rows16-masks"},
      {"attention_grad",
       grad_inputs(1, 8, 8, 3, 4, 4, true, true),
       grad_attrs(0.4, 0.25, true),
       true,
       {},
       1e-5,
       "dropout-masks"},
      {"attention_grad",
       grad_inputs(2, 24, 40, 2, 20, 36, true, true),
       grad_attrs(0.2, 0.1, false),
       true,
       {},
       1e-5,
       "tails"},
      // bias_sums (fuse_column_sum): the gradients summed over batch and time as well; 64-wide
      // heads (the AVX-512 row sums), then widths of no multiple of 16. f32 heads here: the sums
      // are f32 at any dtype, and bf16 heads' gradients (bf16 products) differ from ref's at bf16
      // precision (Bf16HeadsMatchTheSameValuesInF32 checks those sums).
      {"attention_grad",
       grad_inputs(3, 16, 16, 2, 64, 64, true, false),
       with_bias_sums(grad_attrs(0.125, 0.1, false)),
       true,
       {DType::kF32, DType::kF64},
       1e-5,
       "bias-sums-64"},
      {"attention_grad",
       grad_inputs(2, 5, 7, 3, 20, 36, false, true),
       with_bias_sums(grad_attrs(0.3, 0, true)),
       true,
       {DType::kF32, DType::kF64},
       1e-5,
       "bias-sums-tails"},
  };
}

namespace {

Tensor rand(Shape s, uint64_t seed, double lo = -1, double hi = 1) {
  return random_tensor(DType::kF32, std::move(s), seed, lo, hi);
}

// q, k, v -> (out [B, T, H, Dv], dq, dk, dv for the loss sum(out * r)) through the fused op, or
// through the graph the unfused MultiHeadAttention builds.
std::vector<Tensor> run_both_ways(bool fused, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& mask, bool causal, double rate) {
  ir::Graph g("attention");
  ir::Value* qi = g.input("q", q.type());
  ir::Value* ki = g.input("k", k.type());
  ir::Value* vi = g.input("v", v.type());
  ir::Value* mi = g.input("mask", mask.type());
  ir::Value* off = g.input("offset", {DType::kI64, Shape{}});
  const double scale = 0.35;
  const int64_t b = q.shape()[0], t = q.shape()[1], s = k.shape()[1];
  ir::Value* out;
  if (fused) {
    out = g.add("attention", {qi, ki, vi, off, mi},
                {{"scale", scale}, {"rate", rate}, {"seed", int64_t{11}}, {"causal", causal}});
  } else {
    const std::vector<int64_t> perm = {0, 2, 1, 3};
    auto tr = [&](ir::Value* x) { return g.add("transpose", {x}, {{"perm", perm}}); };
    ir::Value* scores =
        g.add("matmul", {g.add("mul", {tr(qi), g.scalar(DType::kF32, scale)}), tr(ki)},
              {{"transpose_b", true}});
    ir::Value* m = mi;
    if (causal) {
      Tensor tri(DType::kBool, {t, s});
      for (int64_t i = 0; i < t; ++i) {
        for (int64_t j = 0; j < s; ++j) tri.set(i * s + j, i >= j);
      }
      m = g.add("logical_and", {m, g.constant(tri)});
    }
    m = g.add("reshape", {m}, {{"shape", std::vector<int64_t>{b, 1, t, s}}});
    scores = g.add("where", {m, scores, g.scalar(DType::kF32, -1e9)});
    ir::Value* p = g.add("softmax", {scores}, {{"axis", int64_t{-1}}});
    if (rate > 0) p = g.add("dropout", {p, off}, {{"rate", rate}, {"seed", int64_t{11}}});
    out = tr(g.add("matmul", {p, tr(vi)}));
  }
  ir::Value* r = g.constant(rand(out->shape(), 5));
  ir::Value* loss = g.add("sum", {g.add("mul", {out, r})},
                          {{"axes", std::vector<int64_t>{}}, {"keepdims", false}});
  std::vector<ir::Value*> wrt = {qi, ki, vi};
  std::vector<ir::Value*> grads = autodiff::gradients(g, loss, wrt);
  g.add_output("out", out);
  for (size_t i = 0; i < grads.size(); ++i) g.add_output(str_cat("d", i), grads[i]);
  runtime::VariableStore vars;
  auto exe = runtime::Executable::compile(g, vars);
  return exe->run(
      {{"q", q}, {"k", k}, {"v", v}, {"mask", mask}, {"offset", Tensor::scalar(DType::kI64, 3)}});
}

}  // namespace

// The fused op against the graph MultiHeadAttention built before it (and still builds with
// fused = false): same outputs and gradients, and, with dropout, the same mask (a different mask
// would move the outputs by far more than the tolerance). Shapes whose blocks the fast kernel
// takes (T * S a multiple of 64) and with tails in every tile.
TEST(Attention, FusedEqualsTheUnfusedGraph) {
  runtime::initialize();
  for (auto [t, s, causal] : {std::tuple{16, 32, false}, {24, 40, true}, {128, 128, false}}) {
    for (double rate : {0.0, 0.2}) {
      SCOPED_TRACE(str_cat("T ", t, " S ", s, " causal ", causal, " rate ", rate));
      const int64_t b = 2, h = 3, d = 20, dv = 12;
      Tensor q = rand({b, t, h, d}, 1), k = rand({b, s, h, d}, 2), v = rand({b, s, h, dv}, 3);
      Tensor mask(DType::kBool, {b, t, s});
      for (int64_t i = 0; i < mask.num_elements(); ++i) mask.set(i, (i * 7) % 5 != 0);
      std::vector<Tensor> fused = run_both_ways(true, q, k, v, mask, causal, rate);
      std::vector<Tensor> plain = run_both_ways(false, q, k, v, mask, causal, rate);
      ASSERT_EQ(fused.size(), 4u);
      for (size_t i = 0; i < fused.size(); ++i) {
        ASSERT_EQ(fused[i].shape(), plain[i].shape()) << "output " << i;
        EXPECT_LT(max_abs_diff(fused[i], plain[i]), 2e-5) << "output " << i;
      }
    }
  }
}

// bf16 heads against the same values in f32, through the fast kernels, forward and backward: the
// probabilities (from exact bf16 products accumulated in f32) agree to f32 rounding, and the
// outputs and gradients (from products of probabilities or score gradients rounded to bf16, where
// the CPU multiplies bf16 in bf16, then rounded to bf16 themselves) within 1% of the largest
// value. The consistency harness's bf16 tolerance (3e-2 absolute for small values) would let a
// 5% error through.
TEST(Attention, Bf16HeadsMatchTheSameValuesInF32) {
  runtime::initialize();
  runtime::EagerOptions fast;
  fast.kernel = "cpu_vec";
  const ops::Attrs fwd = {{"scale", 0.125}, {"rate", 0.1}, {"seed", int64_t{5}}, {"causal", false}};
  const ops::Attrs bwd = {{"scale", 0.125}, {"rate", 0.1}, {"causal", false}, {"bias_sums", true}};
  auto max_abs = [](const Tensor& t) {
    double m = 0;
    for (int64_t i = 0; i < t.num_elements(); ++i) m = std::max(m, std::fabs(t.get(i)));
    return m;
  };
  for (auto [t, s, d] : {std::tuple{128, 128, 64}, {24, 40, 20}}) {
    SCOPED_TRACE(str_cat("T ", t, " S ", s, " D ", d));
    const int64_t b = 2, h = 2;
    std::vector<Tensor> bf16, f32;
    for (auto [shape, seed] : {std::pair{Shape{b, t, h, d}, 1},
                               {Shape{b, s, h, d}, 2},
                               {Shape{b, s, h, d}, 3},
                               {Shape{b, t, h, d}, 4}}) {
      bf16.push_back(random_tensor(DType::kBF16, shape, seed));
      f32.push_back(bf16.back().cast(DType::kF32));  // the same values
    }
    const Tensor off = Tensor::scalar(DType::kI64, 3);
    auto run = [&](const std::vector<Tensor>& x) {
      std::vector<Tensor> o = runtime::eager_call("attention", {x[0], x[1], x[2], off}, fwd, fast);
      std::vector<Tensor> g =
          runtime::eager_call("attention_grad", {x[3], x[0], x[1], x[2], o[1], o[2]}, bwd, fast);
      return std::vector<Tensor>{o[0], o[1], g[0], g[1], g[2], g[3], g[4], g[5]};
    };
    const std::vector<Tensor> got = run(bf16), want = run(f32);
    EXPECT_LT(max_abs_diff(got[1], want[1]), 1e-6) << "probabilities";
    const char* names[] = {"out", "probs", "dq", "dk", "dv", "dq sums", "dk sums", "dv sums"};
    for (size_t i : {0, 2, 3, 4}) {
      EXPECT_LT(max_abs_diff(got[i].cast(DType::kF32), want[i]), 1e-2 * max_abs(want[i]))
          << names[i];
    }
    // A sum over b t rows, against the scale of its gradient (dk's sums are 0 in exact
    // arithmetic: each softmax row's gradient adds up to 0).
    for (size_t i : {5, 6, 7}) {
      EXPECT_LT(max_abs_diff(got[i], want[i]),
                1e-2 * max_abs(want[i - 3]) * std::sqrt(static_cast<double>(b * t)))
          << names[i];
    }
    // The bf16 kernel's sums are of its gradients before their rounding: within bf16's rounding
    // of the gradients it returns, summed (B T = 2 t rows).
    for (int k = 0; k < 3; ++k) {
      const Tensor& grad = got[static_cast<size_t>(2 + k)];
      const int64_t columns = grad.shape()[2] * grad.shape()[3];
      std::vector<double> of_rounded(static_cast<size_t>(columns), 0.0);
      for (int64_t e = 0; e < grad.num_elements(); ++e)
        of_rounded[static_cast<size_t>(e % columns)] += grad.get(e);
      const Tensor& sums = got[static_cast<size_t>(5 + k)];
      ASSERT_EQ(sums.dtype(), DType::kF32);
      ASSERT_EQ(sums.num_elements(), columns);
      for (int64_t c = 0; c < columns; ++c) {
        EXPECT_NEAR(sums.get(c), of_rounded[static_cast<size_t>(c)],
                    std::ldexp(max_abs(grad), -8) * std::sqrt(2.0 * t))
            << names[5 + k] << " column " << c;
      }
    }
  }
}

TEST(Attention, BadInputsNameTheirCulprit) {
  runtime::initialize();
  const ops::Attrs a = {{"scale", 1.0}};
  Tensor q = rand({1, 2, 2, 3}, 1), k = rand({1, 4, 2, 3}, 2), v = rand({1, 4, 2, 5}, 3);
  Tensor off = Tensor::scalar(DType::kI64, 0);
  EXPECT_TERN_ERROR(runtime::eager_call("attention", {q, rand({1, 4, 2, 4}, 4), v, off}, a),
                    ErrorCode::kInvalidArgument, "must agree on B, H, D and S");
  EXPECT_TERN_ERROR(runtime::eager_call("attention", {q, k, rand({1, 3, 2, 5}, 5), off}, a),
                    ErrorCode::kInvalidArgument, "must agree on B, H, D and S");
  EXPECT_TERN_ERROR(runtime::eager_call("attention", {q, k, v, Tensor::scalar(DType::kI32, 0)}, a),
                    ErrorCode::kInvalidArgument, "offset must be an i64 scalar");
  EXPECT_TERN_ERROR(
      runtime::eager_call("attention", {q, k, v, off, Tensor(DType::kBool, {1, 2, 3})}, a),
      ErrorCode::kInvalidArgument, "mask must be bool[1, 2, 4]");
  EXPECT_TERN_ERROR(
      runtime::eager_call("attention", {q, k, v, off}, {{"scale", 1.0}, {"rate", 1.0}}),
      ErrorCode::kInvalidArgument, "rate must be in [0, 1)");
  Tensor mask(DType::kBool, {1, 2, 4});
  EXPECT_TERN_ERROR(runtime::eager_call("attention", {q, k, v, off, mask, mask}, a),
                    ErrorCode::kInvalidArgument, "takes at most 5 inputs");
  Tensor probs = random_tensor(DType::kF32, {1, 2, 2, 4}, 6, 0, 1);
  Tensor dout = rand({1, 2, 2, 5}, 7);
  EXPECT_TERN_ERROR(
      runtime::eager_call("attention_grad",
                          {rand({1, 2, 2, 3}, 9), q, k, v, probs, Tensor(DType::kI32, {0})},
                          {{"scale", 1.0}}),
      ErrorCode::kInvalidArgument, "dout must be f32[1, 2, 2, 5]");
  EXPECT_TERN_ERROR(
      runtime::eager_call("attention_grad", {dout, q, k, v, probs, Tensor(DType::kI32, {2})},
                          {{"scale", 1.0}, {"rate", 0.5}}),
      ErrorCode::kInvalidArgument, "dropout_mask must be i32[1]");
  EXPECT_TERN_ERROR(
      runtime::eager_call("attention_grad",
                          {dout, q, k, v, rand({1, 2, 4, 2}, 8), Tensor(DType::kI32, {0})},
                          {{"scale", 1.0}}),
      ErrorCode::kInvalidArgument, "probs must be f32[1, 2, 2, 4]");
}

}  // namespace tern::testing
