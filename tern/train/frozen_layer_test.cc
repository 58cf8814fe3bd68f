// Keras' `trainable = false` during fit: a frozen layer's weights (and a frozen BatchNorm's moving
// statistics) stay bitwise unchanged while the other layers train; summary() counts them as
// non-trainable. Normalization's adapted statistics are never trained either.
#include <gtest/gtest.h>

#include <map>

#include "tern/base/philox.h"
#include "tern/nn/batch_norm.h"
#include "tern/nn/dense.h"
#include "tern/nn/losses.h"
#include "tern/nn/normalization.h"
#include "tern/optim/adam.h"
#include "tern/train/callbacks.h"
#include "tests/support/random_tensor.h"

namespace tern {
namespace {

bool same(const Tensor& a, const Tensor& b) {
  if (a.type() != b.type()) return false;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (a.get(i) != b.get(i)) return false;
  }
  return true;
}

// Labels from the sign pattern of two features: learnable by the trainable head.
void make_data(int64_t n, Tensor* x, Tensor* y) {
  *x = testing::random_tensor(DType::kF32, {n, 6}, 3, -2.0, 2.0);
  *y = Tensor(DType::kI64, {n});
  for (int64_t i = 0; i < n; ++i)
    y->set(i, (x->get(i * 6) > 0 ? 1 : 0) + (x->get(i * 6 + 1) > 0 ? 2 : 0));
}

TEST(FrozenLayers, FrozenWeightsDoNotChangeDuringFit) {
  auto norm = nn::Normalization({.name = "norm"});
  Tensor x, y;
  make_data(256, &x, &y);
  norm->adapt(x);
  auto frozen = nn::Dense(16, nn::DenseOptions{.activation = "relu", .name = "frozen_dense"});
  auto frozen_bn = nn::BatchNormalization({.name = "frozen_bn"});
  auto live_bn = nn::BatchNormalization({.name = "live_bn"});
  frozen->trainable = false;
  frozen_bn->trainable = false;
  nn::Sequential model({norm, frozen, frozen_bn,
                        nn::Dense(16, nn::DenseOptions{.activation = "relu", .name = "live_dense"}),
                        live_bn, nn::Dense(4, nn::DenseOptions{.name = "head"})},
                       Shape{6});
  model.build();
  // Trainable: live_dense 16*16 + 16, live_bn 32, head 16*4 + 4 = 372. Non-trainable: norm 12,
  // frozen_dense 6*16 + 16 = 112, frozen_bn 64, live_bn moving stats 32 = 220.
  std::string s = model.summary();
  EXPECT_NE(s.find("Trainable params: 372\n"), std::string::npos) << s;
  EXPECT_NE(s.find("Non-trainable params: 220\n"), std::string::npos) << s;
  std::map<std::string, Tensor> before;
  for (const auto& w : model.weights()) before[w.name] = model.variables().get(w.name).clone();

  model.compile(std::make_shared<optim::Adam>(1e-2),
                std::make_shared<nn::SparseCategoricalCrossentropy>(true), {"accuracy"});
  nn::FitOptions o;
  o.epochs = 2;
  o.batch_size = 32;
  o.verbose = 0;
  train::History h = model.fit(x, y, o);
  EXPECT_LT(h.at("loss").back(), h.at("loss").front());

  for (const auto& w : model.weights()) {
    bool unchanged = same(before[w.name], model.variables().get(w.name));
    bool should_stay = w.name.rfind("frozen_", 0) == 0 || w.name.rfind("norm/", 0) == 0;
    EXPECT_EQ(unchanged, should_stay) << w.name;
  }
}

}  // namespace
}  // namespace tern
