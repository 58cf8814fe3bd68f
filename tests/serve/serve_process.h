// Child processes for the server tests: the built `tern serve` on a free loopback port, started,
// waited for (bounded), stopped with SIGTERM; and other built binaries run with a time limit.
// Output of every child goes to a log file that the tests print when something fails.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace tern::serve_tests {

inline std::string read_log(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A port nothing listens on right now (bound to 127.0.0.1:0, then released); 0 on failure.
inline int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// Starts argv (argv[0] a path) with `env` added to the environment, stdout and stderr appended to
// `log`; -1 when it cannot start.
inline pid_t spawn_logged(std::vector<std::string> argv, const std::vector<std::string>& env,
                          const std::string& log) {
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> env_strings = env;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// Waits for `pid` until `limit`; its exit code, 128 + signal when a signal ended it, or -1 when
// the limit passed (then it is killed with SIGKILL and reaped).
inline int wait_bounded(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (true) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

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
