// MultiHeadAttention: parameter shapes and count (Keras' numbers), and the output against a
// head-by-head computation with eager ops (slice per head, matmul, softmax, sum of per-head
// output projections), with and without masks; dropout only in training.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/autodiff/autodiff.h"
#include "tern/nn/layer_test_util.h"
#include "tern/nn/multi_head_attention.h"
#include "tern/runtime/eager.h"

namespace tern::nn {
namespace {

using runtime::eager_call1;
using Dims = std::vector<int64_t>;

constexpr int64_t kB = 2, kT = 3, kS = 4, kDq = 5, kDv = 6, kH = 2, kK = 3, kV = 2, kOut = 4;

Tensor slice(const Tensor& x, Dims begin, Dims size) {
  return eager_call1("slice", {x}, {{"begin", std::move(begin)}, {"size", std::move(size)}});
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_b = false) {
  return eager_call1("matmul", {a, b}, {{"transpose_b", transpose_b}});
}

Tensor add(const Tensor& a, const Tensor& b) {
  return eager_call1("add", {a, b});
}

// query [B, T, dq] @ kernel[:, h, :] + bias[h, :] for a kernel [d, H, k].
Tensor head_projection(const Tensor& x, const Tensor& kernel, const Tensor& bias, int64_t h) {
  int64_t d = kernel.shape().dim(0), k = kernel.shape().dim(2);
  Tensor w = slice(kernel, {0, h, 0}, {d, 1, k}).reshape(Shape{d, k});
  Tensor b = slice(bias, {h, 0}, {1, k}).reshape(Shape{k});
  return add(matmul(x, w), b);
}

// The reference: sum over heads of softmax(q_h k_h^T / sqrt(K) [masked]) v_h Wo[h] + bo.
Tensor reference_attention(runtime::VariableStore& vars, const std::string& layer,
                           const Tensor& query, const Tensor& value, const Tensor* mask) {
  auto w = [&](const std::string& n) { return vars.get(layer + "/" + n); };
  Tensor out;
  for (int64_t h = 0; h < kH; ++h) {
    Tensor q = head_projection(query, w("query/kernel"), w("query/bias"), h);
    Tensor k = head_projection(value, w("key/kernel"), w("key/bias"), h);
    Tensor v = head_projection(value, w("value/kernel"), w("value/bias"), h);
    Tensor scores =
        eager_call1("mul", {matmul(q, k, true), Tensor::scalar(DType::kF32, 1 / std::sqrt(3.0))});
    if (mask) scores = eager_call1("where", {*mask, scores, Tensor::scalar(DType::kF32, -1e9)});
    Tensor p = eager_call1("softmax", {scores}, {{"axis", int64_t{-1}}});
    Tensor wo =
        slice(w("attention_output/kernel"), {h, 0, 0}, {1, kV, kOut}).reshape(Shape{kV, kOut});
    Tensor o = matmul(matmul(p, v), wo);
    out = h == 0 ? o : add(out, o);
  }
  return add(out, w("attention_output/bias"));
}

// Gives every weight (biases included) distinct random values.
void randomize(Model& m, uint64_t seed) {
  for (const auto& w : m.weights()) {
    m.variables().assign(
        w.name, ::tern::testing::random_tensor(DType::kF32, w.type.shape, seed++, -0.7, 0.7));
  }
}

TEST(MultiHeadAttentionLayer, WeightShapesAndKerasParamCount) {
  auto q = Input({kT, kDq}), v = Input({kS, kDv});
  Model m({q, v}, {MultiHeadAttention(
                      kH, kK, {.value_dim = kV, .output_dim = kOut, .name = "mha_p"})({q, v})});
  m.build();
  // Keras: query 5*2*3 + 6, key 6*2*3 + 6, value 6*2*2 + 4, output 2*2*4 + 4.
  EXPECT_EQ(m.count_params(), 36 + 42 + 28 + 20);
  EXPECT_EQ(m.variables().get("mha_p/query/kernel").shape(), (Shape{kDq, kH, kK}));
  EXPECT_EQ(m.variables().get("mha_p/value/bias").shape(), (Shape{kH, kV}));
  EXPECT_EQ(m.variables().get("mha_p/attention_output/kernel").shape(), (Shape{kH, kV, kOut}));
}

TEST(MultiHeadAttentionLayer, CrossAttentionMatchesHeadByHeadComputation) {
  auto q = Input({kT, kDq}), v = Input({kS, kDv});
  Model m({q, v}, {MultiHeadAttention(
                      kH, kK, {.value_dim = kV, .output_dim = kOut, .name = "mha_x"})({q, v})});
  m.build();
  randomize(m, 100);
  Tensor query = ::tern::testing::random_tensor(DType::kF32, {kB, kT, kDq}, 1);
  Tensor value = ::tern::testing::random_tensor(DType::kF32, {kB, kS, kDv}, 2);
  Tensor got = testing::run_model(m, {query, value}).at(0);
  ASSERT_EQ(got.shape(), (Shape{kB, kT, kOut}));
  testing::expect_close(got, reference_attention(m.variables(), "mha_x", query, value, nullptr),
                        1e-5);
}

TEST(MultiHeadAttentionLayer, MaskedKeysAreIgnored) {
  auto q = Input({kT, kDq}), v = Input({kS, kDv}), mk = Input({kT, kS}, DType::kBool);
  Model m({q, v, mk},
          {MultiHeadAttention(kH, kK,
                              {.value_dim = kV, .output_dim = kOut, .name = "mha_m"})({q, v, mk})});
  m.build();
  randomize(m, 200);
  Tensor query = ::tern::testing::random_tensor(DType::kF32, {kB, kT, kDq}, 3);
  Tensor value = ::tern::testing::random_tensor(DType::kF32, {kB, kS, kDv}, 4);
  Tensor mask(DType::kBool, {kB, kT, kS});
  for (int64_t i = 0; i < mask.num_elements(); ++i) mask.set(i, (i * 7) % 3 != 0 || i % kS == 0);
  Tensor got = testing::run_model(m, {query, value, mask}).at(0);
  testing::expect_close(got, reference_attention(m.variables(), "mha_m", query, value, &mask),
                        1e-5);  // The mask matters: without it the result differs.
  Tensor unmasked = reference_attention(m.variables(), "mha_m", query, value, nullptr);
  double diff = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) diff += std::abs(got.get(i) - unmasked.get(i));
  EXPECT_GT(diff, 1e-2);
}

TEST(MultiHeadAttentionLayer, CausalMaskEqualsExplicitLowerTriangle) {
  auto x = Input({kT, kDq}), mk = Input({kT, kT}, DType::kBool);
  auto causal = MultiHeadAttention(kH, kK, {.use_causal_mask = true, .name = "mha_c"});
  Model mc({x}, {causal(x)});  // one input: self-attention
  mc.build();
  randomize(mc, 300);
  Tensor query = ::tern::testing::random_tensor(DType::kF32, {kB, kT, kDq}, 5);
  Tensor tri(DType::kBool, {kB, kT, kT});
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t i = 0; i < kT; ++i) {
      for (int64_t j = 0; j < kT; ++j) tri.set((b * kT + i) * kT + j, i >= j);
    }
  }
  Tensor got = testing::run_model1(mc, query);
  EXPECT_EQ(got.shape(), (Shape{kB, kT, kDq}));
  auto explicit_mask = MultiHeadAttention(kH, kK, {.name = "mha_c2"});
  Model me({x, mk}, {explicit_mask({x, x, x, mk})});
  me.build();
  for (const auto& w : me.weights()) {
    std::string src = "mha_c" + w.name.substr(std::string("mha_c2").size());
    me.variables().assign(w.name, mc.variables().get(src));
  }
  testing::expect_close(got, testing::run_model(me, {query, tri}).at(0), 1e-6);
}

