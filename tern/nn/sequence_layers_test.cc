// Embedding, PositionEmbedding and GlobalAveragePooling1D: shapes, values, initializer ranges,
// id casting and errors.
#include <gtest/gtest.h>

#include "tern/nn/add_layer.h"
#include "tern/nn/embedding.h"
#include "tern/nn/global_pooling1d.h"
#include "tern/nn/layer_test_util.h"
#include "tern/nn/position_embedding.h"

namespace tern::nn {
namespace {

TEST(EmbeddingLayer, LooksUpRowsOfTheTable) {
  auto ids = Input({3}, DType::kI64);
  Model m({ids}, {Embedding(5, 2, {.name = "emb"})(ids)});
  m.build();
  EXPECT_EQ(m.count_params(), 10);
  const Tensor& table = m.variables().get("emb/embeddings");
  ASSERT_EQ(table.shape(), (Shape{5, 2}));
  for (int64_t i = 0; i < table.num_elements(); ++i) {
    EXPECT_LE(std::abs(table.get(i)), 0.05);  // Keras' "uniform" initializer
  }
  m.variables().assign(
      "emb/embeddings",
      Tensor::from_values(DType::kF32, {5, 2}, {0, 1, 10, 11, 20, 21, 30, 31, 40, 41}));
  Tensor out = testing::run_model1(m, Tensor::from_values(DType::kI64, {2, 3}, {4, 0, 2, 1, 1, 3}));
  testing::expect_close(
      out,
      Tensor::from_values(DType::kF32, {2, 3, 2}, {40, 41, 0, 1, 20, 21, 10, 11, 10, 11, 30, 31}),
      0);
}

TEST(EmbeddingLayer, CastsFloatIds) {
  auto ids = Input({2});
  Model m({ids}, {Embedding(3, 1, {.name = "emb_f"})(ids)});
  m.build();
  m.variables().assign("emb_f/embeddings", Tensor::from_values(DType::kF32, {3, 1}, {5, 6, 7}));
  Tensor out = testing::run_model1(m, Tensor::from_values(DType::kF32, {1, 2}, {2, 0}));
  testing::expect_close(out, Tensor::from_values(DType::kF32, {1, 2, 1}, {7, 5}), 0);
}

TEST(EmbeddingLayer, RejectsBadSizesAndBoolIds) {
  EXPECT_TERN_ERROR(Embedding(0, 4), ErrorCode::kInvalidArgument, "must be positive");
  auto ids = Input({2}, DType::kBool);
  Model m({ids}, {Embedding(3, 1, {.name = "emb_b"})(ids)});
  EXPECT_TERN_ERROR(m.build(), ErrorCode::kInvalidArgument, "needs integer ids");
}

TEST(PositionEmbeddingLayer, AddsOneLearnedVectorPerPosition) {
  auto x = Input({3, 2});
  auto pos = PositionEmbedding(4, "glorot_uniform", "pos")(x);
  Model m({x}, {Add()({x, pos})});
  m.build();
  EXPECT_EQ(m.count_params(), 8);
  m.variables().assign("pos/embeddings", Tensor::from_values(DType::kF32, {4, 2},
                                                             {100, 200, 300, 400, 500, 600, 7, 8}));
  Tensor in =
      Tensor::from_values(DType::kF32, {2, 3, 2}, {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6});
  Tensor out = testing::run_model1(m, in);
  testing::expect_close(
      out,
      Tensor::from_values(DType::kF32, {2, 3, 2},
                          {101, 202, 303, 404, 505, 606, 99, 198, 297, 396, 495, 594}),
      0);
}

TEST(PositionEmbeddingLayer, RejectsTooLongSequences) {
  auto x = Input({5, 2});
  Model m({x}, {PositionEmbedding(4, "glorot_uniform", "pos_short")(x)});
  EXPECT_TERN_ERROR(m.build(), ErrorCode::kInvalidArgument, "built for 4 positions");
}

TEST(GlobalAveragePooling1DLayer, AveragesOverSteps) {
  auto x = Input({3, 2});
  Model m({x}, {GlobalAveragePooling1D()(x)});
  m.build();
  Tensor in = Tensor::from_values(DType::kF32, {1, 3, 2}, {1, 10, 2, 20, 6, 60});
  testing::expect_close(testing::run_model1(m, in),
                        Tensor::from_values(DType::kF32, {1, 2}, {3, 30}), 1e-6);
}

}  // namespace
}  // namespace tern::nn
