// The runner with small test components (files in, files out) standing in for the real ones:
// the store records, the cache (hits, misses by input / settings / missing outputs, --no-cache),
// --only from the store, a stop after validation, failures, abandoned executions of a killed run
// and the root's lock. The real components are tested end to end in tests/pipeline/.
#include "tern/pipeline/runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tern/base/error.h"
#include "tern/io/atomic_file.h"

namespace tern::pipeline {
namespace {

namespace fs = std::filesystem;

std::map<std::string, int>& runs() {
  static std::map<std::string, int> r;
  return r;
}

// ingest: the external file "input.txt" -> examples:train / examples:eval (its text + suffix).
class TestIngest : public Component {
 public:
  explicit TestIngest(std::string input) : input_(std::move(input)) {}
  std::string name() const override { return "ingest"; }
  std::vector<UpstreamRoles> upstream(const PipelineSpec&) const override { return {}; }
  void add_inputs(const PipelineSpec&, MetadataStore&, Artifacts& in) const override {
    in["input:0"] = external_artifact(input_);
  }
  ComponentOutput run(ComponentRun& r) const override {
    ++runs()["ingest"];
    const std::string text = io::read_file(r.inputs.at("input:0").uri);
    ComponentOutput out;
    for (const char* split : {"train", "eval"}) {
      fs::create_directories(r.dir + "/" + split);
      io::write_file_atomically(r.dir + "/" + split + "/data", text + "-" + split);
      Artifact a;
      a.type = "Examples";
      a.uri = r.dir + "/" + split;
      a.properties = {{"split", split}};
      out.outputs.push_back({std::string("examples:") + split, a});
    }
    out.summary = "2 splits";
    return out;
  }
  std::string summarize(const Artifacts& o) const override { return str_cat(o.size(), " splits"); }

 private:
  std::string input_;
};

// statistics: examples -> one file with both splits' text (and top_k from the settings).
class TestStatistics : public Component {
 public:
  std::string name() const override { return "statistics"; }
  std::vector<UpstreamRoles> upstream(const PipelineSpec&) const override {
    return {{"ingest", {"examples:"}}};
  }
  ComponentOutput run(ComponentRun& r) const override {
    ++runs()["statistics"];
    if (fail_) throw_error(ErrorCode::kDataLoss, "statistics: record 3 is corrupt");
    std::string text = str_cat("top_k=", r.spec.statistics->top_k, ";");
    for (const auto& [role, a] : r.inputs)
      text += role + ":" + io::read_file(a.uri + "/data") + ";";
    io::write_file_atomically(r.dir + "/stats.txt", text);
    Artifact a;
    a.type = "ExampleStatistics";
    a.uri = r.dir + "/stats.txt";
    return {{{"statistics", a}}, "stats written"};
  }
  std::string summarize(const Artifacts&) const override { return "stats written"; }
  static inline bool fail_ = false;
};

// validate: stops the pipeline when the statistics hold "bad".
class TestValidate : public Component {
 public:
  std::string name() const override { return "validate"; }
  std::vector<UpstreamRoles> upstream(const PipelineSpec&) const override {
    return {{"statistics", {"statistics"}}};
  }
  ComponentOutput run(ComponentRun& r) const override {
    ++runs()["validate"];
    const std::string stats = io::read_file(r.inputs.at("statistics").uri);
    io::write_file_atomically(r.dir + "/anomalies.txt",
                              stats.find("bad") != std::string::npos ? "feature x: bad value" : "");
    Artifact a;
    a.type = "ExampleAnomalies";
    a.uri = r.dir;
    return {{{"anomalies", a}}, "checked"};
  }
  std::string summarize(const Artifacts&) const override { return "checked"; }
  std::vector<std::string> stop_reasons(const Artifacts& o) const override {
    const std::string text = io::read_file(o.at("anomalies").uri + "/anomalies.txt");
    if (text.empty()) return {};
    return {text};
  }
};

// transform: runs after validation (to see that a stop skips it).
class TestTransform : public Component {
 public:
  std::string name() const override { return "transform"; }
  std::vector<UpstreamRoles> upstream(const PipelineSpec&) const override {
    return {{"ingest", {"examples:train"}}, {"validate", {"anomalies"}}};
  }
  ComponentOutput run(ComponentRun& r) const override {
    ++runs()["transform"];
    io::write_file_atomically(r.dir + "/t", "t");
    Artifact a;
    a.type = "TransformGraph";
    a.uri = r.dir;
    return {{{"transform", a}}, "transformed"};
  }
  std::string summarize(const Artifacts&) const override { return "transformed"; }
};

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tern_runner_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    input_ = (dir_ / "input.txt").string();
    io::write_file_atomically(input_, "rows");
    spec_.path = (dir_ / "p.toml").string();
    spec_.name = "p";
    spec_.root = (dir_ / "root").string();
    spec_.serving_base_path = spec_.root + "/serving/p";
    spec_.model_name = "p";
    spec_.ingest = IngestSettings{};
    spec_.statistics = StatisticsSettings{};
    spec_.validate = ValidateSettings{};
    spec_.transform = TransformSettings{"{}"};
    runs().clear();
    TestStatistics::fail_ = false;
  }
  void TearDown() override { fs::remove_all(dir_); }

