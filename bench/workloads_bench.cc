// tern side of the benchmark suite (bench/run_suite.py runs it next to bench/workloads_tf.py and
// bench/workloads_torch.py): one workload per process, one JSON line on stdout.
//   w1  MLP 784-1024-10 relu, Adam 1e-3, batch 128, one epoch of Fashion-MNIST (+ test accuracy)
//   w2  MLP 784-512-256-10 with BatchNorm and Dropout(0.2), same setting
//   w3  the CNN of examples/fashion_mnist.toml (constant lr), same setting
//   w4  ResNet-18 (CIFAR stem), 32x32x3 synthetic batches of 32, SGD momentum 0.9: ms per step
//   peak  a 2048^3 matmul (f32 or bf16): the machine peak, in wall and CPU seconds per run
//   w6  Transformer encoder classifier (4 layers, d 256, 4 heads, ff 1024, seq 128, vocab 8000,
//       batch 32, Adam 1e-3) on synthetic tokens: ms per step
//   w9  ResNet-50 (ImageNet stem), 64x64x3 synthetic batches of 32, SGD momentum 0.9
//   i-cnn, i-resnet18  inference: w3's CNN or w4's ResNet-18 exported (Model::save) and loaded as
//       a Servable (the in-process API of `tern serve`, tern/serve/model_dir.h), --steps calls of
//       --batch random rows after --warmup calls: p50 / p99 latency and rows per second (the work
//       of a call counted on the same forward pass compiled by predict())
// Epoch workloads time fit() over one epoch (step compilation and the input pipeline included)
// and also report the time from the end of the first step to the end of the epoch (the steady
// part, which run_suite.py compares); step workloads time each step after --warmup steps and
// report the median. The work per step is counted on the compiled graph (bench/graph_cost.h:
// matmul and convolution FLOPs, optimizer and normalization bytes) for the suite's floors.
//
// Usage: workloads_bench --workload w1 [--steps N] [--warmup N] [--seed S] [--threads N]
//                        [--precision float32|mixed_bfloat16] [--data DIR] [--profile]
//                        [--epoch-steps N] [--batch N] [--order-out FILE] [--first-steps DIR]
// --profile (step and inference workloads): afterwards, runs --steps more steps (inference:
// calls of the served graph, compiled as the servable compiles it) traced and prints the nodes
// ranked by time to stderr.
// --epoch-steps N (epoch workloads): stop the epoch after N steps (a quick check of the scripts).
// --order-out FILE (epoch workloads): write the epoch's sample order (JSON: "order", the training
// rows in the order fit() sees them for this --seed) and exit; the peers read it (same data order).
// --first-steps DIR (w1 w2 w3): dropout off, write the initial weights (DIR/initial.safetensors)
// and the order (DIR/order.json), train 3 steps and print their losses: the tern side of
// bench/first_step_check.py.
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_clock.h"
#include "bench/graph_cost.h"
#include "bench/op_time_sink.h"
#include "bench/workload_configs.h"
#include "tern/config/builders.h"
#include "tern/config/training_data.h"
#include "tern/data/iterator.h"
#include "tern/io/atomic_file.h"
#include "tern/ir/graph.h"
#include "tern/runtime/executable.h"
#include "tern/runtime/openmp_wait.h"
#include "tern/runtime/runtime.h"
#include "tern/runtime/variable_store.h"
#include "tern/serve/model_dir.h"
#include "tern/serve/rebatch.h"
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
  int64_t epoch_steps = 0;  // 0: the whole epoch
  int64_t batch = 1;        // inference workloads
  std::string order_out;
  std::string first_steps_dir;
};