// The composite's gradients (through the masked softmax, head transposes and the reshaped
// kernels) against central finite differences of the loss sum(output * r).
TEST(MultiHeadAttentionLayer, GradientsMatchFiniteDifferences) {
  auto q = Input({kT, kDq}), v = Input({kS, kDv}), mk = Input({kT, kS}, DType::kBool);
  Model m({q, v, mk},
          {MultiHeadAttention(kH, kK,
                              {.value_dim = kV, .output_dim = kOut, .name = "mha_g"})({q, v, mk})});
  m.build();
  randomize(m, 400);
  Tensor mask(DType::kBool, {kB, kT, kS});
  for (int64_t i = 0; i < mask.num_elements(); ++i) mask.set(i, i % 5 != 2 || i % kS == 0);
  ir::Graph g("grad");
  std::vector<ir::Value*> in = {g.input("q", {DType::kF32, {kB, kT, kDq}}),
                                g.input("v", {DType::kF32, {kB, kS, kDv}}),
                                g.input("mask", {DType::kBool, {kB, kT, kS}})};
  LayerContext ctx{g};
  ir::Value* out = m.forward(ctx, in)[0];
  ir::Value* r = g.constant(::tern::testing::random_tensor(DType::kF32, {kB, kT, kOut}, 9));
  ir::Value* loss = g.add("sum", {g.add("mul", {out, r})},
                          {{"axes", std::vector<int64_t>{}}, {"keepdims", false}});
  std::vector<ir::Value*> params;
  for (const auto& w : m.weights()) params.push_back(g.variable(w.name, w.type));
  std::vector<ir::Value*> grads = autodiff::gradients(g, loss, params);
  g.add_output("loss", loss);
  for (size_t i = 0; i < grads.size(); ++i) g.add_output(str_cat("g", i), grads[i]);
  auto exe = runtime::Executable::compile(g, m.variables());
  runtime::Feeds feeds = {{"q", ::tern::testing::random_tensor(DType::kF32, {kB, kT, kDq}, 7)},
                          {"v", ::tern::testing::random_tensor(DType::kF32, {kB, kS, kDv}, 8)},
                          {"mask", mask}};
  std::vector<Tensor> analytic = exe->run(feeds);
  const double eps = 1e-2;
  int checked = 0, nonzero = 0;
  for (size_t p = 0; p < params.size(); ++p) {
    Tensor& w = m.variables().get_mutable(m.weights()[p].name);
    for (int64_t i = 0; i < w.num_elements(); i += 5) {
      double orig = w.get(i);
      w.set(i, orig + eps);
      double plus = exe->run(feeds)[0].get(0);
      w.set(i, orig - eps);
      double minus = exe->run(feeds)[0].get(0);
      w.set(i, orig);
      double fd = (plus - minus) / (2 * eps), an = analytic[p + 1].get(i);
      EXPECT_NEAR(an, fd, 3e-3 + 2e-2 * std::abs(fd)) << m.weights()[p].name << " element " << i;
      ++checked;
      nonzero += std::abs(fd) > 1e-3;
    }
  }
  EXPECT_GT(checked, 20);
  EXPECT_GT(nonzero, checked / 2);
}