  RunReport run(RunOptions o = {}) {
    o.progress = &log_;
    o.factory = [this](const std::string& n) -> std::unique_ptr<Component> {
      if (n == "ingest") return std::make_unique<TestIngest>(input_);
      if (n == "statistics") return std::make_unique<TestStatistics>();
      if (n == "validate") return std::make_unique<TestValidate>();
      if (n == "transform") return std::make_unique<TestTransform>();
      throw_error(ErrorCode::kInternal, "no test component ", n);
    };
    return run_pipeline(spec_, o);
  }
  MetadataStore store() { return MetadataStore(spec_.root + "/metadata.sqlite", false); }
  static std::vector<ExecutionState> states(const RunReport& r) {
    std::vector<ExecutionState> s;
    for (const auto& c : r.components) s.push_back(c.state);
    return s;
  }

  fs::path dir_;
  std::string input_;
  PipelineSpec spec_;
  std::ostringstream log_;
};

constexpr auto kComplete = ExecutionState::kComplete;
constexpr auto kCached = ExecutionState::kCached;

TEST_F(RunnerTest, SecondRunIsCachedAndRecorded) {
  RunReport first = run();
  ASSERT_EQ(first.components.size(), 4u);
  EXPECT_EQ(states(first),
            (std::vector<ExecutionState>{kComplete, kComplete, kComplete, kComplete}));
  RunReport second = run();
  EXPECT_EQ(states(second), (std::vector<ExecutionState>{kCached, kCached, kCached, kCached}));
  EXPECT_EQ(runs()["ingest"], 1);
  EXPECT_EQ(runs()["transform"], 1);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(second.components[i].reused_execution_id, first.components[i].execution_id);
    EXPECT_EQ(second.components[i].outputs.begin()->second.id,
              first.components[i].outputs.begin()->second.id);
  }
  EXPECT_NE(log_.str().find("[2/4] statistics ... cached (execution "), std::string::npos)
      << log_.str();
  MetadataStore s = store();
  EXPECT_EQ(s.executions("", {kComplete}).size(), 4u);
  EXPECT_EQ(s.executions("", {kCached}).size(), 4u);
  EXPECT_EQ(s.query("SELECT count(*) FROM contexts WHERE type = 'run'")[0][0], "2");
  // The cached statistics execution read the same artifacts as the first.
  auto in = s.events_of_execution(second.components[1].execution_id, EventType::kInput);
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].second.id, first.components[0].outputs.at("examples:eval").id);
  EXPECT_EQ(s.producer(in[0].second.id)->id, first.components[0].execution_id);
}

TEST_F(RunnerTest, ChangedInputsSettingsOrMissingOutputsRerun) {
  run();
  spec_.statistics->top_k = 7;  // settings of statistics only
  RunReport r = run();
  EXPECT_EQ(states(r), (std::vector<ExecutionState>{kCached, kComplete, kComplete, kCached}));
  // validate reran on new statistics but wrote the same (empty) anomalies: transform is cached.
  EXPECT_EQ(runs()["validate"], 2);
  EXPECT_EQ(runs()["transform"], 1);

  io::write_file_atomically(input_, "other rows");  // the external input's content
  r = run();
  EXPECT_EQ(states(r), (std::vector<ExecutionState>{kComplete, kComplete, kComplete, kComplete}));

  // An output deleted on disk: that component reruns; same bytes again, so the rest is cached.
  fs::remove_all(r.components[0].outputs.at("examples:train").uri);
  r = run();
  EXPECT_EQ(states(r), (std::vector<ExecutionState>{kComplete, kCached, kCached, kCached}));
  RunOptions o;
  o.use_cache = false;
  r = run(o);
  EXPECT_EQ(states(r), (std::vector<ExecutionState>{kComplete, kComplete, kComplete, kComplete}));
}