// The integer value of `flag`; InvalidArgument naming the flag otherwise.
int64_t int_flag(const std::string& flag, const std::string& v) {
  size_t end = 0;
  int64_t out = 0;
  try {
    out = std::stoll(v, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  TERN_CHECK_ARG(end == v.size() && !v.empty(), flag, ": '", v, "' is not an integer");
  return out;
}

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
      a.steps = int_flag(s, v);
    } else if (s == "--warmup") {
      a.warmup = int_flag(s, v);
    } else if (s == "--seed") {
      a.seed = int_flag(s, v);
    } else if (s == "--threads") {
      a.threads = static_cast<int>(int_flag(s, v));
    } else if (s == "--precision") {
      a.precision = v;
    } else if (s == "--data") {
      a.data_dir = v;
    } else if (s == "--epoch-steps") {
      a.epoch_steps = int_flag(s, v);
    } else if (s == "--batch") {
      a.batch = int_flag(s, v);
    } else if (s == "--order-out") {
      a.order_out = v;
    } else if (s == "--first-steps") {
      a.first_steps_dir = v;
    } else {
      throw_error(ErrorCode::kInvalidArgument, "unknown flag ", s);
    }
  }
  TERN_CHECK_ARG(!a.workload.empty(),
                 "--workload is required (w1 w2 w3 w4 w6 w9 i-cnn i-resnet18 peak)");
  TERN_CHECK_ARG(a.steps >= 1 && a.warmup >= 0 && a.epoch_steps >= 0 && a.batch >= 1,
                 "--steps and --batch must be >= 1, --warmup and --epoch-steps >= 0");
  const bool epoch_mode = a.workload == "w1" || a.workload == "w2" || a.workload == "w3";
  TERN_CHECK_ARG(a.order_out.empty() || epoch_mode, "--order-out needs w1, w2 or w3");
  TERN_CHECK_ARG(a.first_steps_dir.empty() || epoch_mode, "--first-steps needs w1, w2 or w3");
  TERN_CHECK_ARG(a.workload.rfind("i-", 0) != 0 || a.precision == "float32",
                 "inference workloads run float32");
  return a;
}

double peak_rss_mb() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_maxrss) / 1024.0;
}

