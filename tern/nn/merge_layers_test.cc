// Add and Concatenate: output shapes, values, and shape-mismatch errors naming both shapes.
#include <gtest/gtest.h>

#include "tern/nn/add_layer.h"
#include "tern/nn/concatenate.h"
#include "tern/nn/dense.h"
#include "tern/nn/layer_test_util.h"
#include "tests/support/random_tensor.h"

namespace tern::nn {
namespace {

using testing::expect_close;
using testing::run_model;

TEST(AddLayer, SumsInputsElementwise) {
  auto a = Input({3}), b = Input({3}), c = Input({3});
  Model m({a, b, c}, {Add("sum3")({a, b, c})});
  m.build();
  Tensor x = Tensor::from_values(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = Tensor::from_values(DType::kF32, {2, 3}, {10, 20, 30, 40, 50, 60});
  Tensor z = Tensor::from_values(DType::kF32, {2, 3}, {0.5, 0.5, 0.5, -1, -1, -1});
  Tensor out = run_model(m, {x, y, z}).at(0);
  expect_close(out, Tensor::from_values(DType::kF32, {2, 3}, {11.5, 22.5, 33.5, 43, 54, 65}), 0);
  EXPECT_EQ(m.count_params(), 0);
}

TEST(AddLayer, ResidualConnectionShape) {
  auto x = Input({4});
  auto h = Dense(4, "relu")(x);
  Model m({x}, {Add()({x, h})});
  m.build();
  Tensor out = run_model(m, {::tern::testing::random_tensor(DType::kF32, {5, 4}, 1)}).at(0);
  EXPECT_EQ(out.shape(), (Shape{5, 4}));
}

TEST(AddLayer, MismatchedShapesNameLayerAndBothShapes) {
  auto a = Input({4}), b = Input({5});
  Model m({a, b}, {Add("bad_add")({a, b})});
  EXPECT_TERN_ERROR(m.build(), ErrorCode::kInvalidArgument, "Add layer 'bad_add'");
  try {
    m.build();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("f32[1, 4]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("f32[1, 5]"), std::string::npos) << msg;
  }
}

TEST(AddLayer, NeedsTwoInputs) {
  auto a = Input({4});
  Model m({a}, {Add("lonely")(a)});
  EXPECT_TERN_ERROR(m.build(), ErrorCode::kInvalidArgument, "needs at least 2 inputs");
}

TEST(ConcatenateLayer, JoinsOnLastAxis) {
  auto a = Input({2}), b = Input({3});
  Model m({a, b}, {Concatenate()({a, b})});
  m.build();
  Tensor x = Tensor::from_values(DType::kF32, {2, 2}, {1, 2, 3, 4});
  Tensor y = Tensor::from_values(DType::kF32, {2, 3}, {5, 6, 7, 8, 9, 10});
  Tensor out = run_model(m, {x, y}).at(0);
  expect_close(out, Tensor::from_values(DType::kF32, {2, 5}, {1, 2, 5, 6, 7, 3, 4, 8, 9, 10}), 0);
}

TEST(ConcatenateLayer, JoinsOnMiddleAxis) {
  auto a = Input({1, 2}), b = Input({2, 2});
  Model m({a, b}, {Concatenate(1)({a, b})});
  m.build();
  Tensor x = Tensor::from_values(DType::kF32, {1, 1, 2}, {1, 2});
  Tensor y = Tensor::from_values(DType::kF32, {1, 2, 2}, {3, 4, 5, 6});
  Tensor out = run_model(m, {x, y}).at(0);
  expect_close(out, Tensor::from_values(DType::kF32, {1, 3, 2}, {1, 2, 3, 4, 5, 6}), 0);
}

TEST(ConcatenateLayer, MismatchAndBatchAxisErrors) {
  auto a = Input({2, 3}), b = Input({4, 3});
  Model bad({a, b}, {Concatenate(-1, "cat")({a, b})});
  EXPECT_TERN_ERROR(bad.build(), ErrorCode::kInvalidArgument,
                    "f32[1, 2, 3] (input 0) and f32[1, 4, 3]");
  auto c = Input({3}), d = Input({3});
  Model batch_axis({c, d}, {Concatenate(0, "cat0")({c, d})});
  EXPECT_TERN_ERROR(batch_axis.build(), ErrorCode::kInvalidArgument, "batch axis 0");
}

}  // namespace
}  // namespace tern::nn
