// SlurmLauncher: trials as the tasks of one sbatch job array, followed through files and squeue.
#include "tern/sweep/slurm_launcher.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tern/base/error.h"
#include "tern/io/atomic_file.h"

namespace tern::sweep {
namespace {

bool read_int_file(const std::string& path, int& out) {
  std::ifstream in(path);
  return static_cast<bool>(in >> out);
}

class SlurmLauncher : public Launcher {
 public:
  SlurmLauncher(SbatchOptions options, std::string sweep_dir)
      : options_(std::move(options)), sweep_dir_(std::move(sweep_dir)) {}

  std::string name() const override { return "slurm"; }
  bool queues() const override { return true; }

  void start(const std::vector<TrialLaunch>& trials) override {
    if (trials.empty()) return;
    for (const auto& t : trials) {
      dirs_[t.id] = t.dir;
      for (const char* f : {"/exit_code", "/slurm_started"}) std::filesystem::remove(t.dir + f);
    }
    std::filesystem::create_directories(sweep_dir_ + "/slurm");
    const std::string script =
        sweep_dir_ + "/slurm/array_" + std::to_string(submissions_++) + ".sh";
    io::write_file_atomically(script, sbatch_script(trials, options_));
    std::string out;
    int rc = run_capture({"sbatch", "--parsable", script}, out);
    if (rc != 0)
      throw_error(ErrorCode::kUnavailable, "sbatch ", script, " failed (exit ", rc, "): ", out);
    std::string job = out.substr(0, out.find_first_of(";\n"));
    TERN_CHECK(!job.empty(), "sbatch printed no job id: ", out);
    for (const auto& t : trials) jobs_[t.id] = job;
  }

  TrialPoll poll(int id) override {
    TrialPoll p = poll_state(id);
    if (p.state != TrialPoll::State::kQueued) p.started_at = started_at(id);
    return p;
  }

  void stop(int id) override {
    stopped_.insert(id);
    std::string out;
    run_capture({"scancel", task(id)}, out);
  }

  std::string job_ref(int id) const override { return "slurm " + task(id); }

  void stop_leftover(const std::string& job_ref, const std::string&) override {
    if (job_ref.rfind("slurm ", 0) != 0) return;
    std::string out;
    run_capture({"scancel", job_ref.substr(6)}, out);
  }

 private:
  // The time the task's script wrote into slurm_started (`date +%s.%N`), read once; 0 if none.
  double started_at(int id) {
    auto it = started_.find(id);
    if (it != started_.end()) return it->second;
    std::ifstream in(dirs_.at(id) + "/slurm_started");
    double t = 0;
    if (!(in >> t) || t <= 0) return 0;
    started_[id] = t;
    return t;
  }

  TrialPoll poll_state(int id) {
    const std::string& dir = dirs_.at(id);
    int code = 0;
    if (read_int_file(dir + "/exit_code", code)) return exited(code);
    refresh_queue();
    auto it = queue_.find(task(id));
    if (it != queue_.end()) {
      const bool pending = it->second == "PENDING" || it->second == "CONFIGURING";
      return {pending ? TrialPoll::State::kQueued : TrialPoll::State::kRunning};
    }
    if (!queue_ok_) return {TrialPoll::State::kRunning};  // squeue failed: ask again later
    if (read_int_file(dir + "/exit_code", code)) return exited(code);  // finished meanwhile
    if (!seen_.count(id) && !std::filesystem::exists(dir + "/slurm_started") &&
        std::chrono::steady_clock::now() - submitted_grace_start(id) < std::chrono::seconds(10)) {
      return {TrialPoll::State::kQueued};  // not yet listed
    }
    TrialPoll p{TrialPoll::State::kExited, -1};
    p.signal = stopped_.count(id) ? 9 : 0;
    p.detail = "slurm task " + task(id) + " left the queue without an exit code" +
               (stopped_.count(id) ? " (scancel)" : " (cancelled, timed out or its node failed)");
    return p;
  }

