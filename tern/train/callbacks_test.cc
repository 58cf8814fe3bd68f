// Callbacks, gradient accumulation, clipping and the progress line.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "tern/base/philox.h"
#include "tern/nn/dense.h"
#include "tern/nn/losses.h"
#include "tern/optim/sgd.h"
#include "tern/train/callbacks.h"
#include "tern/train/progress.h"
#include "tests/support/random_tensor.h"

namespace tern {
namespace {

void regression_data(int64_t n, Tensor* x, Tensor* y) {
  *x = testing::random_tensor(DType::kF32, {n, 4}, 5);
  *y = Tensor(DType::kF32, {n, 1});
  for (int64_t i = 0; i < n; ++i) y->set(i, x->get(i * 4) - 2 * x->get(i * 4 + 1) + 0.5);
}

std::shared_ptr<nn::Sequential> linear_model(double lr,
                                             std::shared_ptr<optim::Optimizer>* opt_out = nullptr) {
  auto m = std::make_shared<nn::Sequential>(std::vector<nn::LayerPtr>{nn::Dense(1)}, Shape{4});
  auto opt = std::make_shared<optim::SGD>(lr);
  if (opt_out) *opt_out = opt;
  m->compile(opt, std::make_shared<nn::MeanSquaredError>(), std::vector<std::string>{});
  return m;
}

nn::FitOptions quiet(int epochs, int64_t batch) {
  nn::FitOptions o;
  o.epochs = epochs;
  o.batch_size = batch;
  o.verbose = 0;
  o.shuffle = false;
  return o;
}

TEST(Callbacks, LearningRateSchedulerAndReduceOnPlateau) {
  Tensor x, y;
  regression_data(64, &x, &y);
  auto m = linear_model(0.1);
  auto sched = std::make_shared<train::LearningRateScheduler>(
      [](int epoch, double) { return 0.1 / (epoch + 1); });
  nn::FitOptions o = quiet(3, 16);
  o.callbacks = {sched};
  train::History h = m->fit(x, y, o);
  EXPECT_NEAR(h.at("lr")[2], 0.1 / 3, 1e-12);

  auto m2 = linear_model(0.0);  // never improves: plateau every epoch
  auto plateau = std::make_shared<train::ReduceLROnPlateau>(train::ReduceLROnPlateauOptions{
      .monitor = "loss", .factor = 0.5, .patience = 1, .min_lr = 0});
  train::set_learning_rate(*m2, 1e-9);  // tiny but nonzero so reductions are visible
  o.callbacks = {plateau};
  h = m2->fit(x, y, o);
  EXPECT_LT(h.at("lr").back(), 1e-9);
}

TEST(Callbacks, TerminateOnNaNStops) {
  Tensor x, y;
  regression_data(64, &x, &y);
  auto m = linear_model(1e6);  // diverges to inf/NaN quickly
  nn::FitOptions o = quiet(50, 8);
  o.callbacks = {std::make_shared<train::TerminateOnNaN>()};
  train::History h = m->fit(x, y, o);
  EXPECT_LT(h.epoch.size(), 50u);
}

TEST(Training, GradientAccumulationMatchesTheLargerBatch) {
  Tensor x, y;
  regression_data(64, &x, &y);
  auto big = linear_model(0.05);
  big->fit(x, y, quiet(2, 32));
  auto acc = linear_model(0.05);
  nn::FitOptions o = quiet(2, 16);
  o.gradient_accumulation_steps = 2;
  acc->fit(x, y, o);
  // Layer names differ between the two models; weights correspond by position.
  std::vector<nn::WeightSpec> wb = big->weights(), wa = acc->weights();
  ASSERT_EQ(wb.size(), wa.size());
  for (size_t i = 0; i < wb.size(); ++i) {
    EXPECT_LT(max_abs_diff(big->variables().get(wb[i].name), acc->variables().get(wa[i].name)),
              1e-5)
        << wb[i].name;
  }
  std::shared_ptr<optim::Optimizer> opt;
  auto single = linear_model(0.05, &opt);
  single->fit(x, y, quiet(1, 16));
  EXPECT_EQ(opt->iterations, 4);  // 64 / 16 updates without accumulation
}

TEST(Training, GlobalClipNormBoundsTheUpdate) {
  Tensor x, y;
  regression_data(64, &x, &y);
  std::shared_ptr<optim::Optimizer> opt;
  auto m = linear_model(1.0, &opt);
  opt->clip.global_clipnorm = 1e-3;
  m->build();
  std::map<std::string, Tensor> before;
  for (const auto& w : m->weights()) before[w.name] = m->variables().get(w.name).clone();
  m->fit(x, y, quiet(1, 64));  // one update, lr 1: the total step is at most 1e-3
  double sq = 0;
  for (const auto& w : m->weights()) {
    Tensor d = m->variables().get(w.name);
    for (int64_t i = 0; i < d.num_elements(); ++i)
      sq += std::pow(d.get(i) - before[w.name].get(i), 2);
  }
  EXPECT_LE(std::sqrt(sq), 1e-3 * (1 + 1e-4));
  EXPECT_GT(std::sqrt(sq), 0.5e-3);
}

TEST(Progress, NonInteractiveSummaryLine) {
  std::ostringstream os;
  train::ProgressBar bar(os, /*interactive=*/false, 0, 3, 10);
  bar.update(5, {{"loss", 0.5}});
  EXPECT_EQ(os.str(), "");  // nothing per step when not a terminal
  bar.finish(10, 1280, {{"loss", 0.25}, {"accuracy", 0.875}});
  std::string line = os.str();
  EXPECT_NE(line.find("Epoch 1/3 - 10 steps - "), std::string::npos) << line;
  EXPECT_NE(line.find("samples/s - loss: 0.2500 - accuracy: 0.8750\n"), std::string::npos) << line;
  std::ostringstream tty;
  train::ProgressBar live(tty, true, 1, 2, 4);
  live.update(4, {{"loss", 1.0}});
  EXPECT_NE(tty.str().find("Epoch 2/2\n"), std::string::npos);
  EXPECT_NE(tty.str().find("4/4 [==============================] - ETA: 0s - loss: 1.0000"),
            std::string::npos)
      << tty.str();
}

}  // namespace
}  // namespace tern
