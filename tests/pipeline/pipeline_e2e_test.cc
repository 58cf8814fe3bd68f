// `tern pipeline` end to end, through the built `tern` binary on real data:
//   - UCI Automobile (Debian's python3-statsmodels CSV): a weak model pushed as version 1, a
//     better one pushed as version 2 while `tern serve` runs (the server picks it up), raw
//     CSV-style JSON rows over REST equal to the transformed eval data through the trained model
//     (the skew check, 1e-5), a second run cached everywhere, a worse model not pushed (the
//     serving version unchanged), a transform change rerunning transform / train / evaluate /
//     push only, and lineage of the pushed version checked against the store;
//   - injected faults (a dropped column, a new category, values out of range, a shifted eval
//     split) each stopping the pipeline before training with the right anomaly; clean data passes;
//   - Fashion-MNIST (a subset of Debian's IDX files) to a pushed model served over REST;
//   - kill -9 during training: the store stays consistent, the next run reuses the finished
//     components and reruns the killed one;
//   - --only, step by step as an orchestrator would; bad pipeline files exiting 2 (file:line: key).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "tern/config/builders.h"
#include "tern/config/config.h"
#include "tern/data/example_proto.h"
#include "tern/data/idx_dataset.h"
#include "tern/data/tfrecord_reader.h"
#include "tern/pipeline/metadata_store.h"
#include "tern/pipeline/push.h"
#include "tern/serve/model_dir.h"
#include "tests/serve/serve_process.h"
#include "tests/support/child_process.h"
#include "tests/support/idx_writer.h"
#include "tests/support/loopback_http.h"

namespace tern::pipeline {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::tern::serve_tests::TernServe;
using ::tern::testing::http_request;
using ::tern::testing::read_log;
using ::tern::testing::spawn_logged;
using ::tern::testing::wait_bounded;

constexpr const char* kAutosCsv =
    "/usr/lib/python3/dist-packages/statsmodels/gam/tests/results/autos.csv";
constexpr const char* kFashion = "/usr/share/datasets/fashion-mnist";

std::string source(const std::string& rel) {
  return std::string(TERN_SOURCE_DIR) + "/" + rel;
}

// The autos pipeline of examples/ with its pinned schema, parameterized.
struct AutosOptions {
  std::string ingest;  // the [ingest] body; default: the CSV split by hash
  std::string train = "epochs = 60";
  std::string evaluate = "thresholds = { accuracy = 0.75 }\nmax_regression = 0.02";
  std::string make_top_k = "0";
  bool compare_previous = true;
};

std::string autos_pipeline(const AutosOptions& o) {
  std::ostringstream s;
  s << "[pipeline]\nname = \"autos\"\n\n[ingest]\n"
    << (o.ingest.empty() ? str_cat("format = \"csv\"\npaths = [\"", kAutosCsv,
                                   "\"]\ncolumns = { symbol = \"categorical\" }\n")
                         : o.ingest)
    << "\n[statistics]\n\n[schema]\npath = \"" << source("examples/autos_schema.toml")
    << "\"\n\n[validate]\ncompare_previous = " << (o.compare_previous ? "true" : "false")
    << "\n\n[transform]\nlabel = \"drive\"\n";
  for (const char* f : {"make", "fuel", "aspir", "doors", "style", "eng_loc", "eng_type",
                        "cylinders", "fuel.sys", "symbol"}) {
    s << "[[transform.features]]\ninput = \"" << f << "\"\nop = \"vocabulary\"\n";
    if (std::string(f) == "make") s << "top_k = " << o.make_top_k << "\n";
  }
  for (const char* f : {"loss", "wb", "length", "width", "height", "weight", "eng_cc", "bore",
                        "stroke", "comp.ratio", "hp", "rpm", "city_mpg", "hw_mpg", "price"})
    s << "[[transform.features]]\ninput = \"" << f << "\"\nop = \"z_score\"\n";
  s << "\n[train]\nconfig = \"" << source("examples/autos_model.toml") << "\"\n"
    << o.train << "\n\n[evaluate]\nslice_by = [\"label\", \"fuel\"]\n"
    << o.evaluate << "\n\n[push]\n";
  return s.str();
}

// The CSV's rows (header first), split on commas outside quotes.
std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted)
        cells.emplace_back();
      else
        cells.back() += c;
    }
    rows.push_back(cells);
  }
  return rows;
}

