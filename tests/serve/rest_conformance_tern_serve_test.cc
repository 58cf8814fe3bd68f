// The REST conformance suite (tern/serve/rest_conformance_test.cc) against the built `tern serve`:
// the suite's models are written as real model directories (rest_conformance_models.h) with a
// model config file (every version, labels stable -> 1, canary -> 2), the server is started on a
// free loopback port, the suite runs with TERN_REST_CONFORMANCE_URL pointing at it (the tests that
// need the in-process backend skip themselves), and SIGTERM must stop the server with exit 0.
#include <gtest/gtest.h>

#include <filesystem>

#include "tern/serve/rest_conformance_models.h"
#include "tests/serve/serve_process.h"

namespace tern::serve_tests {
namespace {

namespace fs = std::filesystem;

struct TempFolder {
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "tern_serve_conf_XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

TEST(TernServeConformance, SuitePassesAgainstTheBuiltServer) {
  TempFolder dir;
  ASSERT_FALSE(dir.path.empty());
  const std::string config = serve::testing::write_conformance_models(dir.path + "/models");
  TernServe server({"--model_config_file", config, "--file_system_poll_wait_seconds", "0"},
                   dir.path + "/serve.log");
  ASSERT_TRUE(server.ready()) << "tern serve did not come up:\n" << server.log();

  const std::string suite_log = dir.path + "/suite.log";
  pid_t suite = spawn_logged({TERN_SERVE_TEST_PATH, "--gtest_filter=RestConformance.*"},
                             {"TERN_REST_CONFORMANCE_URL=" + server.url()}, suite_log);
  ASSERT_GT(suite, 0);
  const int suite_code = wait_bounded(suite, std::chrono::seconds(120));
  const std::string out = read_log(suite_log);
  EXPECT_EQ(suite_code, 0) << out << "\n--- tern serve ---\n" << server.log();
  // It ran against this server: the external-only skips happened and the rest passed.
  EXPECT_NE(out.find("[  PASSED  ]"), std::string::npos) << out;
  EXPECT_NE(out.find("[  SKIPPED ] RestConformance.BytesAndBase64"), std::string::npos) << out;
  EXPECT_NE(out.find("[       OK ] RestConformance.ClassifyAndRegress"), std::string::npos) << out;

  EXPECT_EQ(server.stop(), 0) << server.log();
  const std::string log = server.log();
  EXPECT_NE(log.find("tern serve: SIGTERM: draining in-flight requests"), std::string::npos) << log;
  EXPECT_NE(log.find("tern serve: stopped"), std::string::npos) << log;
  // The broken version was refused with its reason in the log.
  EXPECT_NE(log.find("model half_plus_two version 3: END"), std::string::npos) << log;
}

}  // namespace
}  // namespace tern::serve_tests
