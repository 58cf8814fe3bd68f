// Data-parallel W3 and W4 (bench/run_dist_bench.py runs it), weak scaling: every worker keeps the
// workload's batch (w3 128, w4 32; the global batch is N times that) and all-reduces its
// gradients through tern/dist's bucket reducer. Under mpirun each rank is a worker; without it
// one worker trains alone (no DataParallel, the same loop and timing otherwise).
//   w3  the CNN of examples/fashion_mnist.toml, Adam, on this rank's shard of Fashion-MNIST
//       (config::training_pipeline with data::WorkerShard over the global batch)
//   w4  ResNet-18 (CIFAR stem), SGD momentum, on synthetic 32x32x3 batches (seed per rank)
//
// One fit() of --warmup + --steps + --trace-steps steps. A step's time is the interval between
// the ends of two consecutive steps on rank 0 (input, the compiled step and fit's per-step
// collectives included); the JSON reports the median over the --steps timed steps, and
// samples_per_second = N x batch / median. Over the same steps: the reducer's stats (all-reduce
// seconds on its thread, seconds the step blocked in all_reduce_wait, bytes) and each thread's
// CPU and run-queue time (/proc/self/task/*/schedstat), summed by thread name. The last
// --trace-steps steps run under a ChromeTraceSink: rank 0 writes it to --trace (if given) and
// reports the comm/compute overlap it shows (comm_overlap.h).
//
// Usage: [mpirun -np N --bind-to core] dist_workloads_bench --workload w3|w4 [--steps 100]
//          [--warmup 10] [--threads 1] [--reduction deterministic|fast] [--bucket-mb 25]
//          [--first-bucket-mb 1] [--trace-steps 5] [--trace FILE] [--seed 42] [--data DIR]
// Rank 0 prints one JSON line on stdout.
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_clock.h"
#include "bench/comm_overlap.h"
#include "bench/workload_configs.h"
#include "tern/config/builders.h"
#include "tern/config/training_data.h"
#include "tern/dist/data_parallel.h"
#include "tern/io/chrome_trace.h"
#include "tern/runtime/openmp_wait.h"
#include "tern/runtime/runtime.h"
#include "tern/train/profile_report.h"
#include "tern/train/training_state.h"

