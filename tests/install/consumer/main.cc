// A C++ program outside tern's tree, built against an installed tern (tests/install/): trains a
// small classifier with the C++ API, checks that it learned, exports it as a served model
// directory and reads that back.
//   consumer OUT_DIR
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "tern/base/philox.h"
#include "tern/base/version.h"
#include "tern/data/tensor_slice_dataset.h"
#include "tern/nn/dense.h"
#include "tern/nn/losses.h"
#include "tern/nn/model.h"
#include "tern/optim/adam.h"
#include "tern/serve/export.h"
#include "tern/serve/model_dir.h"
#include "tern/train/callbacks.h"

namespace {

// Four Gaussian blobs in 8-D, labels 0..3.
void make_blobs(int64_t n, tern::Tensor* x, tern::Tensor* y) {
  *x = tern::Tensor(tern::DType::kF32, {n, 8});
  *y = tern::Tensor(tern::DType::kI64, {n});
  tern::PhiloxStream rng(5);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = static_cast<int64_t>(rng.next_below(4));
    y->set(i, static_cast<double>(c));
    for (int64_t j = 0; j < 8; ++j)
      x->set(i * 8 + j, ((j % 4 == c) ? 2.0 : 0.0) + 0.5 * (rng.next_double() - 0.5));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer OUT_DIR\n");
    return 2;
  }
  try {
    tern::Tensor x, y;
    make_blobs(512, &x, &y);
    auto train = tern::data::from_tensor_slices({x, y})->shuffle(512, 1)->batch(32);

    tern::nn::Sequential model({tern::nn::Dense(16, "relu"), tern::nn::Dense(4)}, tern::Shape{8});
    model.compile(std::make_shared<tern::optim::Adam>(1e-2),
                  std::make_shared<tern::nn::SparseCategoricalCrossentropy>(/*from_logits=*/true),
                  {"accuracy"});
    model.fit(train, {.epochs = 5, .verbose = 0});
    const double accuracy = model.evaluate(x, y).metric("accuracy");
    std::printf("tern %s: accuracy %.3f\n", tern::version(), accuracy);
    if (accuracy < 0.9) return 1;

    tern::serve::ExportOptions options;
    options.input = {.alias = "x", .dtype = tern::DType::kF32, .shape = tern::Shape{8}};
    options.classifier = true;
    const std::string dir = std::string(argv[1]) + "/blobs/1";
    const auto report = tern::serve::export_model(model, options, dir);
    const auto contents = tern::serve::read_model_dir(dir);
    std::printf("exported %s (fingerprint %s, written by tern %s)\n", dir.c_str(),
                report.fingerprint.c_str(), contents.tern_version.c_str());
    return contents.tern_version == tern::version() ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
