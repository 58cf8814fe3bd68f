// Launchers over child processes: `local` runs the trial's command itself, `mpirun` runs it as
// `mpirun -np 1 --host H ...` on a host with a free slot. Children get their own process group
// (a stop kills the group) and die with the sweep (PR_SET_PDEATHSIG): a killed sweep leaves no
// trial running that a resumed one would race with.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tern/base/error.h"
#include "tern/sweep/launcher.h"

namespace tern::sweep {
namespace {

// fork + exec with stdout and stderr appended to `log`; the child dies with `death_signal` when
// this process does.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log, int death_signal) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw_error(ErrorCode::kUnavailable, "fork: ", std::strerror(errno));
  if (pid == 0) {  // the child: async-signal-safe calls only until exec
    prctl(PR_SET_PDEATHSIG, death_signal);
    if (getppid() != parent) _exit(128 + death_signal);
    setpgid(0, 0);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execvp(args[0], args.data());
    const char msg[] = "tern sweep: cannot execute the trial command\n";
    ssize_t ignored = write(2, msg, sizeof(msg) - 1);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid);  // also from here: no window where a stop misses the group
  return pid;
}

struct Child {
  pid_t pid = -1;
  std::string host;  // mpirun
  bool done = false;
  TrialPoll result;
};

class ProcessLauncher : public Launcher {
 public:
  ProcessLauncher(const LauncherSpec& spec) : spec_(spec) {
    for (const auto& h : spec.hosts) {
      size_t colon = h.find(':');
      hosts_.push_back(
          {h.substr(0, colon), colon == std::string::npos ? 1 : std::stoi(h.substr(colon + 1))});
    }
  }
  ~ProcessLauncher() override {
    for (auto& [id, c] : children_) {
      if (!c.done) {
        ::kill(-c.pid, SIGKILL);
        ::waitpid(c.pid, nullptr, 0);
      }
    }
  }

  std::string name() const override { return launcher_name(spec_.kind); }

  void start(const std::vector<TrialLaunch>& trials) override {
    for (const TrialLaunch& t : trials) {
      Child c;
      std::vector<std::string> argv = t.argv;
      if (spec_.kind == LauncherSpec::Kind::kMpirun) {
        c.host = take_host();
        std::vector<std::string> m = {"mpirun", "-np", "1", "--host", c.host};
        if (geteuid() == 0) m.push_back("--allow-run-as-root");
        m.insert(m.end(), spec_.mpirun_args.begin(), spec_.mpirun_args.end());
        argv.insert(argv.begin(), m.begin(), m.end());
      }
      std::ofstream(t.dir + "/command.txt") << join(argv) << "\n";
      // mpirun forwards SIGTERM to its job; a bare trial is simply killed.
      c.pid = spawn(argv, t.dir + "/train.log",
                    spec_.kind == LauncherSpec::Kind::kMpirun ? SIGTERM : SIGKILL);
      children_[t.id] = c;
    }
  }

  TrialPoll poll(int id) override {
    Child& c = children_.at(id);
    if (c.done) return c.result;
    int status = 0;
    pid_t r = ::waitpid(c.pid, &status, WNOHANG);
    if (r == 0) return {TrialPoll::State::kRunning};
    c.done = true;
    release_host(c.host);
    c.result.state = TrialPoll::State::kExited;
    if (r < 0) {
      c.result.exit_code = -1;
      c.result.detail = std::string("waitpid: ") + std::strerror(errno);
    } else if (WIFSIGNALED(status)) {
      c.result.exit_code = -1;
      c.result.signal = WTERMSIG(status);
      c.result.detail = std::string("killed by signal ") + std::to_string(c.result.signal) + " (" +
                        strsignal(c.result.signal) + ")";
    } else {
      c.result.exit_code = WEXITSTATUS(status);
      if (c.result.exit_code != 0)
        c.result.detail = "exit code " + std::to_string(c.result.exit_code);
    }
    return c.result;
  }

  void stop(int id) override {
    Child& c = children_.at(id);
    if (c.done) return;
    ::kill(-c.pid, spec_.kind == LauncherSpec::Kind::kMpirun ? SIGTERM : SIGKILL);
    if (spec_.kind != LauncherSpec::Kind::kMpirun) return;
    // mpirun ends its job on SIGTERM; a second signal after a grace period makes sure.
    for (int i = 0; i < 50 && ::waitpid(c.pid, nullptr, WNOHANG) == 0; ++i) ::usleep(100000);
    ::kill(-c.pid, SIGKILL);
  }

  std::string job_ref(int id) const override {
    const Child& c = children_.at(id);
    return (c.host.empty() ? "" : c.host + " ") + "pid " + std::to_string(c.pid);
  }

  void stop_leftover(const std::string& job_ref, const std::string& trial_dir) override {
    size_t at = job_ref.rfind("pid ");
    if (at == std::string::npos) return;
    pid_t pid = static_cast<pid_t>(std::atoi(job_ref.c_str() + at + 4));
    if (pid <= 1) return;
    // Only a process still running this trial's command (pids are reused).
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!cmdline.empty() && cmdline.find(trial_dir) != std::string::npos) ::kill(-pid, SIGKILL);
  }

 private:
  static std::string join(const std::vector<std::string>& argv) {
    std::string s;
    for (const auto& a : argv) s += (s.empty() ? "" : " ") + shell_quote(a);
    return s;
  }
  std::string take_host() {
    // The host with the most free slots (first in list order on ties).
    int best = -1;
    for (size_t i = 0; i < hosts_.size(); ++i) {
      if (hosts_[i].second > 0 && (best < 0 || hosts_[i].second > hosts_[best].second))
        best = static_cast<int>(i);
    }
    TERN_CHECK(best >= 0, "mpirun launcher: no free slot (more trials at once than host slots)");
    --hosts_[best].second;
    return hosts_[best].first;
  }
  void release_host(const std::string& host) {
    for (auto& [h, free] : hosts_) {
      if (h == host) {
        ++free;
        return;
      }
    }
  }

  LauncherSpec spec_;
  std::vector<std::pair<std::string, int>> hosts_;  // host -> free slots
  std::map<int, Child> children_;
};

}  // namespace

std::unique_ptr<Launcher> make_process_launcher(const LauncherSpec& spec) {
  return std::make_unique<ProcessLauncher>(spec);
}
}  // namespace tern::sweep