namespace tern::bench {
namespace {

struct Args {
  std::string workload;
  int64_t steps = 100;
  int64_t warmup = 10;
  int64_t trace_steps = 5;
  int64_t seed = 42;
  int threads = 1;
  std::string reduction = "deterministic";
  double bucket_mb = 25;
  double first_bucket_mb = 1;
  std::string trace_path;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    TERN_CHECK_ARG(i + 1 < argc, "flag ", s, " needs a value");
    const std::string v = argv[++i];
    if (s == "--workload")
      a.workload = v;
    else if (s == "--steps")
      a.steps = std::stoll(v);
    else if (s == "--warmup")
      a.warmup = std::stoll(v);
    else if (s == "--trace-steps")
      a.trace_steps = std::stoll(v);
    else if (s == "--seed")
      a.seed = std::stoll(v);
    else if (s == "--threads")
      a.threads = std::stoi(v);
    else if (s == "--reduction")
      a.reduction = v;
    else if (s == "--bucket-mb")
      a.bucket_mb = std::stod(v);
    else if (s == "--first-bucket-mb")
      a.first_bucket_mb = std::stod(v);
    else if (s == "--trace")
      a.trace_path = v;
    else if (s == "--data")
      a.data_dir = v;
    else
      throw_error(ErrorCode::kInvalidArgument, "unknown flag ", s);
  }
  TERN_CHECK_ARG(a.workload == "w3" || a.workload == "w4", "--workload w3 or w4, got '", a.workload,
                 "'");
  TERN_CHECK_ARG(a.reduction == "deterministic" || a.reduction == "fast",
                 "--reduction deterministic or fast, got '", a.reduction, "'");
  TERN_CHECK_ARG(a.steps >= 1 && a.warmup >= 1 && a.trace_steps >= 0,
                 "--steps and --warmup must be >= 1, --trace-steps >= 0");
  TERN_CHECK_ARG(a.bucket_mb > 0 && a.first_bucket_mb > 0, "bucket sizes must be positive");
  return a;
}

// --- per-thread CPU ---

// On-CPU and runnable-but-waiting nanoseconds of each thread of this process (schedstat), and
// its name ("main" for the main thread, "unnamed" for threads that kept the process's name);
// keyed by thread id.
struct ThreadTime {
  std::string name;
  int64_t run_ns = 0;
  int64_t queue_ns = 0;
};

std::map<int, ThreadTime> thread_times() {
  std::map<int, ThreadTime> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (dirent* d = readdir(dir)) {
    if (d->d_name[0] == '.') continue;
    const std::string base = std::string("/proc/self/task/") + d->d_name;
    ThreadTime t;
    std::ifstream comm(base + "/comm"), sched(base + "/schedstat");
    if (!std::getline(comm, t.name) || !(sched >> t.run_ns >> t.queue_ns)) continue;
    out[std::stoi(d->d_name)] = t;
  }
  closedir(dir);
  const int pid = static_cast<int>(getpid());
  const std::string process = out.count(pid) ? out[pid].name : "";
  for (auto& [tid, t] : out) t.name = tid == pid ? "main" : t.name == process ? "unnamed" : t.name;
  return out;
}

// after - before, summed by thread name: {name: (run s, run-queue s)}.
std::map<std::string, std::pair<double, double>> thread_delta(
    const std::map<int, ThreadTime>& before, const std::map<int, ThreadTime>& after) {
  std::map<std::string, std::pair<double, double>> out;
  for (const auto& [tid, t] : after) {
    auto it = before.find(tid);
    const int64_t run0 = it == before.end() ? 0 : it->second.run_ns;
    const int64_t queue0 = it == before.end() ? 0 : it->second.queue_ns;
    out[t.name].first += 1e-9 * static_cast<double>(t.run_ns - run0);
    out[t.name].second += 1e-9 * static_cast<double>(t.queue_ns - queue0);
  }
  return out;
}

// --- timing callback ---

// Step-end times; snapshots of the reducer and threads around the timed steps; the trace sink
// installed for the steps after them.
class Probe : public train::Callback {
 public:
  Probe(const Args& a, dist::DataParallel* dp) : a_(a), dp_(dp) {}

  void on_train_batch_end(int64_t, train::Logs&) override {
    ends_.push_back(wall_seconds());
    const int64_t done = static_cast<int64_t>(ends_.size());
    if (done == a_.warmup) {
      if (dp_ && dp_->reducer_if_any()) dp_->reducer_if_any()->reset_stats();
      threads_before_ = thread_times();
      cpu_before_ = cpu_seconds();
    } else if (done == a_.warmup + a_.steps) {
      if (dp_ && dp_->reducer_if_any()) stats_ = dp_->reducer_if_any()->stats();
      threads_ = thread_delta(threads_before_, thread_times());
      cpu_ = cpu_seconds() - cpu_before_;
      if (a_.trace_steps > 0) {
        sink_ = std::make_unique<io::ChromeTraceSink>();
        set_trace_sink(sink_.get());
      }
    } else if (done == a_.warmup + a_.steps + a_.trace_steps && sink_) {
      set_trace_sink(nullptr);
    }
  }

  // Intervals between consecutive step ends, for the timed steps.
  std::vector<double> step_seconds() const {
    std::vector<double> out;
    for (int64_t i = a_.warmup; i < a_.warmup + a_.steps; ++i)
      out.push_back(ends_.at(static_cast<size_t>(i)) - ends_.at(static_cast<size_t>(i - 1)));
    return out;
  }
  double timed_wall() const {
    return ends_.at(static_cast<size_t>(a_.warmup + a_.steps - 1)) -
           ends_.at(static_cast<size_t>(a_.warmup - 1));
  }