// Records the wall time of every training step, when the first one ended, and the step losses.
class StepTimer : public train::Callback {
 public:
  void on_train_batch_begin(int64_t, train::Logs&) override { start_ = Clock::now(); }
  void on_train_batch_end(int64_t, train::Logs& logs) override {
    Clock::time_point now = Clock::now();
    if (seconds_.empty()) first_end_ = now;
    seconds_.push_back(std::chrono::duration<double>(now - start_).count());
    losses_.push_back(logs.count("loss") ? logs.at("loss") : 0.0);
  }
  std::vector<double> seconds_;
  std::vector<double> losses_;
  Clock::time_point first_end_;

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

// The model's compiled step called `name` ("train_step", "predict_step"); null if none.
const runtime::Executable* compiled_step(nn::Model& model, const std::string& name) {
  for (const auto& [key, step] : model.training_state()->steps) {
    if (step.exe && step.exe->graph().name() == name) return step.exe.get();
  }
  return nullptr;
}

const runtime::Executable* train_step(nn::Model& model) {
  return compiled_step(model, "train_step");
}

GraphCost train_step_cost(nn::Model& model) {
  const runtime::Executable* exe = train_step(model);
  return exe ? graph_cost(exe->graph()) : GraphCost{};
}

// The JSON fields of a step's work, `scale` times (an epoch: its number of steps).
void print_cost(const GraphCost& c, double scale) {
  std::printf(
      ", \"flops\": %.6g, \"matmul_flops\": %.6g, \"conv_flops\": %.6g, \"conv_1x1_flops\": "
      "%.6g, \"optimizer_bytes\": %.6g, \"norm_bytes\": %.6g",
      c.flops() * scale, c.matmul_flops * scale, c.conv_flops * scale, c.conv_1x1_flops * scale,
      c.optimizer_bytes * scale, c.norm_bytes * scale);
}

// The rows of the training split in the order the first epoch's fit() sees them: the training
// pipeline run over row numbers (the shuffle does not look at the values).
std::vector<int64_t> epoch_order(const config::TrainConfig& c, int64_t rows) {
  Tensor idx(DType::kI64, Shape({rows}));
  for (int64_t i = 0; i < rows; ++i) idx.data<int64_t>()[i] = i;
  data::Iterator it = config::training_pipeline(c, idx, idx)->make_iterator(0);
  std::vector<int64_t> order;
  while (std::optional<data::Element> batch = it.next()) {
    const Tensor& b = (*batch)[0];
    for (int64_t i = 0; i < b.num_elements(); ++i) order.push_back(b.data<int64_t>()[i]);
  }
  TERN_CHECK(static_cast<int64_t>(order.size()) == rows, "epoch order: ", order.size(),
             " rows instead of ", rows);
  return order;
}

void write_order(const std::string& path, const Args& a, const config::TrainConfig& c,
                 int64_t rows) {
  std::string json = str_cat("{\"workload\": \"", a.workload, "\", \"seed\": ", a.seed,
                             ", \"batch\": ", c.training.fit.batch_size, ", \"order\": [");
  std::vector<int64_t> order = epoch_order(c, rows);
  for (size_t i = 0; i < order.size(); ++i) json += str_cat(i ? ", " : "", order[i]);
  json += "]}\n";
  io::write_file_atomically(path, json);
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

// --first-steps DIR: the tern side of bench/first_step_check.py (see the header).
int run_first_steps(const Args& a, config::TrainConfig c) {
  if (c.model.args.has("dropout")) c.model.args.set("dropout", 0.0);
  config::ClassificationData d = config::load_data(c);
  std::shared_ptr<nn::Model> model = config::make_model(c, d.sample_shape);
  config::compile_model(*model, c, 3);
  std::filesystem::create_directories(a.first_steps_dir);
  model->save_weights(a.first_steps_dir + "/initial.safetensors");
  write_order(a.first_steps_dir + "/order.json", a, c, d.train_x.shape()[0]);
  auto timer = std::make_shared<StepTimer>();
  nn::FitOptions fo;
  fo.verbose = 0;
  fo.seed = static_cast<uint64_t>(a.seed);
  fo.callbacks = {timer};
  fo.steps_per_epoch = 3;
  model->fit(config::training_pipeline(c, d.train_x, d.train_y), fo);
  std::printf(", \"losses\": [");
  for (size_t i = 0; i < timer->losses_.size(); ++i)
    std::printf("%s%.9g", i ? ", " : "", timer->losses_[i]);
  std::printf("]");
  return 0;
}

// One epoch of fit() on Fashion-MNIST (w1 w2 w3).
void run_epoch(const Args& a, const config::TrainConfig& c, nn::FitOptions fo,
               const std::shared_ptr<StepTimer>& timer) {
  config::ClassificationData d = config::load_data(c);
  int64_t steps =
      (d.train_x.shape()[0] + c.training.fit.batch_size - 1) / c.training.fit.batch_size;
  if (a.epoch_steps > 0) steps = std::min(steps, a.epoch_steps);
  std::shared_ptr<nn::Model> model = config::make_model(c, d.sample_shape);
  config::compile_model(*model, c, steps);
  data::DatasetPtr train = config::training_pipeline(c, d.train_x, d.train_y);
  if (a.epoch_steps > 0) fo.steps_per_epoch = a.epoch_steps;
  Clock::time_point w0 = Clock::now();
  double c0 = cpu_seconds();
  model->fit(train, fo);
  Clock::time_point w1 = Clock::now();
  double wall = std::chrono::duration<double>(w1 - w0).count();
  double cpu = cpu_seconds() - c0;
  nn::EvaluateResult r = model->evaluate(config::eval_pipeline(c, d.test_x, d.test_y));
  const auto n = static_cast<int64_t>(timer->seconds_.size());
  // The steady part: from the end of the first step (compilation, first touch) to the end of the
  // epoch, scaled to the epoch's number of steps.
  double first = std::chrono::duration<double>(timer->first_end_ - w0).count();
  double steady =
      n > 1 ? (wall - first) * static_cast<double>(n) / static_cast<double>(n - 1) : wall;
  std::printf(
      ", \"seconds\": %.4f, \"steady_seconds\": %.4f, \"first_step_seconds\": %.4f, "
      "\"cpu_seconds\": %.4f, \"steps\": %lld, \"test_accuracy\": %.5f",
      wall, steady, first, cpu, static_cast<long long>(n), r.metric("accuracy"));
  print_cost(train_step_cost(*model), static_cast<double>(n));
}

// Steps on synthetic batches (w4 w6 w9): the median step after --warmup steps.
void run_steps(const Args& a, const config::TrainConfig& c, nn::FitOptions fo,
               const std::shared_ptr<StepTimer>& timer) {
  Shape sample;
  data::DatasetPtr ds = synthetic(a, c, &sample);
  std::shared_ptr<nn::Model> model = config::make_model(c, sample);
  config::compile_model(*model, c, a.warmup + a.steps);
  if (a.warmup > 0) {
    fo.steps_per_epoch = a.warmup;
    model->fit(ds, fo);
  }
  timer->seconds_.clear();
  fo.steps_per_epoch = a.steps;
  double c0 = cpu_seconds();
  model->fit(ds, fo);
  double cpu = (cpu_seconds() - c0) / static_cast<double>(a.steps);
  std::printf(", \"seconds\": %.6f, \"cpu_seconds\": %.6f, \"steps\": %lld",
              median(timer->seconds_), cpu, static_cast<long long>(a.steps));
  print_cost(train_step_cost(*model), 1.0);
  if (a.profile) {
    OpTimeSink sink;
    sink.start();
    set_trace_sink(&sink);
    model->fit(ds, fo);
    set_trace_sink(nullptr);
    sink.print(stderr, *train_step(*model), a.steps);
  }
}

// Inference (i-cnn, i-resnet18): the model exported and loaded as `tern serve` loads it.
void run_inference(const Args& a) {
  const bool cnn = a.workload == "i-cnn";
  config::TrainConfig c = workload_config(cnn ? "w3" : "w4", a.seed, "float32", a.data_dir);
  const Shape sample = cnn ? Shape({28, 28}) : Shape({32, 32, 3});
  std::shared_ptr<nn::Model> model = config::make_model(c, sample);
  model->build();
  std::vector<int64_t> dims = {a.batch};
  for (int64_t d : sample.dims()) dims.push_back(d);
  Tensor x(DType::kF32, Shape(dims));
  std::mt19937_64 rng(static_cast<uint64_t>(a.seed));
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = unit(rng);
  std::string dir = (std::filesystem::temp_directory_path() /
                     str_cat("tern_infer_bench_", getpid(), "_", a.workload))
                        .string();
  std::filesystem::remove_all(dir);
  model->save(dir);
  // The served graph compiled as the servable compiles it (its variables frozen and folded:
  // batch norms into the convolutions, weights in the kernels' layouts): the work of one call
  // for the floor, and what --profile traces. Dropped before the servable loads unless
  // profiling, so the reported peak RSS is the servable's.
  auto contents = std::make_unique<serve::ModelDirContents>(serve::read_model_dir(dir));
  auto vars = std::make_unique<runtime::VariableStore>();
  for (const auto& [name, t] : contents->weights) vars->create(name, t);
  runtime::CompileOptions options;
  options.frozen_variables = true;
  const ir::Graph& g = *contents->graph;
  std::unique_ptr<runtime::Executable> exe =
      serve::graph_batch_size(g) == a.batch
          ? runtime::Executable::compile(g, *vars, options)
          : runtime::Executable::compile(*serve::rebatch(g, a.batch), *vars, options);
  const GraphCost cost = graph_cost(exe->graph());
  const std::string input_tensor =
      contents->signatures.at(serve::kDefaultSignature).input_tensors.begin()->second;
  if (!a.profile) exe.reset(), vars.reset(), contents.reset();
  serve::ServablePtr servable = serve::load_servable(dir);
  std::filesystem::remove_all(dir);
  const serve::Signature& sig = servable->signatures().at(serve::kDefaultSignature);
  TERN_CHECK(sig.inputs.size() == 1, "inference bench: the signature has ", sig.inputs.size(),
             " inputs");
  serve::TensorMap in{{sig.inputs.begin()->first, serve::TensorValue::from_tensor(x)}};
  for (int64_t i = 0; i < std::max<int64_t>(a.warmup, 1); ++i)
    servable->run(serve::kDefaultSignature, in);
  std::vector<double> secs;
  double c0 = cpu_seconds();
  Clock::time_point w0 = Clock::now();
  for (int64_t i = 0; i < a.steps; ++i) {
    Clock::time_point t0 = Clock::now();
    servable->run(serve::kDefaultSignature, in);
    secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  double wall = std::chrono::duration<double>(Clock::now() - w0).count();
  double cpu = (cpu_seconds() - c0) / static_cast<double>(a.steps);
  std::sort(secs.begin(), secs.end());
  auto pct = [&](double p) {
    return secs[std::min(secs.size() - 1,
                         static_cast<size_t>(p * static_cast<double>(secs.size())))];
  };
  std::printf(
      ", \"batch\": %lld, \"seconds\": %.7f, \"p50_seconds\": %.7f, \"p99_seconds\": %.7f, "
      "\"rows_per_second\": %.2f, \"cpu_seconds\": %.7f, \"steps\": %lld",
      static_cast<long long>(a.batch), median(secs), pct(0.5), pct(0.99),
      static_cast<double>(a.batch * a.steps) / wall, cpu, static_cast<long long>(a.steps));
  print_cost(cost, 1.0);
  if (a.profile) {
    // Per node: the served graph at --batch, --steps calls.
    for (int64_t i = 0; i < std::max<int64_t>(a.warmup, 1); ++i) {
      exe->feed(input_tensor, x);
      exe->run();
    }
    OpTimeSink sink;
    sink.start();
    set_trace_sink(&sink);
    for (int64_t i = 0; i < a.steps; ++i) {
      exe->feed(input_tensor, x);
      exe->run();
    }
    set_trace_sink(nullptr);
    sink.print(stderr, *exe, a.steps);
  }
}

int run(const Args& a) {
  runtime::set_intra_op_threads(a.threads);
  if (a.workload == "peak") return run_peak(a);
  const bool epoch_mode = a.workload == "w1" || a.workload == "w2" || a.workload == "w3";
  const bool inference = a.workload == "i-cnn" || a.workload == "i-resnet18";
  config::TrainConfig c = inference ? config::TrainConfig{} : config_for(a);
  if (!a.order_out.empty()) {
    config::ClassificationData d = config::load_data(c);
    write_order(a.order_out, a, c, d.train_x.shape()[0]);
    std::printf("{\"workload\": \"%s\", \"order_out\": \"%s\", \"rows\": %lld}\n",
                a.workload.c_str(), a.order_out.c_str(),
                static_cast<long long>(d.train_x.shape()[0]));
    return 0;
  }
  std::printf(
      "{\"workload\": \"%s\", \"framework\": \"tern\", \"threads\": %d, \"precision\": \"%s\"",
      a.workload.c_str(), runtime::intra_op_threads(), a.precision.c_str());
  auto timer = std::make_shared<StepTimer>();
  nn::FitOptions fo;
  fo.verbose = 0;
  fo.seed = static_cast<uint64_t>(a.seed);
  fo.callbacks = {timer};
  if (!a.first_steps_dir.empty()) {
    run_first_steps(a, c);
  } else if (inference) {
    run_inference(a);
  } else if (epoch_mode) {
    run_epoch(a, c, fo, timer);
  } else {
    run_steps(a, c, fo, timer);
  }
  std::printf(", \"peak_rss_mb\": %.1f}\n", peak_rss_mb());
  return 0;
}

}  // namespace
}  // namespace tern::bench

int main(int argc, char** argv) {
  tern::runtime::use_bounded_openmp_spin(argv);
  tern::bench::Args args;
  try {
    args = tern::bench::parse_args(argc, argv);
  } catch (const std::exception& e) {  // usage errors: exit 2
    std::fprintf(stderr, "workloads_bench: %s\n", e.what());
    return 2;
  }
  try {
    return tern::bench::run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "workloads_bench: %s\n", e.what());
    return 1;
  }
}
