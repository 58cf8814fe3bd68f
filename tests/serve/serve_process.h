// Child processes for the server tests: the built `tern serve` on a free loopback port, started,
// waited for (bounded), stopped with SIGTERM; and other built binaries run with a time limit.
// Output of every child goes to a log file that the tests print when something fails.
#pragma once

#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/child_process.h"

namespace tern::serve_tests {

using ::tern::testing::free_loopback_port;
using ::tern::testing::read_log;
using ::tern::testing::spawn_logged;
using ::tern::testing::wait_bounded;

// `tern serve ARGS --rest_api_host 127.0.0.1 --rest_api_port PORT --port 0` (REST only).
class TernServe {
 public:
  TernServe(const std::vector<std::string>& args, const std::string& log) : log_(log) {
    // The port is free when chosen but could be taken before the server binds it: retry.
    for (int attempt = 0; attempt < 3 && pid_ < 0; ++attempt) {
      port_ = free_loopback_port();
      std::vector<std::string> argv = {TERN_TOOL_PATH, "serve"};
      argv.insert(argv.end(), args.begin(), args.end());
      argv.insert(argv.end(), {"--rest_api_host", "127.0.0.1", "--rest_api_port",
                               std::to_string(port_), "--port", "0"});
      pid_ = spawn_logged(argv, {}, log_);
      if (pid_ < 0) break;
      if (wait_ready(std::chrono::seconds(60)) || !exited_) break;  // up, or hung (killed later)
      pid_ = -1;  // exited (reaped): again on another port only if this one was taken
      exited_ = false;
      if (read_log(log_).find("127.0.0.1:" + std::to_string(port_)) == std::string::npos) break;
    }
  }
  ~TernServe() {
    if (pid_ > 0) wait_bounded_kill();
  }
  TernServe(const TernServe&) = delete;
  TernServe& operator=(const TernServe&) = delete;

  bool ready() const { return ready_; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return read_log(log_); }

  // SIGTERM, then its exit code (bounded: -1 when it did not exit within `limit`).
  int stop(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    if (pid_ < 0) return -1;
    ::kill(pid_, SIGTERM);
    int code = wait_bounded(pid_, limit);
    pid_ = -1;
    return code;
  }

 private:
  // Up when it printed TF Serving's line "Exporting HTTP/REST API at:HOST:PORT ..." (after the
  // models are loaded); false when it exited or the limit passed first.
  bool wait_ready(std::chrono::milliseconds limit) {
    const std::string line = "Exporting HTTP/REST API at:127.0.0.1:" + std::to_string(port_);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (read_log(log_).find(line) != std::string::npos) return ready_ = true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  void wait_bounded_kill() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool ready_ = false;
  bool exited_ = false;
};

}  // namespace tern::serve_tests
