// mpirun as a supervised child process (train_workers.h).
#include "tools/tern/train_workers.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "tern/base/error.h"
#include "tern/train/interrupt.h"

namespace tern::tools {
namespace {

// This program's path, for mpirun to start (argv[0] may be a bare name found on PATH).
std::string self_executable() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("tern") : p.string();
}

std::vector<std::string> mpirun_args(int workers, int argc, char** argv) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> args = {"mpirun", "-np", std::to_string(workers), "--stdin", "none"};
  if (static_cast<unsigned>(workers) > cores) {
    args.insert(args.end(), {"--oversubscribe", "--bind-to", "none"});
  } else {
    args.insert(args.end(), {"--bind-to", "core"});
  }
  if (geteuid() == 0) args.push_back("--allow-run-as-root");
  args.push_back(self_executable());
  args.push_back("train");
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--workers") {
      ++i;  // and its value
      continue;
    }
    if (a.rfind("--workers=", 0) == 0) continue;
    args.push_back(a);
  }
  return args;
}

void write_stderr(const std::string& text) {
  ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

}  // namespace

int run_workers(int workers, int argc, char** argv) {
  std::vector<std::string> args = mpirun_args(workers, argc, argv);
  std::cout << "tern train: starting " << workers << " workers:";
  for (const auto& a : args) std::cout << " " << a;
  std::cout << std::endl;

  // SIGINT, SIGTERM and SIGCHLD are taken with sigwait: blocked before the fork, unblocked in the
  // child before exec.
  sigset_t wanted, old;
  sigemptyset(&wanted);
  for (int s : {SIGINT, SIGTERM, SIGCHLD}) sigaddset(&wanted, s);
  pthread_sigmask(SIG_BLOCK, &wanted, &old);
  std::vector<char*> c_args;
  for (auto& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    ::setpgid(0, 0);  // the terminal's Ctrl-C reaches this process only
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    ::execvp("mpirun", c_args.data());
    write_stderr("tern train: --workers " + std::to_string(workers) + ": cannot run mpirun (" +
                 std::strerror(errno) +
                 "); install Debian's openmpi-bin (scripts/install-deps.sh does) or start the "
                 "workers yourself: mpirun -np " +
                 std::to_string(workers) + " tern train CONFIG\n");
    ::_exit(127);
  }
  if (child < 0) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw_error(ErrorCode::kUnavailable, "--workers: fork failed: ", std::strerror(errno));
  }
  ::setpgid(child, child);
  int stop_signal = 0, status = 0;
  for (;;) {
    int sig = 0;
    sigwait(&wanted, &sig);
    if (sig == SIGCHLD) {
      if (::waitpid(child, &status, WNOHANG) == child) break;
      continue;
    }
    if (stop_signal == 0) {
      stop_signal = sig;
      write_stderr(std::string("\ntern train: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
                   ": the workers stop after this step and save (SIGUSR1 through mpirun; " +
                   "Ctrl-C again ends the job at once)\n");
      ::kill(child, SIGUSR1);
    } else if (sig == SIGINT) {
      write_stderr("\ntern train: second SIGINT: ending the job\n");
      ::kill(child, SIGINT);
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (code == 127 && stop_signal == 0) return 1;  // mpirun did not start (said why)
  // Stopped on request: the workers exited 128 + SIGUSR1; report the signal this process got.
  if (stop_signal != 0 && code != 0) return train::interrupted_exit_status(stop_signal);
  return code;
}

}  // namespace tern::tools
