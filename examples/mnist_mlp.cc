// The README's program: a Sequential MLP on Fashion-MNIST through the C++ API; saves the trained
// weights.
//   build/examples/mnist_mlp [data_dir] [epochs] [weights_path]
#include <iostream>

#include "tern/data/idx_dataset.h"
#include "tern/data/idx_images.h"
#include "tern/data/tensor_slice_dataset.h"
#include "tern/nn/dense.h"
#include "tern/nn/losses.h"
#include "tern/nn/reshaping.h"
#include "tern/optim/adam.h"
#include "tern/train/callbacks.h"

namespace {

// Images as f32 [N, 784] in [0, 1]; labels as i64 in [0, 10).
std::pair<tern::Tensor, tern::Tensor> load(const std::string& dir, const std::string& split) {
  const std::string images = dir + "/" + split + "-images-idx3-ubyte.gz";
  const std::string labels = dir + "/" + split + "-labels-idx1-ubyte.gz";
  tern::Tensor x = tern::data::idx_images_to_f32(tern::data::read_idx(images), images);
  tern::Tensor y = tern::data::idx_labels_to_i64(tern::data::read_idx(labels), 10, labels);
  return {x.reshape({x.shape()[0], 784}), y};
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  int epochs = argc > 2 ? std::atoi(argv[2]) : 5;
  std::string weights = argc > 3 ? argv[3] : "runs/mnist_mlp/weights.safetensors";
  try {
    auto [train_x, train_y] = load(dir, "train");
    auto [test_x, test_y] = load(dir, "t10k");
    auto train_ds = tern::data::from_tensor_slices({train_x, train_y})
                        ->shuffle(60000, 42)
                        ->batch(128)
                        ->prefetch();
    auto val_ds = tern::data::from_tensor_slices({test_x, test_y})->batch(512);

    auto model = tern::nn::Sequential({tern::nn::Dense(1024, "relu"), tern::nn::Dense(10)});
    model.compile(std::make_shared<tern::optim::Adam>(1e-3),
                  std::make_shared<tern::nn::SparseCategoricalCrossentropy>(/*from_logits=*/true),
                  {"accuracy"});
    auto history = model.fit(train_ds, {.epochs = epochs, .validation_data = val_ds});
    model.summary(std::cout);
    model.save_weights(weights);
    std::cout << "final val_accuracy: " << history.at("val_accuracy").back()
              << "\nweights: " << weights << "\n";
    return 0;
  } catch (const tern::Error& e) {
    std::cerr << "mnist_mlp: " << e.what() << "\n";
    return 1;
  }
}
