// Training from a config file with the library alone (what `tern train` does, without the
// command): load the TOML (with --set overrides), train, evaluate on the test split, save the
// weights.
//   build/examples/train_from_config examples/fashion_mnist.toml --set training.epochs=1
#include <iostream>
#include <string>
#include <vector>

#include "tern/config/trainer.h"
#include "tern/train/model_weights.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: train_from_config CONFIG [--set key=value]...\n";
    return 2;
  }
  std::vector<std::string> overrides;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) != "--set" || i + 1 == argc) {
      std::cerr << "train_from_config: expected --set key=value, got '" << argv[i] << "'\n";
      return 2;
    }
    overrides.push_back(argv[++i]);
  }
  try {
    tern::config::Trainer trainer(tern::config::load_config(argv[1], overrides));
    tern::train::History history = trainer.fit();
    tern::nn::EvaluateResult test = trainer.evaluate();
    trainer.model().save_weights(trainer.weights_path());

    std::cout << "epochs: " << history.epoch.size() << "\ntest_loss: " << test.loss << "\n";
    for (const auto& [name, value] : test.metrics)
      std::cout << "test_" << name << ": " << value << "\n";
    std::cout << "weights: " << trainer.weights_path()
              << "\nweights_sha256: " << tern::train::weights_sha256(trainer.model()) << "\n";
    return 0;
  } catch (const tern::Error& e) {
    std::cerr << "train_from_config: " << e.what() << "\n";
    return 1;
  }
}
