// tern side of the benchmark suite (bench/run_suite.py runs it next to bench/workloads_torch.py):
// one workload per process, one JSON line on stdout.
//   w1  MLP 784-1024-10 relu, Adam 1e-3, batch 128, one epoch of Fashion-MNIST (+ test accuracy)
//   w2  MLP 784-512-256-10 with BatchNorm and Dropout(0.2), same setting
//   w3  the CNN of examples/fashion_mnist.toml (constant lr), same setting
//   w4  ResNet-18 (CIFAR stem), 32x32x3 synthetic batches of 32, SGD momentum 0.9: ms per step
//   peak  a 2048^3 matmul (f32 or bf16): the machine peak, in wall and CPU seconds per run
//   w6  Transformer encoder classifier (4 layers, d 256, 4 heads, ff 1024, seq 128, vocab 8000,
//       batch 32, Adam 1e-3) on synthetic tokens: ms per step
// Epoch workloads time fit() over one epoch (step compilation and the input pipeline included);
// step workloads time each step after --warmup steps and report the median. FLOPs per step are
// counted on the compiled train step (matmul and convolution nodes, forward and backward).
//
// Usage: workloads_bench --workload w1 [--steps N] [--warmup N] [--seed S] [--threads N]
//                        [--precision float32|mixed_bfloat16] [--data DIR] [--profile]
// --profile (step workloads): afterwards, runs --steps more steps traced and prints the nodes
// ranked by time to stderr.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_clock.h"
#include "bench/op_time_sink.h"
#include "bench/workload_configs.h"
#include "tern/config/builders.h"
#include "tern/config/training_data.h"
#include "tern/ir/graph.h"
#include "tern/runtime/openmp_wait.h"
#include "tern/runtime/runtime.h"
#include "tern/train/training_state.h"

namespace tern::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string workload;
  int64_t steps = 20;
  int64_t warmup = 3;
  int64_t seed = 42;
  int threads = 0;
  std::string precision = "float32";
  bool profile = false;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--profile") {
      a.profile = true;
      continue;
    }
    TERN_CHECK_ARG(i + 1 < argc, "flag ", s, " needs a value");
    std::string v = argv[++i];
    if (s == "--workload") {
      a.workload = v;
    } else if (s == "--steps") {
      a.steps = std::stoll(v);
    } else if (s == "--warmup") {
      a.warmup = std::stoll(v);
    } else if (s == "--seed") {
      a.seed = std::stoll(v);
    } else if (s == "--threads") {
      a.threads = std::stoi(v);
    } else if (s == "--precision") {
      a.precision = v;
    } else if (s == "--data") {
      a.data_dir = v;
    } else {
      throw_error(ErrorCode::kInvalidArgument, "unknown flag ", s);
    }
  }
  TERN_CHECK_ARG(!a.workload.empty(), "--workload is required (w1 w2 w3 w4 w6)");
  return a;
}

double peak_rss_mb() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_maxrss) / 1024.0;
}

// 2 * multiply-adds of the matmul and convolution nodes of a compiled graph.
double graph_flops(const ir::Graph& g) {
  double flops = 0;
  for (const ir::Node* n : g.nodes()) {
    const std::string& op = n->op_name();
    if (n->num_outputs() < 1 || n->num_inputs() < 2) continue;
    if (op == "matmul" || op == "fused_matmul") {
      const Shape& a = n->input(0)->shape();
      bool ta = n->attrs().has("transpose_a") && n->attrs().get_bool("transpose_a");
      int64_t k = ta ? a.dim(a.rank() - 2) : a.dim(a.rank() - 1);
      flops +=
          2.0 * static_cast<double>(n->output()->shape().num_elements()) * static_cast<double>(k);
    } else if (op == "conv2d" || op == "fused_conv2d" || op == "conv2d_backprop_input" ||
               op == "conv2d_backprop_filter") {
      // Every form does out(conv) * kh * kw * in_per_group multiply-adds.
      const Shape& f = op == "conv2d_backprop_filter" ? n->output()->shape() : n->input(1)->shape();
      const Shape& y = op == "conv2d_backprop_filter"  ? n->input(1)->shape()
                       : op == "conv2d_backprop_input" ? n->input(0)->shape()
                                                       : n->output()->shape();
      flops += 2.0 * static_cast<double>(y.num_elements()) *
               static_cast<double>(f.dim(0) * f.dim(1) * f.dim(2));
    }
  }
  return flops;
}

// Records the wall time of every training step.
class StepTimer : public train::Callback {
 public:
  void on_train_batch_begin(int64_t, train::Logs&) override { start_ = Clock::now(); }
  void on_train_batch_end(int64_t, train::Logs&) override {
    seconds_.push_back(std::chrono::duration<double>(Clock::now() - start_).count());
  }
  std::vector<double> seconds_;

 private:
  Clock::time_point start_;
};

config::TrainConfig config_for(const Args& a) {
  return workload_config(a.workload, a.seed, a.precision, a.data_dir);
}

data::DatasetPtr synthetic(const Args& a, const config::TrainConfig& c, Shape* sample) {
  return synthetic_batches(a.workload, c.training.fit.batch_size, static_cast<uint64_t>(a.seed),
                           sample);
}

