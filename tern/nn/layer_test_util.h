// Test helper for layer tests: runs a functional model's forward pass on concrete batches
// through a compiled Executable (inference or training mode) and returns its outputs.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tern/nn/model.h"
#include "tern/runtime/executable.h"
#include "tests/support/random_tensor.h"

namespace tern::nn::testing {

inline std::vector<Tensor> run_model(Model& model, const std::vector<Tensor>& inputs,
                                     bool training = false, int64_t rng_offset = 0) {
  ir::Graph g("forward");
  std::vector<ir::Value*> in;
  runtime::Feeds feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = str_cat("x", i);
    in.push_back(g.input(name, inputs[i].type()));
    feeds.push_back({name, inputs[i]});
  }
  LayerContext ctx{g};
  ctx.training = training;
  if (training) {
    ctx.rng_offset = g.input("rng_offset", {DType::kI64, Shape{}});
    feeds.push_back({"rng_offset", Tensor::scalar(DType::kI64, static_cast<double>(rng_offset))});
  }
  std::vector<ir::Value*> out = model.forward(ctx, in);
  for (size_t i = 0; i < out.size(); ++i) g.add_output(str_cat("y", i), out[i]);
  auto exe = runtime::Executable::compile(g, model.variables());
  return exe->run(feeds);
}

inline Tensor run_model1(Model& model, const Tensor& x, bool training = false) {
  return run_model(model, {x}, training).at(0);
}

// Element-wise closeness with a message naming the first differing index.
inline void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    ASSERT_NEAR(got.get(i), want.get(i), tol) << "at flat index " << i;
  }
}

}  // namespace tern::nn::testing
