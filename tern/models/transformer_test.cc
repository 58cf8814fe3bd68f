// Transformer classifier: parameter count by hand, output shape, zoo arguments and errors, and a
// short fit on a toy task (does token 1 occur in the sequence?) for post-LN and pre-LN blocks.
#include <gtest/gtest.h>

#include "tern/base/philox.h"
#include "tern/models/transformer.h"
#include "tern/models/zoo.h"
#include "tern/nn/losses.h"
#include "tern/optim/adam.h"
#include "tern/train/callbacks.h"
#include "tests/support/random_tensor.h"

namespace tern::models {
namespace {

// vocab 10, seq 6, d 8, 2 heads, ff 16, 1 layer, 3 classes:
//   token embedding 10*8 = 80, positions 6*8 = 48
//   attention: 4 projections of 8*8 + 8 = 72 -> 288; two LayerNorms 2 * 16 = 32
//   ffn: 8*16 + 16 = 144 and 16*8 + 8 = 136; classifier 8*3 + 3 = 27
//   total 80 + 48 + 288 + 32 + 144 + 136 + 27 = 755
TEST(TransformerClassifier, ParamCountAndOutputShape) {
  auto m = build_model("transformer_classifier", {6}, 3,
                       {{"vocab_size", int64_t{10}},
                        {"num_layers", int64_t{1}},
                        {"d_model", int64_t{8}},
                        {"num_heads", int64_t{2}},
                        {"ff_dim", int64_t{16}}});
  m->build();
  EXPECT_EQ(m->count_params(), 755);
  EXPECT_EQ(m->variables().get("encoder0_attention/query/kernel").shape(), (Shape{8, 2, 4}));
  Tensor ids = ::tern::testing::random_tensor(DType::kI64, {4, 6}, 1, 0, 10);
  EXPECT_EQ(m->predict(ids).shape(), (Shape{4, 3}));
  // Pre-LN adds one final LayerNorm (16 params).
  auto pre = build_model("transformer_classifier", {6}, 3,
                         {{"vocab_size", int64_t{10}},
                          {"num_layers", int64_t{1}},
                          {"d_model", int64_t{8}},
                          {"num_heads", int64_t{2}},
                          {"ff_dim", int64_t{16}},
                          {"normalize_first", true}});
  pre->build();
  EXPECT_EQ(pre->count_params(), 771);
}

TEST(TransformerClassifier, ArgumentErrors) {
  EXPECT_TERN_ERROR(build_model("transformer_classifier", {6}, 2), ErrorCode::kInvalidArgument,
                    "needs argument 'vocab_size'");
  EXPECT_TERN_ERROR(
      build_model(
          "transformer_classifier", {6}, 2,
          {{"vocab_size", int64_t{10}}, {"d_model", int64_t{10}}, {"num_heads", int64_t{4}}}),
      ErrorCode::kInvalidArgument, "d_model 10 must be divisible by num_heads 4");
  EXPECT_TERN_ERROR(build_model("transformer_classifier", {6}, 2,
                                {{"vocab_size", int64_t{10}}, {"seq_len", int64_t{8}}}),
                    ErrorCode::kInvalidArgument, "seq_len 8 differs from the input shape [6]");
  EXPECT_TERN_ERROR(build_model("transformer_classifier", {6, 2}, 2, {{"vocab_size", int64_t{10}}}),
                    ErrorCode::kInvalidArgument, "must be [seq_len]");
}

// Sequences of tokens 2..9; half of them get token 1 at a random position. Label: 1 occurs.
void make_contains_one(int64_t n, int64_t seq, uint64_t seed, Tensor* x, Tensor* y) {
  *x = Tensor(DType::kI64, {n, seq});
  *y = Tensor(DType::kI64, {n});
  PhiloxStream rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < seq; ++j)
      x->set(i * seq + j, 2 + static_cast<double>(rng.next_below(8)));
    bool has = rng.next_below(2) == 1;
    if (has) x->set(i * seq + static_cast<int64_t>(rng.next_below(static_cast<uint32_t>(seq))), 1);
    y->set(i, has ? 1 : 0);
  }
}

void fit_contains_one(bool normalize_first) {
  Tensor x, y, xv, yv;
  make_contains_one(512, 8, 1, &x, &y);
  make_contains_one(256, 8, 2, &xv, &yv);
  TransformerOptions o{.vocab_size = 10,
                       .num_layers = 1,
                       .d_model = 16,
                       .num_heads = 2,
                       .ff_dim = 32,
                       .dropout = 0.1,
                       .normalize_first = normalize_first};
  auto m = transformer_classifier({8}, 2, o);
  m->compile(std::make_shared<optim::Adam>(3e-3),
             std::make_shared<nn::SparseCategoricalCrossentropy>(true), {"accuracy"});
  nn::FitOptions f;
  f.epochs = 6;
  f.batch_size = 32;
  f.verbose = 0;
  train::History h = m->fit(x, y, f);
  EXPECT_LT(h.at("loss").back(), h.at("loss").front());
  double accuracy = m->evaluate(xv, yv, 128).metric("accuracy");
  ::testing::Test::RecordProperty("heldout_accuracy", std::to_string(accuracy));
  EXPECT_GE(accuracy, 0.95);
}

TEST(TransformerClassifier, PostLnLearnsWhetherTokenOneOccurs) {
  fit_contains_one(false);
}

TEST(TransformerClassifier, PreLnLearnsWhetherTokenOneOccurs) {
  fit_contains_one(true);
}

}  // namespace
}  // namespace tern::models
