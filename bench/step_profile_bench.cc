// Step profiler for a training config: trains `--warmup` steps through fit() (compiling the step),
// then runs the compiled train step `--steps` more times on one batch and prints, per node, the
// wall time summed over the runs (ranked), the step's wall and process CPU time, and the time the
// input pipeline alone needs for one epoch. Finds the next hot spot:
//   build-speed/bench/step_profile_bench examples/fashion_mnist.toml --steps 30
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_clock.h"
#include "bench/op_time_sink.h"
#include "tern/config/builders.h"
#include "tern/config/training_data.h"
#include "tern/data/iterator.h"
#include "tern/runtime/openmp_wait.h"
#include "tern/runtime/runtime.h"
#include "tern/train/training_state.h"

namespace {

using namespace tern;

struct Args {
  std::string config;
  std::vector<std::string> sets;
  int warmup = 3;
  int steps = 20;
  bool pipeline = true;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      TERN_CHECK_ARG(i + 1 < argc, "flag ", s, " needs a value");
      return argv[++i];
    };
    if (s == "--set") {
      a.sets.push_back(next());
    } else if (s == "--warmup") {
      a.warmup = std::stoi(next());
    } else if (s == "--steps") {
      a.steps = std::stoi(next());
    } else if (s == "--no-pipeline") {
      a.pipeline = false;
    } else {
      a.config = s;
    }
  }
  TERN_CHECK_ARG(
      !a.config.empty(),
      "usage: step_profile_bench CONFIG [--set k=v]... [--warmup N] [--steps N] [--no-pipeline]");
  return a;
}

int run(int argc, char** argv) {
  Args a = parse_args(argc, argv);
  config::TrainConfig c = config::load_config(a.config, a.sets);
  runtime::set_intra_op_threads(c.training.threads);
  config::ClassificationData d = config::load_data(c);
  data::DatasetPtr ds = config::training_pipeline(c, d.train_x, d.train_y);

  if (a.pipeline) {
    double w0 = bench::wall_seconds(), c0 = bench::cpu_seconds();
    data::Iterator it = ds->make_iterator(0);
    int64_t batches = 0;
    while (it.next()) ++batches;
    std::printf("input pipeline alone: %lld batches in %.3f s wall, %.3f s cpu\n",
                static_cast<long long>(batches), bench::wall_seconds() - w0,
                bench::cpu_seconds() - c0);
  }

  const int64_t batch = c.training.fit.batch_size;
  int64_t steps_per_epoch = (d.train_x.shape()[0] + batch - 1) / batch;
  std::shared_ptr<nn::Model> model = config::make_model(c, d.sample_shape);
  config::compile_model(*model, c, steps_per_epoch);
  nn::FitOptions fo;
  fo.epochs = 1;
  fo.steps_per_epoch = a.warmup;
  fo.verbose = 0;
  double w0 = bench::wall_seconds(), c0 = bench::cpu_seconds();
  model->fit(ds, fo);
  std::printf("warmup: %d steps (with compile) in %.3f s wall, %.3f s cpu\n", a.warmup,
              bench::wall_seconds() - w0, bench::cpu_seconds() - c0);

  train::TrainingState* s = model->training_state();
  train::CompiledStep* step = nullptr;
  for (auto& [key, cs] : s->steps) {
    if (cs.exe && cs.exe->graph().name() == "train_step") step = &cs;
  }
  TERN_CHECK_ARG(step != nullptr, "no train step was compiled");
  runtime::Executable& exe = *step->exe;
  data::Iterator it = ds->make_iterator(1);
  data::Element e = *it.next();
  exe.feed_at(step->x, e[0]);
  exe.feed_at(step->y, e[1]);
  if (step->rng >= 0) exe.feed_at(step->rng, Tensor::scalar(DType::kI64, 7));
  if (step->lr >= 0) exe.feed_at(step->lr, Tensor::scalar(DType::kF32, 1e-4));
  if (step->step >= 0) exe.feed_at(step->step, Tensor::scalar(DType::kI64, 10));

  // Untraced runs first: the step time without trace overhead.
  w0 = bench::wall_seconds();
  c0 = bench::cpu_seconds();
  for (int i = 0; i < a.steps; ++i) exe.run();
  double wall = (bench::wall_seconds() - w0) / a.steps, cpu = (bench::cpu_seconds() - c0) / a.steps;
  std::printf("train step: %.2f ms wall, %.2f ms cpu (%d runs, %d threads, arena %.1f MB)\n",
              wall * 1e3, cpu * 1e3, a.steps, runtime::intra_op_threads(),
              static_cast<double>(exe.arena_bytes()) / 1e6);

  bench::OpTimeSink sink;
  sink.start();
  set_trace_sink(&sink);
  for (int i = 0; i < a.steps; ++i) exe.run();
  set_trace_sink(nullptr);
  sink.print(stdout, exe, a.steps);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tern::runtime::use_bounded_openmp_spin(argv);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "step_profile_bench: %s\n", e.what());
    return 1;
  }
}