  const Args& a_;
  dist::DataParallel* dp_;
  std::vector<double> ends_;
  std::map<int, ThreadTime> threads_before_;
  double cpu_before_ = 0;
  dist::ReducerStats stats_;
  std::map<std::string, std::pair<double, double>> threads_;
  double cpu_ = 0;
  std::unique_ptr<io::ChromeTraceSink> sink_;
};

double peak_rss_mb() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_maxrss) / 1024.0;
}

// Every rank's `values`, by rank.
std::vector<std::vector<double>> gather(dist::Communicator* comm, const std::vector<double>& v) {
  if (comm == nullptr) return {v};
  std::ostringstream os;
  os.precision(17);
  for (double x : v) os << x << ' ';
  std::vector<std::vector<double>> out;
  for (const std::string& text : comm->all_gather(os.str())) {
    std::istringstream is(text);
    out.emplace_back();
    for (double x; is >> x;) out.back().push_back(x);
  }
  return out;
}

int run(const Args& a) {
  std::shared_ptr<dist::Communicator> comm = dist::world();
  const int workers = comm ? comm->size() : 1;
  const int rank = comm ? comm->rank() : 0;
  const data::WorkerShard shard{workers, rank};
  runtime::set_intra_op_threads(a.threads);
  config::TrainConfig c = workload_config(a.workload, a.seed, "float32", a.data_dir);
  const int64_t batch = c.training.fit.batch_size;  // per worker
  c.training.fit.batch_size = batch * workers;      // global (training_pipeline divides it)
  const int64_t total_steps = a.warmup + a.steps + a.trace_steps;

  std::shared_ptr<dist::DataParallel> dp;
  if (comm) {
    dist::DataParallelOptions o;
    o.buckets.bucket_bytes = static_cast<size_t>(a.bucket_mb * (1 << 20));
    o.buckets.first_bucket_bytes = static_cast<size_t>(a.first_bucket_mb * (1 << 20));
    o.buckets.mode =
        a.reduction == "fast" ? dist::ReduceMode::kFast : dist::ReduceMode::kDeterministic;
    dp = std::make_shared<dist::DataParallel>(comm, o);
  }
  std::shared_ptr<nn::Model> model;
  data::DatasetPtr train;
  if (a.workload == "w3") {
    config::ClassificationData d = config::load_data(c);
    const int64_t batches = d.train_x.shape()[0] / c.training.fit.batch_size;
    TERN_CHECK_ARG(total_steps <= batches, "w3: ", total_steps,
                   " steps do not fit in one epoch of ", batches, " full batches of ",
                   c.training.fit.batch_size);
    model = config::make_model(c, d.sample_shape);
    config::compile_model(*model, c, batches);
    train = config::training_pipeline(c, d.train_x, d.train_y, shard);
  } else {
    Shape sample;
    train = synthetic_batches(a.workload, batch,
                              data::worker_seed(static_cast<uint64_t>(a.seed), shard), &sample);
    model = config::make_model(c, sample);
    config::compile_model(*model, c, total_steps);
  }
  if (dp) train::enable_data_parallel(*model, dp);
  auto probe = std::make_shared<Probe>(a, dp.get());
  nn::FitOptions fo;
  fo.verbose = 0;
  fo.seed = static_cast<uint64_t>(a.seed);
  fo.epochs = 1;
  fo.steps_per_epoch = total_steps;
  fo.callbacks = {probe};
  model->fit(train, fo);
  TERN_CHECK(static_cast<int64_t>(probe->ends_.size()) == total_steps, "ran ", probe->ends_.size(),
             " of ", total_steps, " steps");

  const double steps = static_cast<double>(a.steps);
  const double step_s = median(probe->step_seconds());
  const dist::ReducerStats& st = probe->stats_;
  CommOverlap ov;
  if (probe->sink_) ov = comm_overlap(probe->sink_->events(), train::compiled_nodes(*model));
  // Per rank: median step, reduce s/step, exposed s/step, process CPU s/step.
  const std::vector<std::vector<double>> ranks =
      gather(comm.get(),
             {step_s, st.reduce_seconds / steps, st.exposed_seconds / steps, probe->cpu_ / steps});
  if (rank != 0) return 0;
  if (probe->sink_ && !a.trace_path.empty()) {
    probe->sink_->write(a.trace_path, train::op_trace_args(train::compiled_nodes(*model)));
  }
  dist::GradientReducer* reducer = dp ? dp->reducer_if_any() : nullptr;
  std::printf(
      "{\"workload\": \"%s\", \"framework\": \"tern\", \"workers\": %d, \"threads\": %d, "
      "\"reduction\": \"%s\", \"batch_per_worker\": %lld, \"global_batch\": %lld, \"steps\": %lld, "
      "\"warmup\": %lld, \"step_seconds\": %.6f, \"mean_step_seconds\": %.6f, "
      "\"samples_per_second\": %.3f, \"cpu_seconds_per_step\": %.6f",
      a.workload.c_str(), workers, runtime::intra_op_threads(), dp ? a.reduction.c_str() : "none",
      static_cast<long long>(batch), static_cast<long long>(batch * workers),
      static_cast<long long>(a.steps), static_cast<long long>(a.warmup), step_s,
      probe->timed_wall() / steps, static_cast<double>(batch * workers) / step_s,
      probe->cpu_ / steps);
  if (reducer) {
    const double reduce = st.reduce_seconds / steps, exposed = st.exposed_seconds / steps;
    std::printf(
        ", \"allreduce_seconds_per_step\": %.6f, \"exposed_seconds_per_step\": %.6f, "
        "\"hidden_fraction\": %.4f, \"grad_bytes_per_step\": %.0f, \"reductions_per_step\": %.2f, "
        "\"buckets\": %zu, \"bucket_mb\": %g, \"first_bucket_mb\": %g",
        reduce, exposed, reduce > 0 ? 1 - exposed / reduce : 0,
        static_cast<double>(st.bytes) / steps, static_cast<double>(st.reductions) / steps,
        reducer->buckets().size(), a.bucket_mb, a.first_bucket_mb);
  }
  std::printf(", \"per_rank\": [");
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::printf(
        "%s{\"step_seconds\": %.6f, \"allreduce_seconds_per_step\": %.6f, "
        "\"exposed_seconds_per_step\": %.6f, \"cpu_seconds_per_step\": %.6f}",
        r ? ", " : "", ranks[r].at(0), ranks[r].at(1), ranks[r].at(2), ranks[r].at(3));
  }
  std::printf("], \"threads_cpu\": {");
  bool first = true;
  for (const auto& [name, t] : probe->threads_) {
    if (t.first < 1e-3 && t.second < 1e-3) continue;  // idle threads
    std::printf("%s\"%s\": {\"run_seconds_per_step\": %.6f, \"runqueue_seconds_per_step\": %.6f}",
                first ? "" : ", ", name.c_str(), t.first / steps, t.second / steps);
    first = false;
  }
  std::printf("}");
  if (probe->sink_) {
    const double ts = static_cast<double>(std::max<int64_t>(1, ov.train_steps));
    std::printf(
        ", \"trace\": {\"file\": \"%s\", \"steps\": %lld, \"thread_ids\": %s, "
        "\"comm_seconds_per_step\": %.6f, \"compute_seconds_per_step\": %.6f, "
        "\"wait_seconds_per_step\": %.6f, \"backward_seconds_per_step\": %.6f, "
        "\"hidden_fraction\": %.4f, \"exposed_fraction\": %.4f, \"in_start_fraction\": %.4f}",
        a.trace_path.c_str(), static_cast<long long>(ov.train_steps),
        ov.has_threads ? "true" : "false", ov.comm_seconds / ts, ov.compute_seconds / ts,
        ov.wait_seconds / ts, ov.backward_seconds / ts, ov.hidden_fraction(), ov.exposed_fraction(),
        ov.in_start_fraction());
  }
  std::printf(", \"peak_rss_mb\": %.1f}\n", peak_rss_mb());
  return 0;
}

}  // namespace
}  // namespace tern::bench

int main(int argc, char** argv) {
  tern::runtime::use_bounded_openmp_spin(argv);
  try {
    return tern::bench::run(tern::bench::parse_args(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dist_workloads_bench: %s\n", e.what());
    return 1;
  }
}
