// make_launcher and the helpers the launchers share: shell quoting, running a command for its
// output.
#include "tern/sweep/launcher.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tern/base/error.h"
#include "tern/sweep/slurm_launcher.h"

namespace tern::sweep {

std::unique_ptr<Launcher> make_launcher(const LauncherSpec& spec, int parallel, int threads,
                                        const std::string& sweep_dir) {
  if (spec.kind == LauncherSpec::Kind::kSlurm)
    return make_slurm_launcher(spec, parallel, threads, sweep_dir);
  return make_process_launcher(spec);
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-./=:,+@%") == std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

int run_capture(const std::vector<std::string>& argv, std::string& output) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw_error(ErrorCode::kUnavailable, "pipe: ", std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw_error(ErrorCode::kUnavailable, "fork: ", std::strerror(errno));
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execvp(args[0], args.data());
    _exit(127);
  }
  ::close(fds[1]);
  output.clear();
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    output.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace tern::sweep
