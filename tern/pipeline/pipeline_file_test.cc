// The pipeline file: sections and defaults, paths, dependencies between sections, and errors that
// name file:line and the key.
#include "tern/pipeline/pipeline_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tern/config/config.h"

namespace tern::pipeline {
namespace {

namespace fs = std::filesystem;

class PipelineFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tern_pf_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "data.csv") << "a,b\n1,x\n";
    std::ofstream(dir_ / "model.toml") << "[model]\nname = \"mlp\"\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& text) {
    const std::string p = (dir_ / "p.toml").string();
    std::ofstream(p) << text;
    return p;
  }
  // The ConfigError message of loading `text`.
  std::string error_of(const std::string& text) {
    try {
      load_pipeline(write(text));
    } catch (const config::ConfigError& e) {
      return e.message();
    }
    return "(no error)";
  }
  fs::path dir_;
};

TEST_F(PipelineFileTest, SectionsDefaultsAndResolvedPaths) {
  PipelineSpec s = load_pipeline(write(R"(
[pipeline]
name = "autos"
[ingest]
format = "csv"
paths = "data.csv"
columns = { a = "categorical" }
ratios = { train = 0.75, eval = 0.25 }
shards = 2
[statistics]
[schema]
[validate]
)"));
  EXPECT_EQ(s.name, "autos");
  EXPECT_EQ(s.root, "runs/pipelines/autos");
  EXPECT_EQ(s.model_name, "autos");
  EXPECT_EQ(s.serving_base_path, "runs/pipelines/autos/serving/autos");
  ASSERT_TRUE(s.ingest);
  EXPECT_EQ(s.ingest->paths,
            std::vector<std::string>{fs::absolute(dir_ / "data.csv").lexically_normal().string()});
  EXPECT_EQ(s.ingest->column_types.at("a"), "categorical");
  EXPECT_EQ(s.ingest->ratios.size(), 2u);
  EXPECT_EQ(s.ingest->shards, 2);
  EXPECT_EQ(s.components(),
            (std::vector<std::string>{"ingest", "statistics", "schema", "validate"}));
}

TEST_F(PipelineFileTest, ComponentsInDependencyOrderAndSettingsJson) {
  PipelineSpec s = load_pipeline(write(R"(
[statistics]
top_k = 5
[ingest]
format = "csv"
paths = ["data.csv"]
[pipeline]
name = "p"
root = "/tmp/somewhere"
)"),
                                 "/tmp/out");
  EXPECT_EQ(s.components(), (std::vector<std::string>{"ingest", "statistics"}));
  EXPECT_EQ(s.root, "/tmp/out");  // --out wins
  auto j = nlohmann::json::parse(s.settings_json("statistics"));
  EXPECT_EQ(j["top_k"], 5);
  EXPECT_EQ(s.settings_json("ingest"), load_pipeline(s.path, "/x").settings_json("ingest"));
}

TEST_F(PipelineFileTest, TransformTrainEvaluatePush) {
  PipelineSpec s = load_pipeline(write(R"(
[pipeline]
name = "autos"
model_name = "cars"
serving_base_path = "/srv/models/cars"
[ingest]
format = "csv"
paths = "data.csv"
[transform]
label = "b"
[[transform.features]]
input = "a"
op = "z_score"
[train]
config = "model.toml"
epochs = 3
learning_rate = 0.01
set = ["training.seed=7"]
[evaluate]
slice_by = ["label", "b"]
thresholds = { accuracy = 0.7, loss = 1.5 }
max_regression = 0.05
[push]
)"));
  EXPECT_EQ(s.components(),
            (std::vector<std::string>{"ingest", "transform", "train", "evaluate", "push"}));
  EXPECT_EQ(s.serving_base_path, "/srv/models/cars");
  EXPECT_EQ(s.model_name, "cars");
  EXPECT_EQ(s.train->config, fs::absolute(dir_ / "model.toml").lexically_normal().string());
  EXPECT_EQ(*s.train->epochs, 3);
  EXPECT_EQ(s.train->overrides, std::vector<std::string>{"training.seed=7"});
  EXPECT_EQ(s.evaluate->thresholds.at("loss"), 1.5);
  EXPECT_EQ(s.evaluate->max_regression, 0.05);
  auto t = nlohmann::json::parse(s.settings_json("transform"));
  EXPECT_EQ(t["label"], "b");
  EXPECT_EQ(t["features"][0]["op"], "z_score");
  auto e = nlohmann::json::parse(s.settings_json("evaluate"));
  EXPECT_EQ(e["model_name"], "cars");
  auto p = nlohmann::json::parse(s.settings_json("push"));
  EXPECT_EQ(p["serving_base_path"], "/srv/models/cars");
}

// The example pipelines read (their data from Debian's packages; the test runs in the source tree).
TEST(ExamplePipelines, Load) {
  if (!fs::exists("/usr/lib/python3/dist-packages/statsmodels/gam/tests/results/autos.csv") ||
      !fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "python3-statsmodels or dataset-fashion-mnist missing";
  PipelineSpec autos = load_pipeline("examples/autos_pipeline.toml");
  EXPECT_EQ(autos.components().size(), 8u);
  EXPECT_EQ(autos.root, "runs/pipelines/autos");
  EXPECT_FALSE(autos.schema->path.empty());
  PipelineSpec fmnist = load_pipeline("examples/fashion_mnist_pipeline.toml");
  EXPECT_EQ(fmnist.components().size(), 8u);
  EXPECT_EQ(fmnist.ingest->split_files.at("eval").size(), 2u);
}

TEST_F(PipelineFileTest, ErrorsNameFileLineAndKey) {
  const std::string head = "[pipeline]\nname = \"p\"\n";
  std::string e =
      error_of(head + "[ingest]\nformat = \"csv\"\npaths = [\"data.csv\"]\nshard = 3\n");
  EXPECT_NE(e.find("p.toml:6: unknown key 'ingest.shard' (did you mean 'ingest.shards'?)"),
            std::string::npos)
      << e;
  e = error_of(head + "[ingest]\nformat = \"csv\"\npaths = [\"data.csv\"]\nshards = \"many\"\n");
  EXPECT_NE(e.find("p.toml:6: key 'ingest.shards' must be an integer"), std::string::npos) << e;
  e = error_of(head + "[ingest]\nformat = \"csv\"\npaths = [\"nothere.csv\"]\n");
  EXPECT_NE(e.find("p.toml:5: key 'ingest.paths': '"), std::string::npos) << e;
  EXPECT_NE(e.find("nothere.csv' does not exist"), std::string::npos) << e;
  e = error_of(head + "[ingest]\nformat = \"parquet\"\npaths = [\"data.csv\"]\n");
  EXPECT_NE(e.find("p.toml:4: key 'ingest.format' = 'parquet' is not one of"), std::string::npos)
      << e;
  e = error_of(head + "[pipline]\n");
  EXPECT_NE(e.find("p.toml:3: unknown key 'pipline' (did you mean 'pipeline'?)"), std::string::npos)
      << e;
  e = error_of("[ingest]\nformat = \"csv\"\npaths = [\"data.csv\"]\n");
  EXPECT_NE(e.find("section [pipeline] is required"), std::string::npos) << e;
  e = error_of(head + "[train]\nconfig = \"model.toml\"\n");
  EXPECT_NE(e.find("p.toml:3: [train] needs [transform]"), std::string::npos) << e;
  e = error_of(head + "[evaluate]\nthresholds = { acuracy = 0.5 }\n");
  EXPECT_NE(e.find("p.toml:4: unknown key 'evaluate.thresholds.acuracy' (did you mean "
                   "'evaluate.thresholds.accuracy'?)"),
            std::string::npos)
      << e;
  e = error_of(head +
               "[ingest]\nformat = \"csv\"\npaths = [\"data.csv\"]\nratios = { train = "
               "0.5, eval = 0.2 }\n");
  EXPECT_NE(e.find("add up to 0.7"), std::string::npos) << e;
  // [transform] is checked by tern/transform's parser, with the pipeline file's lines.
  e = error_of(head +
               "[ingest]\nformat = \"csv\"\npaths = [\"data.csv\"]\n[transform]\n"
               "[[transform.features]]\ninput = \"a\"\nop = \"zscore\"\n");
  EXPECT_NE(e.find("p.toml:9:"), std::string::npos) << e;
  EXPECT_NE(e.find("zscore"), std::string::npos) << e;
  e = error_of(head +
               "[ingest]\nformat = \"csv\"\npaths = [\"data.csv\"]\nratios = { train = "
               "1.0 }\nsplits = { train = [\"data.csv\"] }\n");
  EXPECT_NE(e.find("give `paths` (split by ratios) or `splits`, not both"), std::string::npos) << e;
  e = error_of(head +
               "[ingest]\nformat = \"csv\"\npaths = [\"data.csv\"]\n[transform]\n"
               "[[transform.features]]\ninput = \"a\"\nop = \"z_score\"\n[train]\nconfig = "
               "\"model.toml\"\nset = [\"data.source=csv\"]\n");
  EXPECT_NE(e.find("[data] and [output] are generated by the pipeline"), std::string::npos) << e;
  e = error_of(head + "name = [\n");
  EXPECT_NE(e.find("p.toml:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("TOML syntax error"), std::string::npos) << e;
  e = error_of(head);
  EXPECT_NE(e.find("no component"), std::string::npos) << e;
  try {
    load_pipeline((dir_ / "missing.toml").string());
    FAIL();
  } catch (const config::ConfigError& err) {
    EXPECT_EQ(err.code(), ErrorCode::kNotFound);
  }
}

}  // namespace
}  // namespace tern::pipeline