TEST(MultiHeadAttentionLayer, DropoutOnlyInTraining) {
  auto x = Input({kT, kDq});
  Model m({x}, {MultiHeadAttention(kH, kK, {.dropout = 0.5, .name = "mha_d"})({x, x})});
  m.build();
  Tensor query = ::tern::testing::random_tensor(DType::kF32, {kB, kT, kDq}, 6);
  Tensor a = testing::run_model1(m, query), b = testing::run_model1(m, query);
  testing::expect_close(a, b, 0);
  Tensor t = testing::run_model(m, {query}, /*training=*/true, 1).at(0);
  double diff = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) diff += std::abs(t.get(i) - a.get(i));
  EXPECT_GT(diff, 1e-3);
}

// The layer's one attention op and the unfused graph (fused = false) give the same output in
// training, dropout mask included, with a mask and the causal mask.
TEST(MultiHeadAttentionLayer, FusedAndUnfusedAgreeInTraining) {
  auto x = Input({kT, kDq}), mk = Input({kT, kT}, DType::kBool);
  auto build = [&](bool fused, const char* name) {
    auto m = std::make_unique<Model>(
        std::vector<SymbolicTensor>{x, mk},
        std::vector<SymbolicTensor>{MultiHeadAttention(
            kH, kK,
            {.dropout = 0.3, .use_causal_mask = true, .seed = 5, .fused = fused, .name = name})(
            {x, x, x, mk})});
    m->build();
    randomize(*m, 500);
    return m;
  };
  auto fused = build(true, "mha_f"), plain = build(false, "mha_u");
  Tensor query = ::tern::testing::random_tensor(DType::kF32, {kB, kT, kDq}, 10);
  Tensor mask(DType::kBool, {kB, kT, kT});
  for (int64_t i = 0; i < mask.num_elements(); ++i) mask.set(i, i % 4 != 1);
  for (int64_t step : {1, 2}) {
    Tensor a = testing::run_model(*fused, {query, mask}, /*training=*/true, step).at(0);
    Tensor b = testing::run_model(*plain, {query, mask}, /*training=*/true, step).at(0);
    testing::expect_close(a, b, 1e-5);
  }
  Tensor eval = testing::run_model(*fused, {query, mask}).at(0);
  EXPECT_GT(max_abs_diff(eval, testing::run_model(*fused, {query, mask}, true, 1).at(0)), 1e-3)
      << "dropout must act in training";
}

TEST(MultiHeadAttentionLayer, Errors) {
  EXPECT_TERN_ERROR(MultiHeadAttention(0, 4), ErrorCode::kInvalidArgument, "must be positive");
  auto q = Input({kT, kDq}), v = Input({kS, kDv}), bad_mask = Input({kT, kT}, DType::kBool);
  Model m({q, v, bad_mask}, {MultiHeadAttention(kH, kK, {.name = "mha_e"})({q, v, bad_mask})});
  EXPECT_TERN_ERROR(m.build(), ErrorCode::kInvalidArgument,
                    "attention_mask must be bool [1, 3, 4]");
  auto flat = Input({kDq});
  Model r2({flat}, {MultiHeadAttention(kH, kK, {.name = "mha_r"})(flat)});
  EXPECT_TERN_ERROR(r2.build(), ErrorCode::kInvalidArgument, "must be [batch, seq, features]");
}

}  // namespace
}  // namespace tern::nn
