// Model::save_weights / load_weights round trips, including a model whose auto-generated layer
// names differ (matched by position), and the errors for a file from another model.
#include "tern/train/model_weights.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tern/base/sha256.h"

#include "tern/io/safetensors.h"
#include "tern/nn/dense.h"
#include "tests/support/random_tensor.h"

namespace tern {
namespace {

std::shared_ptr<nn::Sequential> mlp(uint64_t seed, int64_t hidden = 8) {
  auto m = std::make_shared<nn::Sequential>(
      std::vector<nn::LayerPtr>{nn::Dense(hidden, "relu"), nn::Dense(3)}, Shape{4});
  m->set_seed(seed);
  m->build();
  return m;
}

std::string temp_file(const std::string& name) {
  return ::testing::TempDir() + "/tern_model_weights/" + name;
}

TEST(ModelWeights, SaveThenLoadRestoresEveryWeight) {
  auto a = mlp(1);
  const std::string path = temp_file("sub/dir/a.safetensors");
  std::filesystem::remove_all(temp_file(""));
  a->save_weights(path);  // creates the folders
  io::SafetensorsFile f = io::load_safetensors(path);
  EXPECT_EQ(f.metadata.at("format"), "tern");
  EXPECT_EQ(f.tensors.size(), a->weights().size());

  auto b = mlp(2);  // other initial values, and other auto-generated layer names
  ASSERT_NE(b->weights()[0].name, a->weights()[0].name);
  ASSERT_NE(train::weights_sha256(*b), train::weights_sha256(*a));
  b->load_weights(path);  // paired by position through weight_order
  EXPECT_EQ(train::weights_sha256(*b), train::weights_sha256(*a));
  for (size_t i = 0; i < a->weights().size(); ++i) {
    EXPECT_TRUE(bitwise_equal(a->variables().get(a->weights()[i].name),
                              b->variables().get(b->weights()[i].name)));
  }
}

TEST(ModelWeights, HashDependsOnValuesNotNames) {
  auto a = mlp(5), b = mlp(5);
  EXPECT_EQ(train::weights_sha256(*a), train::weights_sha256(*b));
  Tensor& w = b->variables().get_mutable(b->weights()[0].name);
  w.set(0, w.get(0) + 1);
  EXPECT_NE(train::weights_sha256(*a), train::weights_sha256(*b));
  EXPECT_EQ(train::weights_sha256(*a).size(), 64u);
}

// weights_sha256 as model_weights.h and docs/formats.md state it, recomputed from the saved file:
// for each name of the "weight_order" metadata, "<dtype>[<d0>, <d1>, ...]" then the raw bytes.
TEST(ModelWeights, HashIsTheDocumentedDigestOfTheWeightsFile) {
  auto a = mlp(3);
  const std::string path = temp_file("documented.safetensors");
  a->save_weights(path);
  io::SafetensorsFile f = io::load_safetensors(path);
  const nlohmann::json order = nlohmann::json::parse(f.metadata.at("weight_order"));
  Sha256 h;
  std::vector<std::string> names;
  for (const auto& name : order) {
    const Tensor* t = nullptr;
    for (const auto& [n, v] : f.tensors) {
      if (n == name) t = &v;
    }
    ASSERT_NE(t, nullptr) << name;
    std::string type = std::string(dtype_name(t->dtype())) + "[";
    for (int64_t d = 0; d < t->rank(); ++d)
      type += (d ? ", " : "") + std::to_string(t->shape().dim(d));
    h.update(type + "]");
    h.update(t->raw_data(), t->nbytes());
    names.push_back(name.get<std::string>());
  }
  EXPECT_EQ(h.hex_digest(), train::weights_sha256(*a));
  EXPECT_EQ(train::weights_sha256(f.tensors, names), train::weights_sha256(*a));
  EXPECT_TERN_ERROR(train::weights_sha256(f.tensors, {"nope"}), ErrorCode::kNotFound, "nope");
}

TEST(ModelWeights, AFileOfAnotherModelIsAnErrorNamingTheWeight) {
  auto a = mlp(1);
  const std::string path = temp_file("other.safetensors");
  a->save_weights(path);
  auto wider = mlp(1, 16);  // same layer count, other shapes
  EXPECT_TERN_ERROR(wider->load_weights(path), ErrorCode::kInvalidArgument,
                    "but the model's weight '");
  auto deeper = std::make_shared<nn::Sequential>(
      std::vector<nn::LayerPtr>{nn::Dense(8), nn::Dense(8), nn::Dense(3)}, Shape{4});
  deeper->build();
  EXPECT_TERN_ERROR(deeper->load_weights(path), ErrorCode::kInvalidArgument,
                    "no matching weight order");
  EXPECT_TERN_ERROR(a->load_weights(temp_file("missing.safetensors")), ErrorCode::kNotFound,
                    "missing.safetensors");
}

}  // namespace
}  // namespace tern
