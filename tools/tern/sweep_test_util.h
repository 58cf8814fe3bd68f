// Helpers of sweep_command_test.cc: the tiny Fashion-MNIST base config, sweep files, finding a
// trial's process, and a throwaway single-node Slurm (munged + slurmctld + slurmd on localhost, in
// a temporary folder, on free ports; stopped by pid when the test ends).
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/child_process.h"

namespace tern::tools {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// A tiny MLP on Fashion-MNIST: 1 thread, deterministic, 5% of the training split for validation.
inline void write_base_config(const std::string& path, const std::string& out_dir) {
  std::ofstream(path)
      << "[model]\nname = \"mlp\"\n[model.args]\nunits = [32]\n"
      << "[data]\ndataset = \"fashion_mnist\"\ndir = \"" << kFashionMnistDir
      << "\"\nshuffle_buffer = 1024\nvalidation_split = 0.05\n"
      << "[optimizer]\nname = \"adamw\"\nlearning_rate = 0.003\nweight_decay = 0.0\n"
      << "[training]\nepochs = 2\nbatch_size = 64\nsteps_per_epoch = 100\nseed = 1\n"
      << "threads = 1\ndeterministic = true\n"
      << "[output]\ndir = \"" << out_dir << "\"\n";
}

// A sweep file over base.toml (next to it).
inline void write_sweep(const std::string& path, const std::string& body) {
  std::ofstream(path) << "base = \"base.toml\"\n" << body;
}

inline std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  return out;
}

// The events.out.tfevents.* file in `dir` ("" if none).
inline std::string events_in(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
      return e.path().string();
  }
  return "";
}

// The pid of the `tern train` running the trial in `trial_dir` (its command line names the
// folder as output.dir), waiting up to `limit`; -1 if none.
inline pid_t wait_for_trial_process(const std::string& trial_dir, std::chrono::milliseconds limit) {
  const std::string needle =
      "output.dir=\"" + std::filesystem::path(trial_dir).lexically_normal().string() + "\"";
  const auto deadline = std::chrono::steady_clock::now() + limit;
  do {
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream in(e.path() / "cmdline", std::ios::binary);
      std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (cmd.find(needle) != std::string::npos &&
          cmd.find(std::string("train") + '\0') != std::string::npos)
        return static_cast<pid_t>(std::stol(name));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  return -1;
}

// munged + slurmctld + slurmd for this host only. skip_reason() says why it could not start
// (not root, slurm-wlm not installed, the node never became idle).
class LocalSlurm {
 public:
  explicit LocalSlurm(const std::string& dir) : dir_(dir) {
    if (geteuid() != 0) {
      skip_ = "slurmd needs root to run jobs";
      return;
    }
    for (const char* tool :
         {"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo"}) {
      if (std::system(("command -v " + std::string(tool) + " > /dev/null 2>&1").c_str()) != 0) {
        skip_ = std::string(tool) + " not found (Debian's slurm-wlm and munge)";
        return;
      }
    }
    namespace fs = std::filesystem;
    fs::remove_all(dir);
    for (const char* d : {"state", "spool", "log", "munge"}) fs::create_directories(dir + "/" + d);
    ::chmod((dir + "/munge").c_str(), 0755);
    {
      std::ifstream random("/dev/urandom", std::ios::binary);
      std::string key(1024, '\0');
      random.read(key.data(), static_cast<std::streamsize>(key.size()));
      std::ofstream(dir + "/munge/munge.key", std::ios::binary) << key;
      ::chmod((dir + "/munge/munge.key").c_str(), 0600);
    }
    const std::string m = dir + "/munge/";
    run("munged -f --socket=" + m + "sock --key-file=" + m + "munge.key --log-file=" + m +
        "munged.log --pid-file=" + m + "munged.pid --seed-file=" + m + "seed");
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    std::string node(host);
    node = node.substr(0, node.find('.'));
    const int ctld_port = ::tern::testing::free_loopback_port();
    int slurmd_port = ::tern::testing::free_loopback_port();
    while (slurmd_port == ctld_port) slurmd_port = ::tern::testing::free_loopback_port();
    std::ofstream(conf())
        << "ClusterName=ternsweeptest\nSlurmctldHost=localhost\nSlurmctldPort=" << ctld_port
        << "\nSlurmdPort=" << slurmd_port << "\nAuthType=auth/munge\nAuthInfo=socket=" << m
        << "sock\nCredType=cred/munge\nSlurmUser=root\nSlurmdUser=root\nStateSaveLocation=" << dir
        << "/state\nSlurmdSpoolDir=" << dir << "/spool\nSlurmctldPidFile=" << dir
        << "/slurmctld.pid\nSlurmdPidFile=" << dir << "/slurmd.pid\nSlurmctldLogFile=" << dir
        << "/log/slurmctld.log\nSlurmdLogFile=" << dir << "/log/slurmd.log\n"
        << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSchedulerType=sched/backfill\n"
        << "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nReturnToService=2\n"
        << "MpiDefault=none\nJobAcctGatherType=jobacct_gather/none\n"
        << "AccountingStorageType=accounting_storage/none\nSchedulerParameters=sched_interval=1\n"
        << "NodeName=" << node
        << " NodeAddr=127.0.0.1 CPUs=" << std::max(1u, std::thread::hardware_concurrency())
        << " State=UNKNOWN\n"
        << "PartitionName=debug Nodes=" << node << " Default=YES MaxTime=INFINITE State=UP\n";
    run("slurmctld -f " + conf());
    run("slurmd -f " + conf());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (capture("SLURM_CONF=" + conf() + " sinfo -h -o %T 2>/dev/null").find("idle") == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    skip_ = "the local Slurm node did not become idle in 30 s:\n" + logs();
  }
  ~LocalSlurm() {
    for (const std::string& pid_file :
         {dir_ + "/slurmd.pid", dir_ + "/slurmctld.pid", dir_ + "/munge/munged.pid"}) {
      std::ifstream in(pid_file);
      pid_t pid = 0;
      if (!(in >> pid) || pid <= 1) continue;
      ::kill(pid, SIGTERM);
      for (int i = 0; i < 100 && ::kill(pid, 0) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (::kill(pid, 0) == 0) ::kill(pid, SIGKILL);
    }
  }
  const std::string& skip_reason() const { return skip_; }
  std::string conf() const { return dir_ + "/slurm.conf"; }
  std::string logs() const {
    return "\n--- slurmctld.log\n" + ::tern::testing::read_log(dir_ + "/log/slurmctld.log") +
           "\n--- slurmd.log\n" + ::tern::testing::read_log(dir_ + "/log/slurmd.log");
  }

 private:
  static void run(const std::string& cmd) {
    if (std::system(cmd.c_str()) != 0) {
    }  // a daemon that fails to start shows up as a node that never becomes idle
  }
  static std::string capture(const std::string& cmd) {
    std::string out;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[256];
      while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
      ::pclose(p);
    }
    return out;
  }
  std::string dir_, skip_;
};

}  // namespace tern::tools