  TrialPoll exited(int code) {
    TrialPoll p{TrialPoll::State::kExited, code};
    if (code > 128) {
      p.signal = code - 128;
      p.detail = "killed by signal " + std::to_string(p.signal);
    } else if (code != 0) {
      p.detail = "exit code " + std::to_string(code);
    }
    return p;
  }
  std::string task(int id) const { return jobs_.at(id) + "_" + std::to_string(id); }
  std::map<int, double> started_;  // started_at's reads
  std::chrono::steady_clock::time_point submitted_grace_start(int id) {
    auto [it, inserted] = first_poll_.emplace(id, std::chrono::steady_clock::now());
    return it->second;
  }
  // squeue at most once a second: task ("17_3") -> state.
  void refresh_queue() {
    auto now = std::chrono::steady_clock::now();
    if (now - last_refresh_ < std::chrono::seconds(1)) return;
    last_refresh_ = now;
    std::set<std::string> job_ids;
    for (const auto& [id, job] : jobs_) job_ids.insert(job);
    std::string list;
    for (const auto& j : job_ids) list += (list.empty() ? "" : ",") + j;
    std::string out;
    queue_ok_ = run_capture({"squeue", "-h", "-r", "-j", list, "-o", "%i %T"}, out) == 0;
    if (!queue_ok_) return;
    queue_.clear();
    std::istringstream in(out);
    std::string t, state;
    while (in >> t >> state) {
      queue_[t] = state;
      for (const auto& [id, job] : jobs_) {
        if (t == task(id) && state != "PENDING") seen_.insert(id);
      }
    }
  }

  SbatchOptions options_;
  std::string sweep_dir_;
  int submissions_ = 0;
  std::map<int, std::string> dirs_, jobs_;  // trial id -> folder, array job id
  std::map<std::string, std::string> queue_;
  std::map<int, std::chrono::steady_clock::time_point> first_poll_;
  std::set<int> stopped_, seen_;
  bool queue_ok_ = false;
  std::chrono::steady_clock::time_point last_refresh_{};
};

}  // namespace

std::string sbatch_script(const std::vector<TrialLaunch>& trials, const SbatchOptions& o) {
  TERN_CHECK_ARG(!trials.empty(), "sbatch_script: no trials");
  std::ostringstream s;
  std::string ids;
  for (const auto& t : trials) ids += (ids.empty() ? "" : ",") + std::to_string(t.id);
  s << "#!/bin/bash\n"
    << "# tern sweep: one array task per trial (task id = trial id). Written by tern sweep.\n"
    << "#SBATCH --job-name=" << o.job_name << "\n"
    << "#SBATCH --array=" << ids << "%" << o.parallel << "\n"
    << "#SBATCH --ntasks=1\n"
    << "#SBATCH --cpus-per-task=" << o.cpus_per_task << "\n"
    << "#SBATCH --output=/dev/null\n";
  if (!o.workdir.empty()) s << "#SBATCH --chdir=" << o.workdir << "\n";
  if (!o.partition.empty()) s << "#SBATCH --partition=" << o.partition << "\n";
  for (const auto& a : o.extra_args) s << "#SBATCH " << a << "\n";
  s << "case \"$SLURM_ARRAY_TASK_ID\" in\n";
  for (const auto& t : trials) {
    s << "  " << t.id << ")\n    dir=" << shell_quote(t.dir) << "\n    set --";
    for (const auto& a : t.argv) s << " " << shell_quote(a);
    s << " ;;\n";
  }
  s << "  *) echo \"tern sweep: no trial $SLURM_ARRAY_TASK_ID\" >&2; exit 2 ;;\n"
    << "esac\n"
    << "date +%s.%N > \"$dir/slurm_started\"\n"
    << "\"$@\" >> \"$dir/train.log\" 2>&1\n"
    << "code=$?\n"
    << "echo $code > \"$dir/exit_code.tmp\" && mv \"$dir/exit_code.tmp\" \"$dir/exit_code\"\n"
    << "exit $code\n";
  return s.str();
}

std::unique_ptr<Launcher> make_slurm_launcher(const LauncherSpec& spec, int parallel, int threads,
                                              const std::string& sweep_dir) {
  SbatchOptions o;
  o.parallel = parallel;
  o.cpus_per_task = threads;
  o.workdir = std::filesystem::current_path().string();
  o.partition = spec.partition;
  o.extra_args = spec.sbatch_args;
  return std::make_unique<SlurmLauncher>(std::move(o), sweep_dir);
}

}  // namespace tern::sweep