void write_csv(const std::string& path, const std::vector<std::vector<std::string>>& rows) {
  std::ofstream out(path);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) out << (i ? "," : "") << r[i];
    out << "\n";
  }
}

size_t column(const std::vector<std::vector<std::string>>& rows, const std::string& name) {
  auto it = std::find(rows[0].begin(), rows[0].end(), "\"" + name + "\"");
  if (it == rows[0].end()) it = std::find(rows[0].begin(), rows[0].end(), name);
  return static_cast<size_t>(it - rows[0].begin());
}

std::vector<data::Example> read_examples(const std::string& dir) {
  std::vector<data::Example> out;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    data::TFRecordReader r(f);
    while (auto rec = r.read()) out.push_back(data::parse_example_proto(*rec));
  }
  return out;
}

class PipelineE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kAutosCsv)) GTEST_SKIP() << kAutosCsv << " missing (python3-statsmodels)";
    dir_ = ::testing::TempDir() + "/tern_pipeline_e2e_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string write(const std::string& name, const std::string& text) {
    const std::string p = dir_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  // Runs the built tern (bounded); its exit status, the output in out_.
  int tern(std::vector<std::string> args, int limit_s = 300) {
    args.insert(args.begin(), TERN_TOOL_PATH);
    const std::string log = dir_ + "/log.txt";
    fs::remove(log);
    pid_t pid = spawn_logged(args, {}, log);
    int rc = wait_bounded(pid, std::chrono::seconds(limit_s));
    out_ = read_log(log);
    return rc;
  }
  // "cached" or "ran" for each component's progress line of the last run.
  std::map<std::string, std::string> states() const {
    std::map<std::string, std::string> s;
    std::istringstream in(out_);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] != '[') continue;
      const size_t a = line.find("] "), b = line.find(" ... ");
      if (a == std::string::npos || b == std::string::npos) continue;
      const std::string c = line.substr(a + 2, b - a - 2);
      s[c] = line.compare(b + 5, 6, "cached") == 0 ? "cached" : "ran";
    }
    return s;
  }
  std::string dir_;
  std::string out_;
};

// The versions GET /v1/models/NAME reports AVAILABLE.
std::vector<std::string> available_versions(int port) {
  auto r = http_request(port, "GET", "/v1/models/autos");
  std::vector<std::string> out;
  if (r.status != 200) return out;
  const json doc = json::parse(r.body);
  for (const json& v : doc["model_version_status"]) {
    if (v["state"] == "AVAILABLE") out.push_back(v["version"].get<std::string>());
  }
  return out;
}