TEST_F(RunnerTest, OnlyUsesTheLatestUpstreamOutputsInTheStore) {
  RunOptions o;
  o.only = "statistics";
  try {
    run(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(e.message().find("no successful 'ingest' execution"), std::string::npos)
        << e.message();
  }
  o.only = "ingest";
  RunReport in = run(o);
  ASSERT_EQ(in.components.size(), 1u);
  o.only = "statistics";
  RunReport st = run(o);
  ASSERT_EQ(st.components.size(), 1u);
  EXPECT_EQ(st.components[0].state, kComplete);
  MetadataStore s = store();
  auto inputs = s.events_of_execution(st.components[0].execution_id, EventType::kInput);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[1].second.id, in.components[0].outputs.at("examples:train").id);
  // The whole pipeline afterwards reuses both.
  RunReport all = run();
  EXPECT_EQ(states(all), (std::vector<ExecutionState>{kCached, kCached, kComplete, kComplete}));
  o.only = "push";
  EXPECT_THROW(run(o), Error);  // not in the file
  o.only = "nonsense";
  EXPECT_THROW(run(o), Error);
}

TEST_F(RunnerTest, ValidationStopStopsTheRunAndOnlyDownstream) {
  io::write_file_atomically(input_, "bad rows");
  RunReport r = run();
  EXPECT_TRUE(r.stopped_by_anomalies);
  ASSERT_EQ(r.components.size(), 3u);  // transform never started
  EXPECT_EQ(r.anomalies, std::vector<std::string>{"feature x: bad value"});
  EXPECT_EQ(runs()["transform"], 0);
  // Cached validation still stops.
  r = run();
  EXPECT_TRUE(r.stopped_by_anomalies);
  EXPECT_EQ(r.components.back().state, kCached);
  RunOptions o;
  o.only = "transform";
  try {
    run(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("stopped the pipeline"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("feature x: bad value"), std::string::npos) << e.message();
  }
}

TEST_F(RunnerTest, FailureIsRecordedAndItsFolderRemoved) {
  TestStatistics::fail_ = true;
  try {
    run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("record 3 is corrupt"), std::string::npos);
  }
  MetadataStore s = store();
  auto failed = s.executions("statistics", {ExecutionState::kFailed});
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].message, "statistics: record 3 is corrupt");
  EXPECT_FALSE(fs::exists(spec_.root + "/artifacts/statistics/" + std::to_string(failed[0].id)));
  TestStatistics::fail_ = false;
  RunReport r = run();
  EXPECT_EQ(states(r), (std::vector<ExecutionState>{kCached, kComplete, kComplete, kComplete}));
}

TEST_F(RunnerTest, AbandonedExecutionOfAKilledRunIsSettledAndRerun) {
  run();
  int64_t killed = 0;
  {
    // What a run killed inside `statistics` leaves: a RUNNING execution and a partial folder.
    MetadataStore s(spec_.root + "/metadata.sqlite");
    std::vector<RoleArtifact> none;
    killed = s.begin_execution("statistics", "k", "{}", {}, none);
    fs::create_directories(spec_.root + "/artifacts/statistics/" + std::to_string(killed));
    io::write_file_atomically(spec_.root + "/artifacts/statistics/" + std::to_string(killed) + "/x",
                              "partial");
  }
  RunReport r = run();
  ASSERT_EQ(r.abandoned.size(), 1u);
  EXPECT_EQ(r.abandoned[0].id, killed);
  EXPECT_EQ(store().execution(killed)->state, ExecutionState::kAbandoned);
  EXPECT_FALSE(fs::exists(spec_.root + "/artifacts/statistics/" + std::to_string(killed)));
  EXPECT_NE(log_.str().find("marked ABANDONED"), std::string::npos);
}

TEST_F(RunnerTest, OneRunPerRoot) {
  fs::create_directories(spec_.root);
  int fd = ::open((spec_.root + "/.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  try {
    run();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(e.message().find("another `tern pipeline run`"), std::string::npos);
  }
  ::close(fd);
  EXPECT_EQ(run().components.size(), 4u);
}

TEST(CacheKey, DependsOnEveryPart) {
  Artifacts in;
  in["a"].content_hash = "h1";
  const std::string k = cache_key("statistics", R"({"top_k":5})", in);
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, cache_key("statistics", R"({ "top_k" : 5 })", in));  // canonical settings
  EXPECT_NE(k, cache_key("schema", R"({"top_k":5})", in));
  EXPECT_NE(k, cache_key("statistics", R"({"top_k":6})", in));
  Artifacts other = in;
  other["a"].content_hash = "h2";
  EXPECT_NE(k, cache_key("statistics", R"({"top_k":5})", other));
  other = in;
  other["b"].content_hash = "h1";
  EXPECT_NE(k, cache_key("statistics", R"({"top_k":5})", other));
}

}  // namespace
}  // namespace tern::pipeline
