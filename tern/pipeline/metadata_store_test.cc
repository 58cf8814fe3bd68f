// MetadataStore: the schema and its version checks, executions and artifacts through their
// states, events and lineage queries, and files that are no tern store.
#include "tern/pipeline/metadata_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tern/base/error.h"

namespace tern::pipeline {
namespace {

namespace fs = std::filesystem;

class MetadataStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tern_mds_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "metadata.sqlite").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string path_;
};

Artifact make(const std::string& type, const std::string& uri, const std::string& hash) {
  Artifact a;
  a.type = type;
  a.uri = uri;
  a.content_hash = hash;
  return a;
}

TEST_F(MetadataStoreTest, CreatesSchemaWithVersionAndWal) {
  {
    MetadataStore s(path_);
    auto v = s.query("PRAGMA user_version");
    EXPECT_EQ(v[0][0], std::to_string(kMetadataSchemaVersion));
    EXPECT_EQ(s.query("PRAGMA journal_mode")[0][0], "wal");
    EXPECT_EQ(s.query("PRAGMA application_id")[0][0], std::to_string(kMetadataApplicationId));
    std::vector<std::string> tables;
    for (auto& r : s.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"))
      tables.push_back(r[0]);
    EXPECT_EQ(tables, (std::vector<std::string>{"artifact_properties", "artifact_types",
                                                "artifacts", "associations", "attributions",
                                                "contexts", "events", "executions"}));
  }
  MetadataStore again(path_);  // reopens without recreating
  EXPECT_EQ(again.query("SELECT count(*) FROM executions")[0][0], "0");
}

TEST_F(MetadataStoreTest, ExecutionLifecycleEventsAndProducer) {
  MetadataStore s(path_);
  const int64_t p = s.put_context("pipeline", "autos");
  const int64_t r = s.put_context("run", "r1");
  EXPECT_EQ(s.put_context("pipeline", "autos"), p);  // get-or-create
  std::vector<RoleArtifact> in = {{"input:0", make("ExternalFile", "/data/a.csv", "h0")}};
  const int64_t x = s.begin_execution("ingest", "key1", R"({"format":"csv"})", {p, r}, in);
  EXPECT_GT(in[0].artifact.id, 0);
  EXPECT_EQ(s.execution(x)->state, ExecutionState::kRunning);
  Artifact out = make("Examples", "/root/artifacts/ingest/1/train", "h1");
  out.properties = {{"split", "train"}, {"records", "164"}};
  std::vector<RoleArtifact> outs = {{"examples:train", out}};
  s.finish_execution(x, ExecutionState::kComplete, outs, "164 records");
  const int64_t a = outs[0].artifact.id;
  ASSERT_GT(a, 0);

  std::optional<Execution> done = s.execution(x);
  EXPECT_EQ(done->state, ExecutionState::kComplete);
  EXPECT_EQ(done->cache_key, "key1");
  EXPECT_EQ(done->message, "164 records");
  EXPECT_GE(done->end_time_ms, done->start_time_ms);
  std::optional<Artifact> got = s.artifact(a);
  EXPECT_EQ(got->type, "Examples");
  EXPECT_EQ(got->property("records"), "164");
  EXPECT_EQ(s.producer(a)->id, x);
  EXPECT_FALSE(s.producer(in[0].artifact.id).has_value());  // external
  auto ev = s.events_of_execution(x);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].first.type, EventType::kInput);
  EXPECT_EQ(ev[0].first.role, "input:0");
  EXPECT_EQ(ev[1].first.role, "examples:train");
  EXPECT_EQ(s.complete_with_cache_key("key1").size(), 1u);
  EXPECT_EQ(s.contexts_of_execution(x).size(), 2u);
  EXPECT_EQ(
      s.query("SELECT count(*) FROM attributions WHERE artifact_id = " + std::to_string(a))[0][0],
      "2");
  EXPECT_EQ(s.artifacts_with_property("Examples", "split", "train").size(), 1u);

  // The same external file (path and hash) is one artifact; a cached execution links outputs.
  std::vector<RoleArtifact> in2 = {{"input:0", make("ExternalFile", "/data/a.csv", "h0")}};
  const int64_t x2 = s.begin_execution("ingest", "key1", "{}", {p}, in2);
  EXPECT_EQ(in2[0].artifact.id, in[0].artifact.id);
  std::vector<RoleArtifact> linked = {{"examples:train", *got}};
  s.finish_execution(x2, ExecutionState::kCached, linked, "cached");
  EXPECT_EQ(s.producer(a)->id, x);  // still the COMPLETE one
  EXPECT_EQ(s.events_of_artifact(a).size(), 2u);
  EXPECT_EQ(s.executions("ingest").size(), 2u);
  EXPECT_EQ(s.executions("ingest", {ExecutionState::kCached}).size(), 1u);
  EXPECT_THROW(s.finish_execution(x2, ExecutionState::kComplete, linked, ""),
               Error);  // not RUNNING
}

TEST_F(MetadataStoreTest, FailedAndAbandoned) {
  MetadataStore s(path_);
  std::vector<RoleArtifact> none;
  const int64_t a = s.begin_execution("train", "k", "{}", {}, none);
  s.fail_execution(a, "out of memory");
  EXPECT_EQ(s.execution(a)->state, ExecutionState::kFailed);
  EXPECT_EQ(s.execution(a)->message, "out of memory");
  const int64_t b = s.begin_execution("train", "k", "{}", {}, none);
  std::vector<Execution> gone = s.abandon_running("killed");
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].id, b);
  EXPECT_EQ(s.execution(b)->state, ExecutionState::kAbandoned);
  EXPECT_TRUE(s.abandon_running("again").empty());
}

TEST_F(MetadataStoreTest, AFailedWriteRollsBack) {
  MetadataStore s(path_);
  std::vector<RoleArtifact> none;
  const int64_t x = s.begin_execution("ingest", "k", "{}", {}, none);
  // Two outputs in the same role violate the events key: nothing of the call is kept.
  std::vector<RoleArtifact> outs = {{"r", make("T", "/a", "h")}, {"r", make("T", "/b", "h")}};
  EXPECT_THROW(s.finish_execution(x, ExecutionState::kComplete, outs, ""), Error);
  EXPECT_EQ(s.execution(x)->state, ExecutionState::kRunning);
  EXPECT_EQ(s.query("SELECT count(*) FROM artifacts")[0][0], "0");
  EXPECT_EQ(s.query("SELECT count(*) FROM events")[0][0], "0");
}

TEST_F(MetadataStoreTest, RefusesNewerSchemaForeignDatabasesAndOtherFiles) {
  {
    MetadataStore s(path_);
    s.query("PRAGMA user_version = 7");
  }
  try {
    MetadataStore s(path_);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(e.message().find("newer tern (schema version 7"), std::string::npos) << e.message();
  }
  // Another program's SQLite file.
  const std::string other = (dir_ / "other.sqlite").string();
  {
    MetadataStore s(other);
    s.query("PRAGMA application_id = 42");
  }
  try {
    MetadataStore s(other);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("another program"), std::string::npos) << e.message();
  }
  // Not SQLite at all.
  const std::string text = (dir_ / "notes.sqlite").string();
  std::ofstream(text) << "this is not a database, just a long enough line of text to look at\n";
  try {
    MetadataStore s(text);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(e.message().find("not a SQLite database"), std::string::npos) << e.message();
  }
  // Missing without create.
  try {
    MetadataStore s((dir_ / "none.sqlite").string(), /*create=*/false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

}  // namespace
}  // namespace tern::pipeline
