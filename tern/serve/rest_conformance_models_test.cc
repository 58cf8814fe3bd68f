// The conformance suite's real model directories (rest_conformance_models.h) answer what the
// in-memory TestBackend (rest_test_backend.h) answers, signature by signature, and version 3 is
// refused as the TestBackend's status says. The suite itself runs against both servers.
#include "tern/serve/rest_conformance_models.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tern/data/example_proto.h"
#include "tern/serve/core_test_util.h"
#include "tern/serve/loaded_model.h"
#include "tern/serve/rest_test_backend.h"

namespace tern::serve {
namespace {

std::string example(float x) {
  data::Example e;
  data::Feature f;
  f.kind = data::FeatureKind::kFloat;
  f.float_list = {x};
  e.features["x"] = f;
  return data::serialize_example(e);
}

TensorMap request(const std::string& signature) {
  TensorMap in;
  if (signature == "serving_default" || signature == "scalar") {
    in["x"] = TensorValue::from_tensor(
        Tensor::from_vector<float>(Shape{4}, {1.0f, 2.0f, 1111111.0f, -0.25f}));
  } else if (signature == "two_inputs") {
    in["a"] = TensorValue::from_tensor(Tensor::from_vector<float>(Shape{2, 2}, {1, 2, 4.5f, 5}));
    in["b"] = TensorValue::from_tensor(Tensor::from_vector<int64_t>(Shape{2}, {3, -6}));
  } else {
    in["inputs"] = TensorValue::from_strings({3}, {example(0.25f), example(0.75f), example(4)});
  }
  return in;
}

void expect_same(const TensorMap& want, const TensorMap& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (const auto& [alias, w] : want) {
    ASSERT_TRUE(got.count(alias)) << what << " " << alias;
    const TensorValue& g = got.at(alias);
    EXPECT_EQ(g.type_string(), w.type_string()) << what << " " << alias;
    if (w.is_string()) {
      EXPECT_EQ(g.strings, w.strings) << what << " " << alias;
    } else {
      ASSERT_EQ(g.numbers.nbytes(), w.numbers.nbytes()) << what << " " << alias;
      EXPECT_EQ(std::memcmp(g.numbers.raw_data(), w.numbers.raw_data(), w.numbers.nbytes()), 0)
          << what << " " << alias;
    }
  }
}

TEST(RestConformanceModels, RealModelsAnswerAsTheTestBackend) {
  testing::TempDir dir;
  testing::write_conformance_models(dir.path());
  for (int version : {1, 2}) {
    ServablePtr real = load_servable(dir.path() + "/half_plus_two/" + std::to_string(version));
    testing::TestServable fake(version == 1 ? 3.0f : 2.0f);
    for (const auto& [name, sig] : fake.signatures()) {
      const std::string what = str_cat("version ", version, " signature ", name);
      if (name == "bytes") {
        EXPECT_FALSE(real->signatures().count(name)) << what;
        continue;
      }
      ASSERT_TRUE(real->signatures().count(name)) << what;
      EXPECT_EQ(real->signatures().at(name), sig) << what;
      if (name == "half") continue;  // DT_HALF requests stop at the REST / gRPC parsers
      expect_same(fake.run(name, request(name)), real->run(name, request(name)), what);
    }
    EXPECT_EQ(real->signatures().size() + 1, fake.signatures().size());
  }
}

TEST(RestConformanceModels, TruncatedVersionThreeIsRefusedAsTheStatusSays) {
  testing::TempDir dir;
  testing::write_conformance_models(dir.path());
  try {
    load_servable(dir.path() + "/half_plus_two/3");
    FAIL() << "a truncated version loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    const std::string backend = testing::TestBackend::kVersion3Error;
    const std::string tail = "/fingerprint.json: fingerprint mismatch";
    EXPECT_NE(e.message().find("/half_plus_two/3" + tail), std::string::npos) << e.message();
    EXPECT_NE(backend.find("/half_plus_two/3" + tail), std::string::npos);
    EXPECT_EQ(e.message().substr(e.message().find(" (a file")),
              backend.substr(backend.find(" (a file")));
  }
}

TEST(RestConformanceModels, SignaturesRunOnlyTheGraphPartTheyRead) {
  testing::TempDir dir;
  testing::write_conformance_models(dir.path());
  ModelDirContents c = read_model_dir(dir.path() + "/half_plus_two/2");
  LoadedModel m(std::move(c));
  // serving_default feeds x only: the other inputs are never asked for.
  TensorMap out = m.run("serving_default", request("serving_default"));
  EXPECT_EQ(out.size(), 1u);
  m.run("two_inputs", request("two_inputs"));
  // One executable per (signature part, batch size).
  EXPECT_EQ(m.compiled_batch_sizes(), 2u);
  // A signature that leaves an input its outputs read unfed is refused when written.
  ModelDirContents bad = testing::conformance_model(2.0f);
  bad.signatures.at("two_inputs").signature.inputs.erase("b");
  bad.signatures.at("two_inputs").input_tensors.erase("b");
  try {
    write_model_dir(bad, dir.path() + "/bad/1");
    FAIL() << "a signature that does not feed 'b' was written";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("signature 'two_inputs' feeds no alias to graph input 'b', which "
                               "its outputs read"),
              std::string::npos)
        << e.message();
  }
}

}  // namespace
}  // namespace tern::serve