const runtime::Executable* train_step(nn::Model& model) {
  for (const auto& [key, step] : model.training_state()->steps) {
    if (step.exe && step.exe->graph().name() == "train_step") return step.exe.get();
  }
  return nullptr;
}

double train_step_flops(nn::Model& model) {
  const runtime::Executable* exe = train_step(model);
  return exe ? graph_flops(exe->graph()) : 0;
}

// The machine's matmul peak as the suite's denominator: a 2048^3 matmul (f32, or bf16 for
// --precision mixed_bfloat16) run --steps times; wall seconds (median) and CPU seconds per run.
int run_peak(const Args& a) {
  const int64_t m = 2048;
  DType d = a.precision == "float32" ? DType::kF32 : DType::kBF16;
  ir::Graph g("peak");
  ir::Value* x = g.input("a", {d, Shape({m, m})});
  ir::Value* y = g.input("b", {d, Shape({m, m})});
  g.add_output("c", g.add("matmul", {x, y}));
  runtime::VariableStore vars;
  auto exe = runtime::Executable::compile(g, vars);
  std::mt19937_64 rng(static_cast<uint64_t>(a.seed));
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (const char* name : {"a", "b"}) {
    Tensor t(d, Shape({m, m}));
    for (int64_t i = 0; i < t.num_elements(); ++i) t.set(i, unit(rng));
    exe->feed(name, t);
  }
  for (int i = 0; i < 3; ++i) exe->run();
  std::vector<double> wall;
  double c0 = cpu_seconds();
  for (int64_t i = 0; i < a.steps; ++i) {
    auto t0 = Clock::now();
    exe->run();
    wall.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  double cpu = (cpu_seconds() - c0) / static_cast<double>(a.steps);
  std::printf(
      "{\"workload\": \"peak\", \"framework\": \"tern\", \"threads\": %d, \"precision\": \"%s\", "
      "\"seconds\": %.6f, \"cpu_seconds\": %.6f, \"steps\": %lld, \"flops\": %.6g, \"kernel\": "
      "\"%s\"}\n",
      runtime::intra_op_threads(), a.precision.c_str(), median(wall), cpu,
      static_cast<long long>(a.steps), 2.0 * m * m * m, exe->steps()[0].kernel.c_str());
  return 0;
}

int run(const Args& a) {
  runtime::set_intra_op_threads(a.threads);
  if (a.workload == "peak") return run_peak(a);
  config::TrainConfig c = config_for(a);
  bool epoch_mode = a.workload == "w1" || a.workload == "w2" || a.workload == "w3";
  std::printf(
      "{\"workload\": \"%s\", \"framework\": \"tern\", \"threads\": %d, \"precision\": \"%s\"",
      a.workload.c_str(), runtime::intra_op_threads(), a.precision.c_str());
  auto timer = std::make_shared<StepTimer>();
  nn::FitOptions fo;
  fo.verbose = 0;
  fo.seed = static_cast<uint64_t>(a.seed);
  fo.callbacks = {timer};
  if (epoch_mode) {
    config::ClassificationData d = config::load_data(c);
    int64_t steps =
        (d.train_x.shape()[0] + c.training.fit.batch_size - 1) / c.training.fit.batch_size;
    std::shared_ptr<nn::Model> model = config::make_model(c, d.sample_shape);
    config::compile_model(*model, c, steps);
    data::DatasetPtr train = config::training_pipeline(c, d.train_x, d.train_y);
    double w0 = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    double c0 = cpu_seconds();
    model->fit(train, fo);
    double wall = std::chrono::duration<double>(Clock::now().time_since_epoch()).count() - w0;
    double cpu = cpu_seconds() - c0;
    nn::EvaluateResult r = model->evaluate(config::eval_pipeline(c, d.test_x, d.test_y));
    double flops = train_step_flops(*model) * static_cast<double>(d.train_x.shape()[0]) /
                   static_cast<double>(c.training.fit.batch_size);
    std::printf(
        ", \"seconds\": %.4f, \"cpu_seconds\": %.4f, \"steps\": %lld, \"flops\": %.6g, "
        "\"test_accuracy\": %.5f",
        wall, cpu, static_cast<long long>(timer->seconds_.size()), flops, r.metric("accuracy"));
  } else {
    Shape sample;
    data::DatasetPtr ds = synthetic(a, c, &sample);
    std::shared_ptr<nn::Model> model = config::make_model(c, sample);
    config::compile_model(*model, c, a.warmup + a.steps);
    fo.steps_per_epoch = a.warmup;
    model->fit(ds, fo);
    timer->seconds_.clear();
    fo.steps_per_epoch = a.steps;
    double c0 = cpu_seconds();
    model->fit(ds, fo);
    double cpu = (cpu_seconds() - c0) / static_cast<double>(a.steps);
    std::printf(", \"seconds\": %.6f, \"cpu_seconds\": %.6f, \"steps\": %lld, \"flops\": %.6g",
                median(timer->seconds_), cpu, static_cast<long long>(a.steps),
                train_step_flops(*model));
    if (a.profile) {
      OpTimeSink sink;
      sink.start();
      set_trace_sink(&sink);
      model->fit(ds, fo);
      set_trace_sink(nullptr);
      sink.print(stderr, *train_step(*model), a.steps);
    }
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
    std::fprintf(stderr, "workloads_bench: %s\n", e.what());
    return 1;
  }
}
