// `tern serve`'s refusals before it serves anything: ports that leave nothing to serve on or
// collide, metrics without a REST port, a missing monitoring file, a bad model config file; each
// names the flag or file, and the caller's signal mask is left as it was.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tern/base/error.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

std::string serve_error(std::vector<std::string> args) {
  args.insert(args.begin(), "serve");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  try {
    cmd_serve(static_cast<int>(argv.size()), argv.data());
  } catch (const std::exception& e) {  // tern::Error, or UsageError for a bad flag value
    return e.what();
  }
  return "no error";
}

bool sigterm_blocked() {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, SIGTERM) == 1;
}

TEST(ServeCommand, RefusesBadFlagsAndFilesNamingThem) {
  const std::string dir = std::filesystem::temp_directory_path() / "tern_serve_command_test";
  std::filesystem::create_directories(dir);
  EXPECT_NE(serve_error({"--model_base_path", dir, "--port", "0", "--rest_api_port", "0"})
                .find("nothing to serve on"),
            std::string::npos);
  EXPECT_NE(serve_error({"--model_base_path", dir, "--port", "9000", "--rest_api_port", "9000"})
                .find("--port and --rest_api_port are both 9000"),
            std::string::npos);
  EXPECT_NE(serve_error({"--model_base_path", dir, "--monitoring_config_file", dir + "/nope.pbtxt"})
                .find(dir + "/nope.pbtxt"),
            std::string::npos);
  const std::string monitoring = dir + "/monitoring.pbtxt";
  std::ofstream(monitoring) << "prometheus_config { enable: true }\n";
  EXPECT_NE(serve_error({"--model_base_path", dir, "--monitoring_config_file", monitoring, "--port",
                         "9001", "--rest_api_port", "0"})
                .find("--rest_api_port is 0"),
            std::string::npos);
  const std::string config = dir + "/models.pbtxt";
  std::ofstream(config) << "model_config_list { config { name: 'm' base_path: '" << dir
                        << "' bogus: 1 } }\n";
  std::string err =
      serve_error({"--model_config_file", config, "--rest_api_port", "0", "--port", "9002"});
  EXPECT_NE(err.find(config + ":1:"), std::string::npos) << err;
  EXPECT_NE(err.find("bogus"), std::string::npos) << err;
  EXPECT_FALSE(sigterm_blocked());  // the failed start gave the mask back
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tern::tools
