// `tern serve` under load while versions come and go, end to end with the built binaries: wrk
// sends predict requests (bench/serve/predict.lua) while versions 2 and 3 appear, a broken
// version 4 appears and version 3 is deleted (rollback to 2). Every response must be a 200 whose
// body is the prediction of a version that was loaded (bodies of each version are read first
// from a server that serves all of them), no request may fail, the log must show each
// transition, and SIGTERM must drain and exit 0.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "tests/support/child_process.h"
#include "tests/support/idx_writer.h"
#include "tests/support/loopback_http.h"

namespace tern {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using ::tern::testing::free_loopback_port;
using ::tern::testing::http_request;
using ::tern::testing::read_log;
using ::tern::testing::spawn_logged;
using ::tern::testing::wait_bounded;
using ::tern::testing::write_quadrant_dataset;

pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  return spawn_logged(args, {}, log);
}

int wait_exit(pid_t pid) {
  return wait_bounded(pid, std::chrono::seconds(60));
}

int run(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = spawn(args, log);
  return pid < 0 ? -1 : wait_exit(pid);
}

std::string read_text(const std::string& path) {
  return read_log(path);
}

// Polls `pred` every 20 ms for up to `seconds`.
template <typename F>
bool eventually(F pred, double seconds = 20) {
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

// A version folder appears whole: copied under a hidden name, then renamed.
void publish(const fs::path& from, const fs::path& base, int v) {
  fs::path tmp = base / (".incoming-" + std::to_string(v));
  fs::copy(from, tmp, fs::copy_options::recursive);
  fs::rename(tmp, base / std::to_string(v));
}

class ServeSwapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (system("command -v wrk > /dev/null 2>&1") != 0)
      FAIL() << "wrk is not installed (Debian package wrk; scripts/install-deps.sh installs it)";
    dir_ = fs::temp_directory_path() / ("tern_serve_swap_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_quadrant_dataset(dir_, "train", 256, 1);
    write_quadrant_dataset(dir_, "test", 64, 2);
    config_ = (dir_ / "tiny.toml").string();
    std::ofstream(config_)
        << "[model]\nname = \"mlp\"\n[model.args]\nunits = [16]\n"
        << "[data]\ndataset = \"idx\"\n"
        << "train_images = \"" << (dir_ / "train-images.idx").string() << "\"\n"
        << "train_labels = \"" << (dir_ / "train-labels.idx").string() << "\"\n"
        << "test_images = \"" << (dir_ / "test-images.idx").string() << "\"\n"
        << "test_labels = \"" << (dir_ / "test-labels.idx").string() << "\"\n"
        << "num_classes = 4\n"
        << "[loss]\nname = \"sparse_categorical_crossentropy\"\nfrom_logits = true\n"
        << "[optimizer]\nname = \"sgd\"\nlearning_rate = 0.05\n"
        << "[training]\nepochs = 1\nbatch_size = 32\n";
    log_ = (dir_ / "tern.log").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Trains and exports version v (a different seed per version, so predictions differ).
  void make_version(int v) {
    std::string out = (dir_ / ("run" + std::to_string(v))).string();
    std::vector<std::string> sets = {"--set", "training.seed=" + std::to_string(100 + v), "--set",
                                     "output.dir=" + out};
    std::vector<std::string> train = {TERN_TOOL_PATH, "train", config_, "--quiet"};
    train.insert(train.end(), sets.begin(), sets.end());
    ASSERT_EQ(run(train, log_), 0) << read_text(log_);
    std::vector<std::string> exp = {TERN_TOOL_PATH, "export", config_, "--out",
                                    (dir_ / "staging" / std::to_string(v)).string()};
    exp.insert(exp.end(), sets.begin(), sets.end());
    ASSERT_EQ(run(exp, log_), 0) << read_text(log_);
  }

  pid_t serve(const std::vector<std::string>& extra, int port, const std::string& log) {
    std::vector<std::string> args = {TERN_TOOL_PATH,    "serve",
                                     "--model_name",    "m",
                                     "--rest_api_port", std::to_string(port),
                                     "--port",          "0",
                                     "--rest_api_host", "127.0.0.1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return spawn(args, log);
  }

  fs::path dir_;
  std::string config_, log_;
};

std::string request_body() {
  std::string row = "[", img = "[";
  for (int r = 0; r < 8; ++r) {
    img += r ? ",[" : "[";
    for (int c = 0; c < 8; ++c) img += (c ? "," : "") + std::to_string((r < 4 && c < 4) ? 200 : 30);
    img += "]";
  }
  img += "]";
  return "{\"instances\": [" + img + "]}";
}

std::string state_of(int port, int v) {
  auto r = http_request(port, "GET", "/v1/models/m/versions/" + std::to_string(v));
  if (r.status != 200) return "";
  size_t at = r.body.find("\"state\"");
  if (at == std::string::npos) return "";
  size_t q1 = r.body.find('"', r.body.find(':', at) + 1);
  return r.body.substr(q1 + 1, r.body.find('"', q1 + 1) - q1 - 1);
}

TEST_F(ServeSwapTest, VersionsComeAndGoUnderLoadWithoutAFailedRequest) {
  for (int v = 1; v <= 3; ++v) make_version(v);
  const std::string body = request_body();
  std::string body_file = (dir_ / "request.json").string();
  std::ofstream(body_file) << body;

  // The prediction of each version, from a server that serves all three (policy all).
  std::map<int, std::string> expected;
  {
    std::string cfg = (dir_ / "all.pbtxt").string();
    std::ofstream(cfg) << "model_config_list { config { name: 'm' base_path: '"
                       << (dir_ / "staging").string()
                       << "' model_platform: 'tern' model_version_policy { all {} } } }\n";
    int port = free_loopback_port();
    std::string log = (dir_ / "serve_all.log").string();
    pid_t pid = serve({"--model_config_file", cfg}, port, log);
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(eventually([&] { return state_of(port, 3) == "AVAILABLE"; })) << read_text(log);
    for (int v = 1; v <= 3; ++v) {
      auto r = http_request(port, "POST", "/v1/models/m/versions/" + std::to_string(v) + ":predict",
                            body);
      ASSERT_EQ(r.status, 200) << r.body;
      expected[v] = r.body;
    }
    kill(pid, SIGTERM);
    EXPECT_EQ(wait_exit(pid), 0) << read_text(log);
  }
  ASSERT_NE(expected[1], expected[2]);
  ASSERT_NE(expected[2], expected[3]);

  // Version 4 is broken: its weights file is cut short.
  fs::copy(dir_ / "staging" / "1", dir_ / "broken", fs::copy_options::recursive);
  fs::resize_file(dir_ / "broken" / "weights.safetensors", 100);

  fs::path base = dir_ / "base";
  fs::create_directories(base);
  publish(dir_ / "staging" / "1", base, 1);
  int port = free_loopback_port();
  std::string log = (dir_ / "serve.log").string();
  pid_t pid = serve({"--model_base_path", base.string(), "--file_system_poll_wait_seconds", "0.1"},
                    port, log);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(eventually([&] { return state_of(port, 1) == "AVAILABLE"; })) << read_text(log);

  std::string wrk_out = (dir_ / "wrk.out").string();
  std::string wrk_cmd = "TERN_WRK_BODY='" + body_file + "' wrk -t 2 -c 8 -d 8s --timeout 5s -s '" +
                        TERN_SOURCE_DIR +
                        "/bench/serve/predict.lua' http://127.0.0.1:" + std::to_string(port) +
                        "/v1/models/m:predict > '" + wrk_out + "' 2>&1";
  auto load = std::async(std::launch::async, [&] { return system(wrk_cmd.c_str()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  publish(dir_ / "staging" / "2", base, 2);
  EXPECT_TRUE(eventually([&] { return state_of(port, 2) == "AVAILABLE"; })) << read_text(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  publish(dir_ / "staging" / "3", base, 3);
  EXPECT_TRUE(eventually([&] { return state_of(port, 3) == "AVAILABLE"; })) << read_text(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  publish(dir_ / "broken", base, 4);
  EXPECT_TRUE(eventually([&] { return state_of(port, 4) == "END"; })) << read_text(log);
  EXPECT_EQ(state_of(port, 3), "AVAILABLE");
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  fs::remove_all(base / "3");  // rollback: the newest good version goes away
  EXPECT_TRUE(eventually([&] { return state_of(port, 2) == "AVAILABLE"; })) << read_text(log);
  EXPECT_TRUE(eventually([&] { return state_of(port, 3) != "AVAILABLE"; })) << read_text(log);
  ASSERT_EQ(load.get(), 0) << read_text(wrk_out);

  // After the rollback, "latest" answers with version 2's prediction.
  auto after = http_request(port, "POST", "/v1/models/m:predict", body);
  EXPECT_EQ(after.status, 200);
  EXPECT_EQ(after.body, expected[2]);

  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid), 0) << read_text(log);

  // wrk: only 200s, no socket errors, every body one of the versions' predictions.
  std::string out = read_text(wrk_out);
  std::istringstream lines(out);
  std::map<std::string, int64_t> statuses;
  int64_t total = 0, connect_errors = -1, read_errors = -1, timeouts = -1;
  std::map<int, int64_t> per_version;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string kind;
    f >> kind;
    if (kind == "status") {
      std::string code;
      int64_t n;
      f >> code >> n;
      statuses[code] += n;
    } else if (kind == "body") {
      int64_t n;
      f >> n;
      std::string text;
      std::getline(f, text);
      text = text.substr(1);
      int which = 0;
      for (const auto& [v, b] : expected) {
        std::string flat = b;
        for (char& c : flat) {
          if (c == '\n' || c == '\t' || c == '\r') c = ' ';
        }
        // predict.lua folds whitespace runs into one space.
        std::string folded;
        for (char c : flat) {
          if (!(c == ' ' && !folded.empty() && folded.back() == ' ')) folded += c;
        }
        if (folded == text) which = v;
      }
      EXPECT_NE(which, 0) << "a response matches no version's prediction: " << text;
      per_version[which] += n;
    } else if (kind == "requests") {
      std::string k;
      f >> total >> k >> connect_errors >> k >> read_errors >> k >> k >> k >> k >> k >> timeouts;
    }
  }
  EXPECT_GT(total, 100) << out;
  EXPECT_EQ(statuses.size(), 1u) << out;
  EXPECT_EQ(statuses["200"], total) << out;
  EXPECT_EQ(connect_errors, 0) << out;
  EXPECT_EQ(read_errors, 0) << out;
  EXPECT_EQ(timeouts, 0) << out;
  EXPECT_GT(per_version[2], 0) << out;
  EXPECT_GT(per_version[3], 0) << out;

  // The log tells the story.
  std::string text = read_text(log);
  for (const char* line : {"version 2: AVAILABLE", "version 3: AVAILABLE", "version 4: END",
                           "version 1: UNLOADING", "version 3: UNLOADING"})
    EXPECT_NE(text.find(line), std::string::npos) << "log lacks '" << line << "':\n" << text;
}

}  // namespace
}  // namespace tern

namespace tern {
namespace {

// Batching and metrics on the real server: 16 concurrent one-row requests with
// --enable_batching (max_batch_size 8, a 20 ms batch timeout, one batch thread) all answer 200
// with the same prediction, they run as batches of more than one row, and the Prometheus
// endpoint (--monitoring_config_file) counts them under TF Serving's metric names.
TEST_F(ServeSwapTest, BatchingAndPrometheusMetricsOnTheRealServer) {
  make_version(1);
  fs::path base = dir_ / "base";
  fs::create_directories(base);
  publish(dir_ / "staging" / "1", base, 1);
  std::string batching = (dir_ / "batching.pbtxt").string();
  std::ofstream(batching)
      << "max_batch_size { value: 8 }\nbatch_timeout_micros { value: 20000 }\n"
      << "num_batch_threads { value: 1 }\nmax_enqueued_batches { value: 100 }\n";
  std::string monitoring = (dir_ / "monitoring.pbtxt").string();
  std::ofstream(monitoring) << "prometheus_config { enable: true, path: \"/metrics\" }\n";
  int port = free_loopback_port();
  std::string log = (dir_ / "serve.log").string();
  pid_t pid =
      serve({"--model_base_path", base.string(), "--enable_batching", "--batching_parameters_file",
             batching, "--monitoring_config_file", monitoring},
            port, log);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(eventually([&] { return state_of(port, 1) == "AVAILABLE"; })) << read_text(log);

  const std::string body = request_body();
  std::vector<std::future<testing::HttpResponse>> replies;
  for (int i = 0; i < 16; ++i) {
    replies.push_back(std::async(std::launch::async, [&] {
      return http_request(port, "POST", "/v1/models/m:predict", body);
    }));
  }
  std::string first;
  for (auto& r : replies) {
    testing::HttpResponse reply = r.get();
    EXPECT_EQ(reply.status, 200) << reply.body;
    if (first.empty()) first = reply.body;
    EXPECT_EQ(reply.body, first);
  }
  auto metrics = http_request(port, "GET", "/metrics");
  ASSERT_EQ(metrics.status, 200);
  const std::string& m = metrics.body;
  EXPECT_NE(m.find(":tensorflow:serving:request_latency_count{model_name=\"m\",API=\"predict\","
                   "entrypoint=\"REST\"} 16"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(":tern:serving:loaded_versions{model_name=\"m\"} 1"), std::string::npos) << m;
  auto count_of = [&](const std::string& series) -> int64_t {
    size_t at = m.find(series);
    return at == std::string::npos ? -1 : std::atoll(m.c_str() + at + series.size());
  };
  // Every request counts (the status GETs above too); latency is for the 16 predicts.
  EXPECT_GE(count_of(":tensorflow:serving:request_count{model_name=\"m\",status=\"OK\"} "), 16)
      << m;
  // 16 rows arrived; fewer than 16 batches ran (some held more than one row).
  const int64_t batches =
      count_of(":tensorflow:serving:batching:input_batch_size_count{model_name=\"m\"} ");
  EXPECT_GT(batches, 0) << m;
  EXPECT_LT(batches, 16) << m;
  EXPECT_EQ(count_of(":tensorflow:serving:batching:input_batch_size_sum{model_name=\"m\"} "), 16)
      << m;
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid), 0) << read_text(log);
}

}  // namespace
}  // namespace tern
