// ServerCore over temp model folders with a fake loader (y = x + k, k from model.txt): version
// policies, labels and their errors, refused versions, load before unload, rollback, config
// re-read, traffic split, warmup, batching and metrics through the backend.
#include "tern/serve/server_core.h"

#include <gtest/gtest.h>

#include <thread>

#include "tern/serve/core_test_util.h"

namespace tern::serve {
namespace {

using namespace testing;  // NOLINT: the helpers of core_test_util.h

ServerCoreOptions single_model(const std::string& base, std::shared_ptr<Probe> probe) {
  ServerCoreOptions o;
  o.model_name = "m";
  o.model_base_path = base;
  o.file_system_poll_wait_seconds = -1;  // tests poll with poll_now()
  o.warmup_requests = 0;
  o.loader = fake_loader(std::move(probe));
  return o;
}

ServerCoreOptions from_config(const std::string& config_file, std::shared_ptr<Probe> probe) {
  ServerCoreOptions o = single_model("", std::move(probe));
  o.model_config_file = config_file;
  return o;
}

float predict_one(ServerCore& core, const ModelSpec& spec, float x) {
  ServableHandle h = core.resolve(spec);
  return y_rows(core.predict(h, kDefaultSignature, x_rows({x}), Clock::time_point::max()))[0];
}

VersionState state_of(const ServerCore& core, const std::string& model, int64_t version) {
  return core.status({model, version, std::nullopt}).at(0).state;
}

// --- versions and policies ---

TEST(ServerCore, LatestServesTheHighestNumericVersion) {
  TempDir dir;
  write_version(dir.path(), "1", 10);
  write_version(dir.path(), "00002", 20);
  write_version(dir.path(), "tmp_export", 99);  // not a number: skipped
  auto probe = std::make_shared<Probe>();
  ServerCore core(single_model(dir.path(), probe));
  EXPECT_EQ(core.resolve({"m", std::nullopt, std::nullopt}).version, 2);
  EXPECT_EQ(predict_one(core, {"m", std::nullopt, std::nullopt}, 1), 21);
  std::vector<VersionStatus> s = core.status({"m", std::nullopt, std::nullopt});
  ASSERT_EQ(s.size(), 1u);  // latest 1: version 1 is never aspired
  EXPECT_EQ(s[0].version, 2);
  EXPECT_EQ(s[0].state, VersionState::kAvailable);
  std::string msg;
  EXPECT_EQ(error_of([&] { core.resolve({"m", 1, std::nullopt}); }, &msg), ErrorCode::kNotFound);
  EXPECT_EQ(msg, "Servable not found for request: Specific(m, 1)");
  EXPECT_EQ(error_of([&] { core.status({"m", 7, std::nullopt}); }, &msg), ErrorCode::kNotFound);
  EXPECT_EQ(msg, "Could not find version 7 of model m");
  EXPECT_EQ(error_of(
                [&] {
                  core.resolve({"nope", std::nullopt, std::nullopt});
                },
                &msg),
            ErrorCode::kNotFound);
  EXPECT_EQ(msg, "Servable not found for request: Latest(nope)");
  EXPECT_EQ(probe->loads, 1);
}

TEST(ServerCore, NoNumericVersionsLogsTheTfMessage) {
  TempDir dir;
  write_version(dir.path(), "v0.1", 1);
  ::testing::internal::CaptureStderr();
  ServerCore core(single_model(dir.path(), std::make_shared<Probe>()));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(log, "No versions of servable m found under base path " + dir.path()));
  std::string msg;
  EXPECT_EQ(error_of(
                [&] {
                  core.resolve({"m", std::nullopt, std::nullopt});
                },
                &msg),
            ErrorCode::kNotFound);
  EXPECT_EQ(msg, "Servable not found for request: Latest(m)");
}

TEST(ServerCore, LatestNAllAndSpecificPolicies) {
  TempDir dir;
  for (const char* model : {"a", "b", "c"}) {
    for (int v = 1; v <= 3; ++v) write_version(dir.path() + "/" + model, std::to_string(v), v);
  }
  const std::string config = dir.path() + "/models.config";
  write_file(config,
             "model_config_list {\n"
             "  config { name: 'a' base_path: '" +
                 dir.path() +
                 "/a'\n"
                 "    model_platform: 'tensorflow'\n"
                 "    model_version_policy { latest { num_versions: 2 } } }\n"
                 "  config { name: 'b' base_path: '" +
                 dir.path() +
                 "/b'\n"
                 "    model_version_policy { all {} } }\n"
                 "  config { name: 'c' base_path: '" +
                 dir.path() +
                 "/c'\n"
                 "    model_version_policy { specific { versions: 1 versions: 3 } } }\n"
                 "}\n");
  ServerCore core(from_config(config, std::make_shared<Probe>()));
  auto versions = [&](const std::string& m) {
    std::vector<int64_t> out;
    for (const VersionStatus& s : core.status({m, std::nullopt, std::nullopt})) {
      if (s.state == VersionState::kAvailable) out.push_back(s.version);
    }
    return out;
  };
  EXPECT_EQ(versions("a"), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(versions("b"), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_EQ(versions("c"), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(predict_one(core, {"c", 1, std::nullopt}, 0), 1);
  EXPECT_EQ(core.model_names(), (std::vector<std::string>{"a", "b", "c"}));
}

// --- labels ---

std::string labeled_config(const std::string& base, const std::string& versions,
                           const std::string& labels_and_split) {
  return "model_config_list {\n config {\n  name: 'm'\n  base_path: '" + base +
         "'\n  model_version_policy { specific { " + versions + " } }\n" + labels_and_split +
         " }\n}\n";
}

TEST(ServerCore, LabelsResolveAndTheirErrorsFollowTfServing) {
  TempDir dir;
  write_version(dir.path() + "/m", "1", 10);
  write_version(dir.path() + "/m", "2", 20);
  const std::string config = dir.path() + "/models.config";
  write_file(config, labeled_config(dir.path() + "/m", "versions: 1 versions: 2",
                                    "  version_labels { key: 'stable' value: 1 }\n"
                                    "  version_labels { key: 'canary' value: 2 }\n"));
  ServerCore core(from_config(config, std::make_shared<Probe>()));
  EXPECT_EQ(predict_one(core, {"m", std::nullopt, "stable"}, 1), 11);
  EXPECT_EQ(predict_one(core, {"m", std::nullopt, "canary"}, 1), 21);
  EXPECT_EQ(core.status({"m", std::nullopt, "stable"}).at(0).version, 1);
  std::string msg;
  EXPECT_EQ(error_of(
                [&] {
                  core.resolve({"m", std::nullopt, "beta"});
                },
                &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(msg, "Unrecognized servable version label: beta");
  EXPECT_EQ(error_of([&] {
              core.status({"m", std::nullopt, "beta"});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_of([&] { core.resolve({"m", 1, "stable"}); }), ErrorCode::kInvalidArgument);
}

TEST(ServerCore, LabelOnAVersionThatIsNotAvailableIsRefused) {
  TempDir dir;
  write_version(dir.path() + "/m", "1", 10);
  const std::string config = dir.path() + "/models.config";
  write_file(config, labeled_config(dir.path() + "/m", "versions: 1",
                                    "  version_labels { key: 'canary' value: 3 }\n"));
  std::string msg;
  EXPECT_EQ(
      error_of([&] { ServerCore core(from_config(config, std::make_shared<Probe>())); }, &msg),
      ErrorCode::kFailedPrecondition);
  EXPECT_TRUE(contains(msg, "label 'canary' to version 3 of model m"));
  EXPECT_TRUE(contains(msg, "not currently available for inference"));
}

TEST(ServerCore, ConfigErrorsNameTheFileAndLine) {
  TempDir dir;
  const std::string config = dir.path() + "/models.config";
  write_file(config, "model_config_list {\n  config {\n    nme: 'm'\n  }\n}\n");
  std::string msg;
  EXPECT_EQ(
      error_of([&] { ServerCore core(from_config(config, std::make_shared<Probe>())); }, &msg),
      ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(msg, config + ":3:"));
  EXPECT_TRUE(contains(msg, "nme"));
  EXPECT_EQ(
      error_of([&] {
        ServerCore core(from_config(dir.path() + "/missing.config", std::make_shared<Probe>()));
      }),
      ErrorCode::kNotFound);
  ServerCoreOptions no_loader = single_model(dir.path(), nullptr);
  no_loader.loader = nullptr;
  EXPECT_EQ(error_of([&] { ServerCore core(no_loader); }), ErrorCode::kInvalidArgument);
}

// --- refused versions, hot swap, rollback ---

TEST(ServerCore, BrokenVersionIsRefusedAndTheServingVersionStaysUp) {
  TempDir dir;
  write_version(dir.path(), "1", 10);
  auto probe = std::make_shared<Probe>();
  ServerCore core(single_model(dir.path(), probe));
  write_file(dir.path() + "/2/broken", "");
  ::testing::internal::CaptureStderr();
  core.poll_now();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(log, "model m version 2: LOADING"));
  EXPECT_TRUE(contains(log, "model m version 2: END: " + dir.path() + "/2/broken"));
  VersionStatus s2 = core.status({"m", 2, std::nullopt}).at(0);
  EXPECT_EQ(s2.state, VersionState::kEnd);
  ASSERT_TRUE(s2.error.has_value());
  EXPECT_EQ(*s2.error, ErrorCode::kDataLoss);
  EXPECT_TRUE(contains(s2.error_message, "this version is broken"));
  EXPECT_EQ(core.resolve({"m", std::nullopt, std::nullopt}).version, 1);
  EXPECT_EQ(predict_one(core, {"m", std::nullopt, std::nullopt}, 1), 11);

  const int loads = probe->loads;
  core.poll_now();  // unchanged folder: not retried
  EXPECT_EQ(probe->loads, loads);

  std::filesystem::remove(dir.path() + "/2/broken");  // fixed: retried
  write_version(dir.path(), "2", 20);
  core.poll_now();
  EXPECT_EQ(state_of(core, "m", 2), VersionState::kAvailable);
  EXPECT_EQ(state_of(core, "m", 1), VersionState::kEnd);
  EXPECT_EQ(predict_one(core, {"m", std::nullopt, std::nullopt}, 1), 21);
}

TEST(ServerCore, NewVersionIsAvailableBeforeTheOldUnloadsAndHeldHandlesKeepWorking) {
  TempDir dir;
  write_version(dir.path(), "1", 10);
  ServerCore core(single_model(dir.path(), std::make_shared<Probe>()));
  ServableHandle held = core.resolve({"m", std::nullopt, std::nullopt});
  write_version(dir.path(), "2", 20);
  ::testing::internal::CaptureStderr();
  core.poll_now();
  const std::string log = ::testing::internal::GetCapturedStderr();
  const size_t available2 = log.find("model m version 2: AVAILABLE");
  const size_t unloading1 = log.find("model m version 1: UNLOADING");
  ASSERT_NE(available2, std::string::npos) << log;
  ASSERT_NE(unloading1, std::string::npos) << log;
  EXPECT_LT(available2, unloading1);
  EXPECT_TRUE(contains(log, "model m version 1: END: unloaded"));
  // The request that resolved version 1 finishes on it.
  EXPECT_EQ(held.version, 1);
  EXPECT_EQ(y_rows(core.predict(held, kDefaultSignature, x_rows({1}), Clock::time_point::max()))[0],
            11);
  EXPECT_EQ(state_of(core, "m", 1), VersionState::kEnd);
  EXPECT_EQ(predict_one(core, {"m", std::nullopt, std::nullopt}, 1), 21);
}

TEST(ServerCore, ASlowLoadNeverMakesResolveFail) {
  TempDir dir;
  write_version(dir.path(), "1", 10);
  auto probe = std::make_shared<Probe>();
  Gate gate;
  ServerCoreOptions o = single_model(dir.path(), probe);
  Loader inner = o.loader;
  o.loader = [&, inner](const std::string& version_dir) {
    if (version_dir.ends_with("/2")) gate.wait();
    return inner(version_dir);
  };
  ServerCore core(o);
  write_version(dir.path(), "2", 20);
  std::thread poller([&] { core.poll_now(); });
  ASSERT_TRUE(gate.wait_for_waiters(1));
  EXPECT_EQ(state_of(core, "m", 2), VersionState::kLoading);
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(core.resolve({"m", std::nullopt, std::nullopt}).version, 1);
  }
  EXPECT_EQ(predict_one(core, {"m", std::nullopt, std::nullopt}, 0), 10);
  gate.open();
  poller.join();
  EXPECT_EQ(core.resolve({"m", std::nullopt, std::nullopt}).version, 2);
}

TEST(ServerCore, DeletingTheNewestVersionRollsBack) {
  TempDir dir;
  write_version(dir.path(), "1", 10);
  ServerCore core(single_model(dir.path(), std::make_shared<Probe>()));
  write_version(dir.path(), "2", 20);
  core.poll_now();
  ASSERT_EQ(core.resolve({"m", std::nullopt, std::nullopt}).version, 2);
  std::filesystem::remove_all(dir.path() + "/2");
  core.poll_now();
  EXPECT_EQ(core.resolve({"m", std::nullopt, std::nullopt}).version, 1);
  EXPECT_EQ(state_of(core, "m", 1), VersionState::kAvailable);
  EXPECT_EQ(state_of(core, "m", 2), VersionState::kEnd);
  // An empty base path unloads the model.
  std::filesystem::remove_all(dir.path() + "/1");
  core.poll_now();
  EXPECT_EQ(error_of([&] {
              core.resolve({"m", std::nullopt, std::nullopt});
            }),
            ErrorCode::kNotFound);
}

TEST(ServerCore, ARefusedNewestVersionDoesNotBlockARollback) {
  TempDir dir;
  write_version(dir.path(), "1", 10);
  ServerCore core(single_model(dir.path(), std::make_shared<Probe>()));
  write_version(dir.path(), "2", 20);
  core.poll_now();
  write_file(dir.path() + "/3/broken", "");
  core.poll_now();  // version 3 refused; 2 keeps serving
  ASSERT_EQ(state_of(core, "m", 3), VersionState::kEnd);
  ASSERT_EQ(core.resolve({"m", std::nullopt, std::nullopt}).version, 2);
  core.poll_now();  // the refused 3 does not count as the latest: 2 stays aspired and loaded
  EXPECT_EQ(state_of(core, "m", 2), VersionState::kAvailable);
  std::filesystem::remove_all(dir.path() + "/2");  // rollback past the broken 3
  core.poll_now();
  EXPECT_EQ(core.resolve({"m", std::nullopt, std::nullopt}).version, 1);
  EXPECT_EQ(predict_one(core, {"m", std::nullopt, std::nullopt}, 1), 11);
  EXPECT_EQ(state_of(core, "m", 2), VersionState::kEnd);
}

TEST(ServerCore, WarmupRunsBeforeAvailableAndAFailingWarmupRefusesTheVersion) {
  TempDir dir;
  write_version(dir.path(), "1", 10);
  auto probe = std::make_shared<Probe>();
  ServerCoreOptions o = single_model(dir.path(), probe);
  o.warmup_requests = 3;
  ServerCore core(o);
  EXPECT_EQ(probe->batch_sizes, (std::vector<int64_t>{1, 1, 1}));
  write_version(dir.path(), "2", 20);
  probe->on_run = [] { throw_error(ErrorCode::kInternal, "warmup blew up"); };
  core.poll_now();
  VersionStatus s2 = core.status({"m", 2, std::nullopt}).at(0);
  EXPECT_EQ(s2.state, VersionState::kEnd);
  EXPECT_TRUE(contains(s2.error_message, "warmup request 1 of 3 failed: warmup blew up"));
  probe->on_run = nullptr;
  EXPECT_EQ(core.resolve({"m", std::nullopt, std::nullopt}).version, 1);
}

TEST(ServerCore, ThePollThreadPicksUpNewVersions) {
  TempDir dir;
  write_version(dir.path(), "1", 10);
  ServerCoreOptions o = single_model(dir.path(), std::make_shared<Probe>());
  o.file_system_poll_wait_seconds = 0.01;
  ServerCore core(o);
  write_version(dir.path(), "2", 20);
  EXPECT_TRUE(wait_for([&] {
    return core.resolve({"m", std::nullopt, std::nullopt}).version == 2;
  }));
  core.stop();
  core.stop();  // idempotent
}

// --- config re-read ---

TEST(ServerCore, ConfigFileIsReReadWhenItChanges) {
  TempDir dir;
  write_version(dir.path() + "/m", "1", 10);
  write_version(dir.path() + "/m", "2", 20);
  write_version(dir.path() + "/n", "5", 50);
  const std::string config = dir.path() + "/models.config";
  write_file(config, labeled_config(dir.path() + "/m", "versions: 1",
                                    "  version_labels { key: 'stable' value: 1 }\n"));
  ServerCoreOptions o = from_config(config, std::make_shared<Probe>());
  o.model_config_file_poll_wait_seconds = 3600;  // on; the test polls with poll_now()
  ServerCore core(o);
  EXPECT_EQ(core.resolve({"m", std::nullopt, "stable"}).version, 1);

  // Promote: serve 1 and 2, move stable to 2.
  write_file(config, labeled_config(dir.path() + "/m", "versions: 1 versions: 2",
                                    "  version_labels { key: 'stable' value: 2 }\n"));
  core.poll_now();
  EXPECT_EQ(core.resolve({"m", std::nullopt, "stable"}).version, 2);
  EXPECT_EQ(core.resolve({"m", 1, std::nullopt}).version, 1);

  // A broken file keeps the current config.
  write_file(config, "model_config_list { config { name: 'm' ");
  ::testing::internal::CaptureStderr();
  core.poll_now();
  EXPECT_TRUE(contains(::testing::internal::GetCapturedStderr(),
                       "model config not reloaded: InvalidArgument: " + config + ":1:"));
  EXPECT_EQ(core.resolve({"m", std::nullopt, "stable"}).version, 2);

  // The whole new config: m leaves, n arrives.
  write_file(config,
             "model_config_list { config { name: 'n' base_path: '" + dir.path() + "/n' } }\n");
  core.poll_now();
  EXPECT_EQ(core.model_names(), (std::vector<std::string>{"n"}));
  EXPECT_EQ(error_of([&] {
              core.resolve({"m", std::nullopt, std::nullopt});
            }),
            ErrorCode::kNotFound);
  EXPECT_EQ(predict_one(core, {"n", std::nullopt, std::nullopt}, 1), 51);
}

TEST(ServerCore, ALabelReloadToAnUnavailableVersionKeepsTheOldLabels) {
  TempDir dir;
  write_version(dir.path() + "/m", "1", 10);
  const std::string config = dir.path() + "/models.config";
  write_file(config, labeled_config(dir.path() + "/m", "versions: 1",
                                    "  version_labels { key: 'stable' value: 1 }\n"));
  ServerCoreOptions o = from_config(config, std::make_shared<Probe>());
  o.model_config_file_poll_wait_seconds = 3600;
  ServerCore core(o);
  write_file(config, labeled_config(dir.path() + "/m", "versions: 1",
                                    "  version_labels { key: 'stable' value: 9 }\n"));
  ::testing::internal::CaptureStderr();
  core.poll_now();
  EXPECT_TRUE(
      contains(::testing::internal::GetCapturedStderr(), "label 'stable' to version 9 of model m"));
  EXPECT_EQ(core.resolve({"m", std::nullopt, "stable"}).version, 1);
  EXPECT_EQ(error_of([&] {
              core.reload_config(parse_model_config(
                  labeled_config(dir.path() + "/m", "versions: 1",
                                 "  version_labels { key: 'stable' value: 9 }\n"),
                  "reload"));
            }),
            ErrorCode::kFailedPrecondition);
}

// --- traffic split ---

TEST(ServerCore, TrafficSplitSendsRequestsByPercent) {
  TempDir dir;
  write_version(dir.path() + "/m", "1", 10);
  write_version(dir.path() + "/m", "2", 20);
  const std::string config = dir.path() + "/models.config";
  write_file(config, labeled_config(dir.path() + "/m", "versions: 1 versions: 2",
                                    "  version_labels { key: 'stable' value: 1 }\n"
                                    "  version_labels { key: 'canary' value: 2 }\n"
                                    "  traffic_split { key: 'stable' value: 90 }\n"
                                    "  traffic_split { key: 'canary' value: 10 }\n"));
  ServerCore core(from_config(config, std::make_shared<Probe>()));
  int v1 = 0, v2 = 0, canary_in_first_20 = 0;
  for (int i = 0; i < 1000; ++i) {
    const int64_t v = core.resolve({"m", std::nullopt, std::nullopt}).version;
    (v == 1 ? v1 : v2)++;
    if (i < 20 && v == 2) ++canary_in_first_20;
    core.record_request({"m", v, "predict", "REST"}, std::nullopt, std::chrono::microseconds(50));
  }
  EXPECT_NEAR(v1, 900, 50);
  EXPECT_NEAR(v2, 100, 50);
  EXPECT_GE(canary_in_first_20, 1);  // interleaved, not 90 then 10
  // Naming a version or label bypasses the split.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(core.resolve({"m", 2, std::nullopt}).version, 2);
  const std::string text = core.prometheus_metrics();
  EXPECT_TRUE(contains(text,
                       ":tern:serving:version_request_count{model_name=\"m\",version=\"1\","
                       "status=\"OK\"} " +
                           std::to_string(v1) + "\n"));
  EXPECT_TRUE(contains(text,
                       ":tern:serving:version_request_count{model_name=\"m\",version=\"2\","
                       "status=\"OK\"} " +
                           std::to_string(v2) + "\n"));
}

TEST(ServerCore, TrafficSplitMustNameKnownLabelsAndAddUpTo100) {
  std::string msg;
  EXPECT_EQ(error_of(
                [&] {
                  parse_model_config(
                      labeled_config("/x", "versions: 1",
                                     "  version_labels { key: 'stable' value: 1 }\n"
                                     "  traffic_split { key: 'canary' value: 100 }\n"),
                      "f.config");
                },
                &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(msg, "traffic_split label 'canary' is not in version_labels"));
  EXPECT_EQ(error_of(
                [&] {
                  parse_model_config(
                      labeled_config("/x", "versions: 1",
                                     "  version_labels { key: 'stable' value: 1 }\n"
                                     "  traffic_split { key: 'stable' value: 60 }\n"),
                      "f.config");
                },
                &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(msg, "add up to 60, not 100"));
}

// --- batching and metrics through the backend ---

TEST(ServerCore, BatchingMergesConcurrentPredicts) {
  TempDir dir;
  write_version(dir.path(), "1", 10);
  auto probe = std::make_shared<Probe>();
  ServerCoreOptions o = single_model(dir.path(), probe);
  o.enable_batching = true;
  write_file(dir.path() + "/batching.config",
             "max_batch_size { value: 4 }\nbatch_timeout_micros { value: 10000000 }\n"
             "num_batch_threads { value: 1 }\n");
  o.batching_parameters_file = dir.path() + "/batching.config";
  ServerCore core(o);
  ServableHandle h = core.resolve({"m", std::nullopt, std::nullopt});
  std::vector<float> results(4);
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      results[i] = y_rows(core.predict(h, kDefaultSignature, x_rows({float(i)}),
                                       Clock::now() + std::chrono::seconds(20)))[0];
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(probe->max_batch(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(results[i], i + 10);
  const std::string text = core.prometheus_metrics();
  EXPECT_TRUE(contains(text,
                       ":tensorflow:serving:batching:processed_batch_size_count{"
                       "model_name=\"m\"} 1\n"));
  EXPECT_TRUE(contains(text,
                       ":tensorflow:serving:batching_session:queuing_latency_count{"
                       "thread_pool_name=\"model_server_batch_threads\"} 4\n"));
  EXPECT_TRUE(contains(text,
                       ":tensorflow:serving:runtime_latency_count{model_name=\"m\","
                       "API=\"Predict\",runtime=\"tern\"} 4\n"));
  std::string msg;
  EXPECT_EQ(error_of([&] { core.predict(h, "nope", x_rows({1}), Clock::time_point::max()); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(msg, "Serving signature name: \"nope\" not found in signature def");
}

TEST(ServerCore, BatchingFileNeedsEnableBatchingAndValidParameters) {
  TempDir dir;
  write_version(dir.path(), "1", 10);
  ServerCoreOptions o = single_model(dir.path(), std::make_shared<Probe>());
  o.batching_parameters_file = dir.path() + "/batching.config";
  write_file(o.batching_parameters_file,
             "max_batch_size { value: 8 }\nallowed_batch_sizes: 2\nallowed_batch_sizes: 4\n");
  std::string msg;
  EXPECT_EQ(error_of([&] { ServerCore core(o); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(msg, "without enable_batching"));
  o.enable_batching = true;
  EXPECT_EQ(error_of([&] { ServerCore core(o); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(msg, o.batching_parameters_file));
  EXPECT_TRUE(contains(msg, "must match max_batch_size (8)"));
}

TEST(ServerCore, LoadedVersionsGaugeFollowsTheServingMap) {
  TempDir dir;
  write_version(dir.path() + "/m", "1", 10);
  write_version(dir.path() + "/m", "2", 20);
  const std::string config = dir.path() + "/models.config";
  write_file(config, "model_config_list { config { name: 'm' base_path: '" + dir.path() +
                         "/m' model_version_policy { all {} } } }\n");
  ServerCore core(from_config(config, std::make_shared<Probe>()));
  EXPECT_TRUE(
      contains(core.prometheus_metrics(), ":tern:serving:loaded_versions{model_name=\"m\"} 2\n"));
  std::filesystem::remove_all(dir.path() + "/m/1");
  core.poll_now();
  EXPECT_TRUE(
      contains(core.prometheus_metrics(), ":tern:serving:loaded_versions{model_name=\"m\"} 1\n"));
}

}  // namespace
}  // namespace tern::serve
