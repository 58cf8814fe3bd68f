// Training API tests: Sequential + compile + fit on a small synthetic problem, evaluate, predict,
// callbacks and error messages.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/base/philox.h"
#include "tern/data/tensor_slice_dataset.h"
#include "tern/nn/dense.h"
#include "tern/nn/dropout.h"
#include "tern/nn/losses.h"
#include "tern/optim/adam.h"
#include "tern/optim/sgd.h"
#include "tern/train/callbacks.h"
#include "tests/support/random_tensor.h"

namespace tern {
namespace {

// Four Gaussian blobs in 8-D, labels 0..3.
void make_blobs(int64_t n, uint64_t seed, Tensor* x, Tensor* y) {
  *x = Tensor(DType::kF32, {n, 8});
  *y = Tensor(DType::kI64, {n});
  PhiloxStream rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = static_cast<int64_t>(rng.next_below(4));
    y->set(i, static_cast<double>(c));
    for (int64_t j = 0; j < 8; ++j) {
      double center = (j % 4 == c) ? 2.0 : 0.0;
      x->set(i * 8 + j, center + 0.5 * (rng.next_double() - 0.5));
    }
  }
}

TEST(Fit, SequentialMlpLearnsBlobs) {
  Tensor x, y;
  make_blobs(512, 1, &x, &y);
  nn::Sequential model({nn::Dense(32, "relu"), nn::Dropout(0.1), nn::Dense(4)});
  model.compile(std::make_shared<optim::Adam>(1e-2),
                std::make_shared<nn::SparseCategoricalCrossentropy>(true), {"accuracy"});
  nn::FitOptions o;
  o.epochs = 5;
  o.batch_size = 64;
  o.verbose = 0;
  o.validation_split = 0.25;
  train::History h = model.fit(x, y, o);
  ASSERT_EQ(h.epoch.size(), 5u);
  EXPECT_LT(h.at("loss").back(), h.at("loss").front());
  EXPECT_GT(h.at("val_accuracy").back(), 0.95);
  nn::EvaluateResult r = model.evaluate(x, y, 100);
  EXPECT_GT(r.metric("accuracy"), 0.95);
  Tensor p = model.predict(x, 100);
  EXPECT_EQ(p.shape(), (Shape{512, 4}));
  EXPECT_NE(model.summary().find("Total params: 420"), std::string::npos) << model.summary();
}

TEST(Fit, EarlyStoppingStopsAndRestores) {
  Tensor x, y;
  make_blobs(256, 2, &x, &y);
  nn::Sequential model({nn::Dense(4)});
  // A learning rate of zero never improves the loss: patience 1 stops after epoch 2.
  model.compile(std::make_shared<optim::SGD>(0.0),
                std::make_shared<nn::SparseCategoricalCrossentropy>(true),
                std::vector<std::string>{});
  auto es = std::make_shared<train::EarlyStopping>(
      train::EarlyStoppingOptions{.monitor = "loss", .patience = 1});
  nn::FitOptions o;
  o.epochs = 10;
  o.verbose = 0;
  o.callbacks = {es};
  train::History h = model.fit(x, y, o);
  EXPECT_EQ(h.epoch.size(), 2u);
  EXPECT_EQ(es->stopped_epoch(), 1);
}

TEST(Fit, ErrorsNameTheCulprit) {
  Tensor x, y;
  make_blobs(64, 3, &x, &y);
  nn::Sequential model({nn::Dense(4)});
  EXPECT_TERN_ERROR(model.fit(x, y), ErrorCode::kInvalidArgument, "not compiled");
  model.compile(std::make_shared<optim::SGD>(0.1),
                std::make_shared<nn::SparseCategoricalCrossentropy>(true),
                std::vector<std::string>{});
  Tensor bad_y = Tensor::zeros(DType::kI64, {32});
  EXPECT_TERN_ERROR(model.fit(x, bad_y), ErrorCode::kInvalidArgument, "sample counts differ");
}

// Bad-input report F8: no training data gave a "successful" fit (loss 0, untrained weights).
TEST(Fit, AnEpochWithoutABatchIsAnError) {
  Tensor x, y;
  make_blobs(64, 3, &x, &y);
  nn::Sequential model({nn::Dense(4)});
  model.compile(std::make_shared<optim::SGD>(0.1),
                std::make_shared<nn::SparseCategoricalCrossentropy>(true),
                std::vector<std::string>{});
  nn::FitOptions o;
  o.verbose = 0;
  data::DatasetPtr empty = data::from_tensor_slices({x, y})->take(0)->batch(8);
  EXPECT_TERN_ERROR(model.fit(empty, o), ErrorCode::kInvalidArgument,
                    "the training data yielded no batch in epoch 1");
  o.steps_per_epoch = 0;
  EXPECT_TERN_ERROR(model.fit(data::from_tensor_slices({x, y})->batch(8), o),
                    ErrorCode::kInvalidArgument, "steps_per_epoch must be -1");
}

TEST(Fit, UnknownMetricSuggestsClosest) {
  nn::Sequential model({nn::Dense(4)});
  EXPECT_TERN_ERROR(model.compile(std::make_shared<optim::SGD>(0.1),
                                  std::make_shared<nn::SparseCategoricalCrossentropy>(true),
                                  std::vector<std::string>{"acuracy"}),
                    ErrorCode::kInvalidArgument, "did you mean 'accuracy'");
}

}  // namespace
}  // namespace tern