// Polls until `version` is AVAILABLE (bounded: 30 s).
bool wait_for_version(int port, const std::string& version) {
  for (int i = 0; i < 300; ++i) {
    std::vector<std::string> v = available_versions(port);
    if (std::find(v.begin(), v.end(), version) != v.end()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// --- UCI Automobile: serve, skew, caching, blessing, lineage ---

TEST_F(PipelineE2E, AutosServedSkewFreeCachedBlessedAndTraced) {
  const std::string root = dir_ + "/root";
  const std::string base = root + "/serving/autos";
  AutosOptions weak;
  weak.train = "epochs = 1\nsteps_per_epoch = 1\nlearning_rate = 0.0001";
  weak.evaluate = "max_regression = 0.02";  // no threshold: the first model is pushed
  const std::string weak_file = write("weak.toml", autos_pipeline(weak));
  const std::string good_file = write("good.toml", autos_pipeline({}));

  ASSERT_EQ(tern({"pipeline", "run", weak_file, "--out", root}), 0) << out_;
  EXPECT_NE(out_.find("pushed version 1 to"), std::string::npos) << out_;
  EXPECT_EQ(served_versions(base), std::vector<int64_t>{1});

  TernServe server(
      {"--model_name", "autos", "--model_base_path", base, "--file_system_poll_wait_seconds", "1"},
      dir_ + "/serve.log");
  ASSERT_TRUE(server.ready()) << server.log();
  EXPECT_EQ(available_versions(server.port()), std::vector<std::string>{"1"});

  // A better model: ingest .. transform cached, pushed as version 2 while the server runs.
  ASSERT_EQ(tern({"pipeline", "run", good_file, "--out", root}), 0) << out_;
  std::map<std::string, std::string> s = states();
  for (const char* c : {"ingest", "statistics", "schema", "validate", "transform"})
    EXPECT_EQ(s[c], "cached") << c << "\n" << out_;
  for (const char* c : {"train", "evaluate", "push"}) EXPECT_EQ(s[c], "ran") << c << "\n" << out_;
  EXPECT_NE(out_.find("(served version 1: "), std::string::npos) << out_;
  EXPECT_NE(out_.find("pushed version 2 to"), std::string::npos) << out_;
  ASSERT_TRUE(wait_for_version(server.port(), "2")) << server.log();

  // The skew check: raw eval rows as JSON (strings and numbers, missing cells left out or null)
  // through the served version 2 == the transformed eval data through the trained model.
  MetadataStore store(root + "/metadata.sqlite", false);
  std::vector<Artifact> pushed = store.artifacts_with_property("PushedModel", "version", "2");
  ASSERT_EQ(pushed.size(), 1u);
  auto push_inputs = store.events_of_execution(store.producer(pushed[0].id)->id, EventType::kInput);
  Artifact model, candidate;
  for (auto& [e, a] : push_inputs) {
    if (e.role == "model") model = a;
    if (e.role == "candidate") candidate = a;
  }
  ASSERT_GT(model.id, 0);
  EXPECT_EQ(pushed[0].content_hash, candidate.content_hash);  // the evaluated candidate, copied
  auto ingest = store.executions("ingest", {ExecutionState::kComplete});
  ASSERT_EQ(ingest.size(), 1u);
  std::string raw_eval, transformed_eval;
  for (auto& [e, a] : store.events_of_execution(ingest[0].id, EventType::kOutput))
    if (e.role == "examples:eval") raw_eval = a.uri;
  auto transform = store.executions("transform", {ExecutionState::kComplete});
  for (auto& [e, a] : store.events_of_execution(transform.back().id, EventType::kOutput))
    if (e.role == "transformed:eval") transformed_eval = a.uri;
  std::vector<data::Example> raw = read_examples(raw_eval);
  std::vector<data::Example> xs = read_examples(transformed_eval);
  ASSERT_EQ(raw.size(), xs.size());
  ASSERT_GE(raw.size(), 20u);
  json instances = json::array();
  bool sent_null = false;
  for (const data::Example& ex : raw) {
    json row = json::object();
    for (const auto& [name, f] : ex.features) {
      if (name == "drive") continue;  // the label
      if (f.kind == data::FeatureKind::kBytes) row[name] = f.bytes_list[0];
      if (f.kind == data::FeatureKind::kInt64) row[name] = f.int64_list[0];
      if (f.kind == data::FeatureKind::kFloat) row[name] = f.float_list[0];
    }
    if (!row.contains("loss") && !sent_null) {  // a missing cell, sent as null once
      row["loss"] = nullptr;
      sent_null = true;
    }
    instances.push_back(row);
  }
  EXPECT_TRUE(sent_null);
  auto r = http_request(server.port(), "POST", "/v1/models/autos:predict",
                        json{{"instances", instances}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json predictions = json::parse(r.body)["predictions"];
  ASSERT_EQ(predictions.size(), raw.size());
  config::TrainConfig cfg = config::load_config(model.uri + "/config.toml");
  const int64_t d = static_cast<int64_t>(xs[0].features.at("x").float_list.size());
  std::shared_ptr<nn::Model> m = config::make_model(cfg, Shape{d});
  m->load_weights(model.uri + "/weights.safetensors");
  Tensor x(DType::kF32, Shape{static_cast<int64_t>(xs.size()), d});
  for (size_t i = 0; i < xs.size(); ++i) {
    const auto& v = xs[i].features.at("x").float_list;
    std::copy(v.begin(), v.end(), x.data<float>() + static_cast<int64_t>(i) * d);
  }
  Tensor logits = m->predict(x, 64);
  double worst = 0;
  int correct = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    const json& p = predictions[i]["logits"];
    ASSERT_EQ(p.size(), 3u);
    for (int64_t c = 0; c < 3; ++c)
      worst = std::max(worst, std::abs(p[static_cast<size_t>(c)].get<double>() -
                                       logits.data<float>()[static_cast<int64_t>(i) * 3 + c]));
    correct += predictions[i]["classes"].get<int64_t>() == xs[i].features.at("label").int64_list[0];
  }
  EXPECT_LE(worst, 1e-5);
  EXPECT_GT(correct, static_cast<int>(raw.size() * 0.75)) << "majority class: 59%";

  // Nothing changed: every component cached.
  ASSERT_EQ(tern({"pipeline", "run", good_file, "--out", root}), 0) << out_;
  s = states();
  EXPECT_EQ(s.size(), 8u) << out_;
  for (const auto& [c, state] : s) EXPECT_EQ(state, "cached") << c << "\n" << out_;
  EXPECT_NE(out_.find("8 components, 8 cached"), std::string::npos) << out_;

  // The weak model again: its training is cached, but against served version 2 it regresses.
  ASSERT_EQ(tern({"pipeline", "run", weak_file, "--out", root}), 0) << out_;
  s = states();
  EXPECT_EQ(s["train"], "cached") << out_;
  EXPECT_EQ(s["evaluate"], "ran") << out_;
  EXPECT_NE(out_.find("not pushed: the model is not blessed"), std::string::npos) << out_;
  EXPECT_NE(out_.find("a drop beyond the allowed 0.0200"), std::string::npos) << out_;
  EXPECT_NE(out_.find("serving version 2 under"), std::string::npos) << out_;
  EXPECT_EQ(served_versions(base), (std::vector<int64_t>{1, 2}));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a poll of the server
  EXPECT_EQ(available_versions(server.port()), std::vector<std::string>{"2"});

  // The transform changed: transform, train, evaluate, push rerun; the data side is cached.
  AutosOptions changed;
  changed.make_top_k = "8";
  ASSERT_EQ(
      tern({"pipeline", "run", write("changed.toml", autos_pipeline(changed)), "--out", root}), 0)
      << out_;
  s = states();
  for (const char* c : {"ingest", "statistics", "schema", "validate"})
    EXPECT_EQ(s[c], "cached") << c << "\n" << out_;
  for (const char* c : {"transform", "train", "evaluate", "push"})
    EXPECT_EQ(s[c], "ran") << c << "\n" << out_;
  EXPECT_EQ(server.stop(), 0);

  // Lineage of serving version 2, against the store.
  ASSERT_EQ(tern({"pipeline", "lineage", root, "serving:2", "--json"}), 0) << out_;
  json lin = json::parse(out_);
  EXPECT_EQ(lin["artifact"]["id"], pushed[0].id);
  EXPECT_EQ(lin["artifact"]["properties"]["version"], "2");
  const json& summary = lin["summary"];
  EXPECT_EQ(summary["Model"], json::array({model.id}));
  EXPECT_EQ(summary["ExternalFile"].size(), 1u);
  std::optional<Artifact> raw_file = store.artifact(summary["ExternalFile"][0].get<int64_t>());
  EXPECT_EQ(raw_file->uri, kAutosCsv);
  std::optional<Artifact> cfg_file = store.artifact(summary["TrainingConfig"][0].get<int64_t>());
  EXPECT_EQ(cfg_file->uri, source("examples/autos_model.toml"));
  EXPECT_EQ(summary["Examples"].size(), 2u);
  for (const char* t : {"Schema", "ExampleStatistics", "TransformGraph", "ModelEvaluation",
                        "ModelBlessing", "ExampleAnomalies"})
    EXPECT_EQ(summary[t].size(), 1u) << t;
  std::optional<Artifact> blessing = store.artifact(summary["ModelBlessing"][0].get<int64_t>());
  EXPECT_EQ(blessing->property("blessed"), "1");
  std::optional<Artifact> evaluation = store.artifact(summary["ModelEvaluation"][0].get<int64_t>());
  EXPECT_EQ(evaluation->property("baseline_version"), "1");
  // The model's producer is the train execution of the second run, its transform the one it read.
  const json& push_exec = lin["produced_by"];
  EXPECT_EQ(push_exec["execution"]["component"], "push");
  ASSERT_EQ(tern({"pipeline", "lineage", root, "serving:2"}), 0) << out_;
  EXPECT_NE(out_.find("raw input         #" + std::to_string(raw_file->id) + "  " + kAutosCsv),
            std::string::npos)
      << out_;
  EXPECT_NE(out_.find("model             #" + std::to_string(model.id)), std::string::npos) << out_;
  EXPECT_EQ(tern({"pipeline", "lineage", root, "serving:9"}), 1);
  EXPECT_NE(out_.find("no pushed version 9"), std::string::npos) << out_;
  EXPECT_EQ(tern({"pipeline", "lineage", root, "serving:x"}), 2) << out_;
}

// --- injected faults ---

TEST_F(PipelineE2E, InjectedFaultsStopBeforeTrainingCleanDataPasses) {
  const auto rows = read_csv(kAutosCsv);
  ASSERT_EQ(rows.size(), 206u);
  // Every 5th car in eval (41 rows), the rest in train: splits we can fault one by one.
  auto split = [&](const std::vector<std::vector<std::string>>& all, const std::string& name,
                   const std::function<bool(size_t)>& in_eval) {
    std::vector<std::vector<std::string>> train = {all[0]}, eval = {all[0]};
    for (size_t i = 1; i < all.size(); ++i) (in_eval(i) ? eval : train).push_back(all[i]);
    write_csv(dir_ + "/" + name + "_train.csv", train);
    write_csv(dir_ + "/" + name + "_eval.csv", eval);
    AutosOptions o;
    o.compare_previous = false;
    o.train = "epochs = 20";
    o.ingest = str_cat("format = \"csv\"\ncolumns = { symbol = \"categorical\" }\n",
                       "splits = { train = [\"", dir_, "/", name, "_train.csv\"], eval = [\"", dir_,
                       "/", name, "_eval.csv\"] }\n");
    return write(name + ".toml", autos_pipeline(o));
  };
  auto every_fifth = [](size_t i) { return i % 5 == 0; };
  auto run = [&](const std::string& file, const std::string& name) {
    return tern({"pipeline", "run", file, "--out", dir_ + "/root_" + name});
  };
  auto trained = [&](const std::string& name) {
    MetadataStore s(dir_ + "/root_" + name + "/metadata.sqlite", false);
    return !s.executions("train").empty();
  };

  EXPECT_EQ(run(split(rows, "clean", every_fifth), "clean"), 0) << out_;
  EXPECT_NE(out_.find("validate ... no anomalies"), std::string::npos) << out_;
  EXPECT_TRUE(trained("clean"));

  // A dropped column.
  auto dropped = rows;
  const size_t fuel = column(rows, "fuel");
  for (auto& r : dropped) r.erase(r.begin() + static_cast<std::ptrdiff_t>(fuel));
  EXPECT_EQ(run(split(dropped, "dropped", every_fifth), "dropped"), 1) << out_;
  EXPECT_NE(out_.find("the pipeline stopped before transform and training"), std::string::npos)
      << out_;
  EXPECT_NE(out_.find("missing_feature (train): feature 'fuel'"), std::string::npos) << out_;
  EXPECT_FALSE(trained("dropped"));

  // A new category in eval.
  auto tesla = rows;
  const size_t make = column(rows, "make");
  for (size_t i = 5; i < tesla.size(); i += 25) tesla[i][make] = "\"tesla\"";
  EXPECT_EQ(run(split(tesla, "new_category", every_fifth), "new_category"), 1) << out_;
  EXPECT_NE(out_.find("out_of_domain (eval): feature 'make'"), std::string::npos) << out_;
  EXPECT_NE(out_.find("'tesla'"), std::string::npos) << out_;
  EXPECT_FALSE(trained("new_category"));

  // Values out of range in eval.
  auto heavy = rows;
  const size_t weight = column(rows, "weight");
  heavy[10][weight] = "99999";
  heavy[20][weight] = "99999";
  EXPECT_EQ(run(split(heavy, "out_of_range", every_fifth), "out_of_range"), 1) << out_;
  EXPECT_NE(out_.find("out_of_range (eval): feature 'weight'"), std::string::npos) << out_;
  EXPECT_NE(out_.find("99999"), std::string::npos) << out_;
  EXPECT_FALSE(trained("out_of_range"));

  // A shifted eval distribution: the 40 heaviest cars in eval, every value within the schema.
  std::vector<std::pair<int, size_t>> by_weight;
  for (size_t i = 1; i < rows.size(); ++i) by_weight.emplace_back(std::stoi(rows[i][weight]), i);
  std::sort(by_weight.rbegin(), by_weight.rend());
  std::set<size_t> heaviest;
  for (size_t k = 0; k < 40; ++k) heaviest.insert(by_weight[k].second);
  EXPECT_EQ(run(split(rows, "shifted", [&](size_t i) { return heaviest.count(i) > 0; }), "shifted"),
            1)
      << out_;
  EXPECT_NE(out_.find("skew (train vs eval): feature 'weight'"), std::string::npos) << out_;
  EXPECT_EQ(out_.find("out_of_range"), std::string::npos) << out_;
  EXPECT_FALSE(trained("shifted"));
}

// --- Fashion-MNIST ---

TEST_F(PipelineE2E, FashionMnistSubsetToAServedModel) {
  if (!fs::exists(std::string(kFashion) + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist missing";
  // The first 3000 training and 600 test images of Debian's files, as IDX files of their own.
  auto subset = [&](const std::string& stem, int64_t n, const std::string& out) {
    Tensor images = data::read_idx(std::string(kFashion) + "/" + stem + "-images-idx3-ubyte.gz");
    Tensor labels = data::read_idx(std::string(kFashion) + "/" + stem + "-labels-idx1-ubyte.gz");
    ::tern::testing::write_idx_u8(
        dir_ + "/" + out + "-images.idx", {static_cast<uint32_t>(n), 28, 28},
        std::string_view(reinterpret_cast<const char*>(images.data<uint8_t>()),
                         static_cast<size_t>(n * 784)));
    ::tern::testing::write_idx_u8(
        dir_ + "/" + out + "-labels.idx", {static_cast<uint32_t>(n)},
        std::string_view(reinterpret_cast<const char*>(labels.data<uint8_t>()),
                         static_cast<size_t>(n)));
  };
  subset("train", 3000, "train");
  subset("t10k", 600, "eval");
  write("model.toml",
        "[model]\nname = \"mlp\"\n[model.args]\nunits = [64]\n[optimizer]\nname = \"adam\"\n"
        "learning_rate = 0.003\n[training]\nepochs = 3\nbatch_size = 64\nseed = 7\n");
  const std::string file = write(
      "fmnist.toml",
      str_cat("[pipeline]\nname = \"fmnist\"\nmodel_name = \"fashion\"\n[ingest]\nformat = "
              "\"idx\"\n[ingest.splits]\ntrain = [\"",
              dir_, "/train-images.idx\", \"", dir_, "/train-labels.idx\"]\neval = [\"", dir_,
              "/eval-images.idx\", \"", dir_,
              "/eval-labels.idx\"]\n[statistics]\n[schema]\n[validate]\n[transform]\nlabel = "
              "\"image/class/label\"\n[[transform.features]]\ninput = \"image/encoded\"\nop = "
              "\"scale_to_0_1\"\nshape = [28, 28, 1]\n[train]\nconfig = \"model.toml\"\n"
              "[evaluate]\nmetrics = [\"accuracy\", \"loss\", \"per_class\"]\nslice_by = "
              "[\"label\"]\nthresholds = { accuracy = 0.7 }\n[push]\n"));
  const std::string root = dir_ + "/root";
  ASSERT_EQ(tern({"pipeline", "run", file, "--out", root}), 0) << out_;
  EXPECT_NE(out_.find("train 3000 records, eval 600 records"), std::string::npos) << out_;
  EXPECT_NE(out_.find("x [28,28,1]"), std::string::npos) << out_;
  EXPECT_NE(out_.find("on 600 raw eval examples; blessed"), std::string::npos) << out_;
  const std::string base = root + "/serving/fashion";
  ASSERT_EQ(served_versions(base), std::vector<int64_t>{1});
  const std::string md =
      read_log(root + "/artifacts/evaluate/7/evaluation/evaluation.md");  // the 7th execution
  EXPECT_NE(md.find("**Blessed**"), std::string::npos) << md;
  EXPECT_NE(md.find("## Sliced by `label`"), std::string::npos) << md;
  EXPECT_NE(md.find("## Per class"), std::string::npos) << md;

  TernServe server({"--model_name", "fashion", "--model_base_path", base}, dir_ + "/serve.log");
  ASSERT_TRUE(server.ready()) << server.log();
  // 50 eval images as raw u8 pixels [28, 28, 1] over REST, against the version loaded in-process.
  Tensor images = data::read_idx(dir_ + "/eval-images.idx");
  Tensor labels = data::read_idx(dir_ + "/eval-labels.idx");
  const int64_t n = 50;
  json instances = json::array();
  Tensor batch(DType::kU8, Shape{n, 28, 28, 1});
  std::memcpy(batch.data<uint8_t>(), images.data<uint8_t>(), static_cast<size_t>(n * 784));
  for (int64_t i = 0; i < n; ++i) {
    json img = json::array();
    for (int64_t y = 0; y < 28; ++y) {
      json rowj = json::array();
      for (int64_t x = 0; x < 28; ++x)
        rowj.push_back(json::array({images.data<uint8_t>()[i * 784 + y * 28 + x]}));
      img.push_back(rowj);
    }
    instances.push_back({{"image/encoded", img}});
  }
  auto r = http_request(server.port(), "POST", "/v1/models/fashion:predict",
                        json{{"instances", instances}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json predictions = json::parse(r.body)["predictions"];
  ASSERT_EQ(predictions.size(), static_cast<size_t>(n));
  serve::ServablePtr local = serve::load_servable(base + "/1");
  serve::TensorMap in;
  in["image/encoded"] = serve::TensorValue::from_tensor(batch);
  serve::TensorMap outputs = local->run(serve::kDefaultSignature, in);
  const Tensor& logits = outputs.at("logits").numbers;
  int correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < 10; ++c)
      EXPECT_NEAR(
          predictions[static_cast<size_t>(i)]["logits"][static_cast<size_t>(c)].get<double>(),
          logits.data<float>()[i * 10 + c], 1e-5);
    correct +=
        predictions[static_cast<size_t>(i)]["classes"].get<int64_t>() == labels.data<uint8_t>()[i];
  }
  EXPECT_GE(correct, 30) << "of 50 (chance: 5)";
  EXPECT_EQ(server.stop(), 0);
}

// --- kill -9 during training ---

TEST_F(PipelineE2E, KilledDuringTrainingTheNextRunContinues) {
  AutosOptions o;
  o.train = "epochs = 1500";  // seconds of training: still running when killed 300 ms in
  o.evaluate = "";
  const std::string file = write("p.toml", autos_pipeline(o));
  const std::string root = dir_ + "/root";
  const std::string log = dir_ + "/killed.log";
  pid_t pid = spawn_logged({TERN_TOOL_PATH, "pipeline", "run", file, "--out", root}, {}, log);
  ASSERT_GT(pid, 0);
  bool training = false;
  for (int i = 0; i < 600 && !training; ++i) {
    training = read_log(log).find("[6/8] train ... ") != std::string::npos;
    if (!training) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(training) << read_log(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGKILL);
  EXPECT_EQ(wait_bounded(pid, std::chrono::seconds(30)), 128 + SIGKILL) << read_log(log);
  int64_t killed = 0;
  {
    MetadataStore s(root + "/metadata.sqlite", false);
    EXPECT_EQ(s.query("PRAGMA integrity_check")[0][0], "ok");
    EXPECT_TRUE(s.query("PRAGMA foreign_key_check").empty());
    auto running = s.executions("", {ExecutionState::kRunning});
    ASSERT_EQ(running.size(), 1u);
    EXPECT_EQ(running[0].component, "train");
    killed = running[0].id;
    EXPECT_EQ(s.executions("", {ExecutionState::kComplete}).size(), 5u);
    EXPECT_TRUE(s.executions("evaluate").empty());
  }
  ASSERT_EQ(tern({"pipeline", "run", file, "--out", root}), 0) << out_;
  EXPECT_NE(out_.find(str_cat("execution ", killed, " (train) of an earlier run never finished")),
            std::string::npos)
      << out_;
  std::map<std::string, std::string> s = states();
  for (const char* c : {"ingest", "statistics", "schema", "validate", "transform"})
    EXPECT_EQ(s[c], "cached") << c << "\n" << out_;
  for (const char* c : {"train", "evaluate", "push"}) EXPECT_EQ(s[c], "ran") << c << "\n" << out_;
  MetadataStore store(root + "/metadata.sqlite", false);
  EXPECT_EQ(store.execution(killed)->state, ExecutionState::kAbandoned);
  EXPECT_FALSE(fs::exists(root + "/artifacts/train/" + std::to_string(killed)));
  EXPECT_EQ(served_versions(root + "/serving/autos"), std::vector<int64_t>{1});
}

// --- --only, as an orchestrator runs the steps ---

TEST_F(PipelineE2E, OnlyRunsOneStepOnTheStoresLatestOutputs) {
  AutosOptions o;
  o.train = "epochs = 20";
  o.evaluate = "";
  const std::string file = write("p.toml", autos_pipeline(o));
  const std::string root = dir_ + "/root";
  EXPECT_EQ(tern({"pipeline", "run", file, "--out", root, "--only", "train"}), 1) << out_;
  EXPECT_NE(out_.find("no successful 'transform' execution"), std::string::npos) << out_;
  for (const char* c :
       {"ingest", "statistics", "schema", "validate", "transform", "train", "evaluate", "push"}) {
    ASSERT_EQ(tern({"pipeline", "run", file, "--out", root, "--only", c}), 0) << c << "\n" << out_;
    EXPECT_EQ(states().size(), 1u) << out_;
  }
  EXPECT_EQ(served_versions(root + "/serving/autos"), std::vector<int64_t>{1});
  ASSERT_EQ(tern({"pipeline", "run", file, "--out", root}), 0) << out_;
  EXPECT_NE(out_.find("8 components, 8 cached"), std::string::npos) << out_;
  EXPECT_EQ(tern({"pipeline", "run", file, "--out", root, "--only", "evaluat"}), 2) << out_;
  EXPECT_NE(out_.find("--only evaluat: not a component"), std::string::npos) << out_;
}

// --- bad pipeline files ---

TEST_F(PipelineE2E, BadPipelineFilesExitTwoNamingFileLineAndKey) {
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {"[pipeline]\nname = \"p\"\n[ingest]\nformat = \"csv\"\npaths = [\"" +
           std::string(kAutosCsv) + "\"]\nsplit_kee = \"make\"\n",
       "bad.toml:6: unknown key 'ingest.split_kee' (did you mean 'ingest.split_key'?)"},
      {"[pipeline]\nname = \"p\"\n[ingest]\nformat = \"csv\"\npaths = [\"" +
           std::string(kAutosCsv) + "\"]\nshards = \"two\"\n",
       "bad.toml:6: key 'ingest.shards' must be an integer"},
      {"[pipeline]\nname = \"p\"\n[ingest]\nformat = \"csv\"\npaths = [\"no_such.csv\"]\n",
       "bad.toml:5: key 'ingest.paths': '"},
      {"[pipeline]\nname = \"p\"\n[ingest]\nformat = \"csv\"\npaths = [\"" +
           std::string(kAutosCsv) +
           "\"]\n[transform]\nlabel = \"drive\"\n[[transform.features]]\ninput = \"make\"\n"
           "op = \"vocabulary\"\ntop_kk = 3\n[train]\nconfig = \"nowhere.toml\"\n",
       "bad.toml:11:"},
      {"[pipeline]\nname = \"p\"\n[evaluate]\nthresholds = { accuracy = \"high\" }\n",
       "bad.toml:4: key 'evaluate.thresholds.accuracy' must be a number"},
  };
  for (const Case& c : cases) {
    const std::string file = write("bad.toml", c.text);
    EXPECT_EQ(tern({"pipeline", "run", file, "--out", dir_ + "/root"}), 2) << c.text << out_;
    EXPECT_NE(out_.find(c.expect), std::string::npos) << c.text << "\n" << out_;
    EXPECT_FALSE(fs::exists(dir_ + "/root/metadata.sqlite")) << "nothing ran";
  }
  EXPECT_EQ(tern({"pipeline", "run", dir_ + "/missing.toml"}), 2) << out_;
  EXPECT_EQ(tern({"pipeline", "lineage", dir_ + "/nothing_here", "serving:1"}), 1) << out_;
  EXPECT_NE(out_.find("no metadata store"), std::string::npos) << out_;
}

}  // namespace
}  // namespace tern::pipeline
