// The training step graph: the forward graph is simplified before it is differentiated, so a
// rewrite that changes what the gradient reads takes effect (build_step_graph).
#include <gtest/gtest.h>

#include "tern/ir/graph.h"
#include "tern/nn/conv2d.h"
#include "tern/nn/dense.h"
#include "tern/nn/losses.h"
#include "tern/nn/pooling.h"
#include "tern/nn/reshaping.h"
#include "tern/optim/adam.h"
#include "tern/train/training_state.h"

namespace tern {
namespace {

// Shapes of the relu_grad nodes of the train step of Conv2D(relu) -> MaxPooling2D -> Dense.
std::vector<Shape> relu_grad_shapes(bool deterministic) {
  nn::Sequential model({nn::Conv2D(4, 3, {.padding = "same", .activation = "relu"}),
                        nn::MaxPooling2D(2), nn::Flatten(), nn::Dense(3)},
                       Shape{8, 8, 1});
  model.build();
  model.compile(std::make_shared<optim::Adam>(1e-3),
                std::make_shared<nn::SparseCategoricalCrossentropy>(true), {"accuracy"});
  train::TrainingState& state = *model.training_state();
  state.compile_options.deterministic = deterministic;
  const TensorType x{DType::kF32, {2, 8, 8, 1}}, y{DType::kI64, {2}};
  std::unique_ptr<ir::Graph> g =
      train::build_step_graph(model, state, train::StepKind::kTrain, x, &y);
  std::vector<Shape> shapes;
  for (const auto& n : g->nodes()) {
    if (n->op_name() == "relu_grad") shapes.push_back(n->output()->shape());
  }
  return shapes;
}

// relu after max pooling (the two commute): its gradient runs on the pooled [2, 4, 4, 4], not on
// the convolution's [2, 8, 8, 4].
TEST(StepGraph, ReluGradientRunsOnThePooledTensor) {
  EXPECT_EQ(relu_grad_shapes(false), (std::vector<Shape>{Shape{2, 4, 4, 4}}));
}

// Deterministic (bit-exact) compilation keeps the model's order (a window of -0 and +0 could
// pool to either zero).
TEST(StepGraph, DeterministicKeepsTheOrder) {
  EXPECT_EQ(relu_grad_shapes(true), (std::vector<Shape>{Shape{2, 8, 8, 4}}));
}

}  // namespace
}  // namespace tern
