// Lineage over a store written by hand: a pushed version back to the raw file, through cached
// executions to the producers, target forms and their errors, text and JSON.
#include "tern/pipeline/lineage.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tern/base/error.h"
#include "tern/io/atomic_file.h"
#include "tern/pipeline/content_hash.h"

namespace tern::pipeline {
namespace {

namespace fs = std::filesystem;

class LineageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tern_lineage_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "serving/m/3");
    io::write_file_atomically((dir_ / "serving/m/3/graph.tern").string(), "g");
    store_ = std::make_unique<MetadataStore>((dir_ / "metadata.sqlite").string());
    const int64_t run = store_->put_context("run", "r1");
    // ingest <- raw.csv; train <- examples (+ config); a cached train; push <- model.
    std::vector<RoleArtifact> in = {{"input:0", art("ExternalFile", "/data/raw.csv", "aa")}};
    const int64_t ingest = store_->begin_execution("ingest", "k1", "{}", {run}, in);
    std::vector<RoleArtifact> ex = {{"examples:train", art("Examples", "/r/ex/train", "bb")}};
    store_->finish_execution(ingest, ExecutionState::kComplete, ex, "164 records");
    examples_ = ex[0].artifact.id;
    raw_ = in[0].artifact.id;
    std::vector<RoleArtifact> tin = {{"examples:train", ex[0].artifact},
                                     {"training_config", art("TrainingConfig", "/c.toml", "cc")}};
    train_ = store_->begin_execution("train", "k2", R"({"epochs":3})", {run}, tin);
    Artifact model = art("Model", "/r/model", "dd");
    model.properties = {{"eval_accuracy", "0.9"}};
    std::vector<RoleArtifact> mo = {{"model", model}};
    store_->finish_execution(train_, ExecutionState::kComplete, mo, "trained");
    model_ = mo[0].artifact.id;
    std::vector<RoleArtifact> tin2 = tin;
    const int64_t cached = store_->begin_execution("train", "k2", "{}", {run}, tin2);
    store_->finish_execution(cached, ExecutionState::kCached, mo, "cached");
    std::vector<RoleArtifact> pin = {{"model", mo[0].artifact}};
    push_ = store_->begin_execution("push", "k3", "{}", {run}, pin);
    Artifact pushed = art("PushedModel", (dir_ / "serving/m/3").string(),
                          content_hash((dir_ / "serving/m/3").string()));
    pushed.properties = {{"version", "3"}};
    std::vector<RoleArtifact> po = {{"pushed", pushed}};
    store_->finish_execution(push_, ExecutionState::kComplete, po, "pushed version 3");
    pushed_ = po[0].artifact.id;
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  static Artifact art(const std::string& type, const std::string& uri, const std::string& hash) {
    Artifact a;
    a.type = type;
    a.uri = uri;
    a.content_hash = hash;
    return a;
  }
  fs::path dir_;
  std::unique_ptr<MetadataStore> store_;
  int64_t raw_ = 0, examples_ = 0, train_ = 0, model_ = 0, push_ = 0, pushed_ = 0;
};

TEST_F(LineageTest, PushedVersionBackToTheRawFile) {
  EXPECT_EQ(resolve_lineage_target(*store_, "serving:3"), pushed_);
  EXPECT_EQ(resolve_lineage_target(*store_, std::to_string(model_)), model_);
  EXPECT_EQ(resolve_lineage_target(*store_, "artifact:" + std::to_string(examples_)), examples_);
  EXPECT_EQ(resolve_lineage_target(*store_, (dir_ / "serving/m/3").string()), pushed_);
  LineageNode n = lineage(*store_, pushed_);
  ASSERT_TRUE(n.producer);
  EXPECT_EQ(n.producer->id, push_);
  EXPECT_EQ(n.run, "r1");
  ASSERT_EQ(n.inputs.size(), 1u);
  const LineageNode& model = n.inputs[0];
  EXPECT_EQ(model.artifact.id, model_);
  ASSERT_TRUE(model.producer);
  EXPECT_EQ(model.producer->id, train_);  // the COMPLETE one, not the cached one
  ASSERT_EQ(model.inputs.size(), 2u);
  EXPECT_EQ(model.inputs[0].role, "examples:train");
  EXPECT_EQ(model.inputs[1].role, "training_config");
  EXPECT_FALSE(model.inputs[1].producer);  // external
  const LineageNode& raw = model.inputs[0].inputs.at(0);
  EXPECT_EQ(raw.artifact.id, raw_);
  EXPECT_EQ(raw.artifact.uri, "/data/raw.csv");

  const std::string text = lineage_text(n);
  EXPECT_NE(text.find("PushedModel #" + std::to_string(pushed_)), std::string::npos) << text;
  EXPECT_NE(text.find("<- train (execution #" + std::to_string(train_)), std::string::npos) << text;
  EXPECT_NE(text.find("input:0: ExternalFile #" + std::to_string(raw_) + "  /data/raw.csv"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("eval_accuracy=0.9"), std::string::npos) << text;
  auto j = nlohmann::json::parse(lineage_json(n));
  EXPECT_EQ(j["artifact"]["id"], pushed_);
  EXPECT_EQ(j["produced_by"]["execution"]["component"], "push");
  EXPECT_EQ(j["produced_by"]["inputs"][0]["produced_by"]["execution"]["settings"]["epochs"], 3);
}

TEST_F(LineageTest, TargetErrors) {
  try {
    resolve_lineage_target(*store_, "serving:4");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(e.message().find("no pushed version 4"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("pushed versions: 3"), std::string::npos) << e.message();
  }
  for (const char* bad : {"serving:x", "serving:-1", "artifact:zz"}) {
    try {
      resolve_lineage_target(*store_, bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << bad;
    }
  }
  EXPECT_THROW(resolve_lineage_target(*store_, "999"), Error);
  EXPECT_THROW(resolve_lineage_target(*store_, "/no/such/path"), Error);
}

}  // namespace
}  // namespace tern::pipeline
