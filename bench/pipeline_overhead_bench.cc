// Input-pipeline overhead on training: one epoch of a config's model (default: the CNN of
// examples/fashion_mnist.toml) fed four ways in the same process, with the same compiled step and
// batch signature, rounds alternating the order:
//   memory:   batches made once before timing (shuffled, stacked): no input work at all
//   tensors:  in-memory tensors, shuffle, batch, prefetch (`data.dataset`, tern train's default)
//   tfrecord: the pipeline of examples/fashion_mnist_tfrecord.toml: TFRecord file, shuffle the
//             records, batch, parse the tf.Examples (AUTOTUNE), scale, prefetch
//   idx:      the same transforms over the IDX files (data.source = "fashion_mnist")
// Prints each epoch's wall and process CPU time, the per-variant minimum and mean, the ratios to
// `memory` (target for tfrecord: <= 1.05), the per-stage statistics of the last tfrecord epoch and
// the pipeline alone cut after each stage.
//   build/bench/pipeline_overhead_bench [--rounds 2] [--steps N] [--variants memory,tfrecord]
//       [--dir DIR] [--config TOML] [--tfrecord-config TOML] [--set key=value]... [--pipeline-only]
// The TFRecord files are written to DIR (default /tmp/tern_pipeline_bench) by `tern data convert`'s
// library function when missing.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_clock.h"
#include "tern/config/builders.h"
#include "tern/config/training_data.h"
#include "tern/data/convert.h"
#include "tern/data/data.h"
#include "tern/data/pipeline_spec.h"
#include "tern/runtime/openmp_wait.h"
#include "tern/runtime/runtime.h"
#include "tern/train/training_state.h"

namespace {

using namespace tern;

struct Args {
  std::string config = "examples/fashion_mnist.toml";
  std::string tfrecord_config = "examples/fashion_mnist_tfrecord.toml";
  std::string dir = "/tmp/tern_pipeline_bench";
  std::vector<std::string> sets;
  int rounds = 2;
  int64_t steps = -1;
  bool pipeline_only = false;  // just the per-stage breakdown
  std::string variants = "memory,tensors,tfrecord,idx";
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
    } else if (s == "--rounds") {
      a.rounds = std::stoi(next());
    } else if (s == "--steps") {
      a.steps = std::stoll(next());
    } else if (s == "--dir") {
      a.dir = next();
    } else if (s == "--config") {
      a.config = next();
    } else if (s == "--tfrecord-config") {
      a.tfrecord_config = next();
    } else if (s == "--variants") {
      a.variants = next();
    } else if (s == "--pipeline-only") {
      a.pipeline_only = true;
    } else {
      throw_error(
          ErrorCode::kInvalidArgument,
          "usage: pipeline_overhead_bench [--rounds N] [--steps N] [--dir DIR] [--config TOML] "
          "[--set key=value]...; unknown argument '",
          s, "'");
    }
  }
  return a;
}

// Writes DIR/{train,test}.tfrecord from the Fashion-MNIST IDX files (raw pixel bytes).
void ensure_tfrecords(const std::string& dir, const std::string& idx_dir) {
  std::filesystem::create_directories(dir);
  for (const auto& [split, idx] : {std::pair{"train", "train"}, std::pair{"test", "t10k"}}) {
    std::string out = dir + "/" + split + ".tfrecord";
    if (std::filesystem::exists(out)) continue;
    data::ConvertOptions o;
    o.labels = idx_dir + "/" + idx + "-labels-idx1-ubyte.gz";
    o.image_format = "raw";
    data::ConvertResult r =
        data::convert_image_dataset(idx_dir + "/" + idx + "-images-idx3-ubyte.gz", out, o);
    std::printf("%s\n", r.summary.c_str());
  }
}

// Every batch of one shuffled pass, made before timing.
data::DatasetPtr batches_in_memory(const config::TrainConfig& c, const Tensor& x, const Tensor& y) {
  data::DatasetPtr ds = data::from_tensor_slices({x, y})
                            ->shuffle(x.shape()[0], c.training.fit.seed)
                            ->batch(c.training.fit.batch_size);
  std::vector<data::Element> batches = ds->make_iterator().take();
  return data::from_elements(std::move(batches));
}

// The per-stage report of the training iterator, taken as the epoch ends.
class StageReport : public train::Callback {
 public:
  void on_epoch_end(int, train::Logs&) override {
    const train::TrainingState* s = model()->training_state();
    if (s && s->progress.iterator) report = s->progress.iterator->stats_report();
  }
  std::string report;
};

struct Variant {
  std::string name;
  data::DatasetPtr dataset;
  std::vector<double> seconds, cpu, wait;
};

// One pass of the pipeline cut after each transform: wall and process CPU time, so the cost of
// every stage shows (the CPU time is what a training step loses on a machine with no idle core).
void pipeline_breakdown(const config::TrainConfig& tf) {
  const data::PipelineSpec& spec = tf.data.pipeline;
  std::printf("\ntfrecord pipeline alone, cut after each stage (one pass each):\n");
  for (size_t n = 0; n <= spec.transforms.size(); ++n) {
    data::PipelineSpec cut = spec;
    cut.transforms.resize(n);
    std::string name = "source";
    for (const auto& t : cut.transforms) name += " > " + data::transform_kind_name(t.kind);
    data::DatasetPtr ds =
        data::build_input_pipeline(cut, tf.data.train_inputs, data::PipelineMode::kTrain);
    double w0 = bench::wall_seconds(), c0 = bench::cpu_seconds();
    data::Iterator it = ds->make_iterator(7);
    int64_t elements = 0;
    while (it.next()) ++elements;
    std::printf("  %-58s %7lld elements %7.3f s wall %7.3f s cpu\n", name.c_str(),
                static_cast<long long>(elements), bench::wall_seconds() - w0,
                bench::cpu_seconds() - c0);
  }
}

int run(int argc, char** argv) {
  Args a = parse_args(argc, argv);
  config::TrainConfig c = config::load_config(a.config, a.sets);
  runtime::set_intra_op_threads(c.training.threads);
  ensure_tfrecords(a.dir, c.data.dir);
  std::vector<std::string> tf_sets = a.sets;
  tf_sets.push_back("data.train_files=" + a.dir + "/train.tfrecord");
  tf_sets.push_back("data.test_files=" + a.dir + "/test.tfrecord");
  config::TrainConfig tf = config::load_config(a.tfrecord_config, tf_sets);
  if (a.pipeline_only) {
    pipeline_breakdown(tf);
    return 0;
  }

  config::ClassificationData d = config::load_data(c);
  std::vector<Variant> variants;
  variants.push_back({"memory", batches_in_memory(c, d.train_x, d.train_y), {}, {}, {}});
  variants.push_back({"tensors", config::training_pipeline(c, d.train_x, d.train_y), {}, {}, {}});
  variants.push_back({"tfrecord", config::make_training_data(tf, true).train, {}, {}, {}});
  // The same transforms over the IDX source.
  config::TrainConfig idx = tf;
  idx.data.source = "fashion_mnist";
  idx.data.pipeline.source.kind = data::SourceKind::kIdx;
  idx.data.train_inputs = {c.data.dir + "/train-images-idx3-ubyte.gz",
                           c.data.dir + "/train-labels-idx1-ubyte.gz"};
  idx.data.test_inputs = {c.data.dir + "/t10k-images-idx3-ubyte.gz",
                          c.data.dir + "/t10k-labels-idx1-ubyte.gz"};
  auto& ts = idx.data.pipeline.transforms;
  ts.erase(std::remove_if(ts.begin(), ts.end(),
                          [](const auto& t) { return t.kind == data::TransformKind::kParse; }),
           ts.end());
  variants.push_back({"idx", config::make_training_data(idx, true).train, {}, {}, {}});

  std::shared_ptr<nn::Model> model = config::make_model(c, d.sample_shape);
  const int64_t batch = c.training.fit.batch_size;
  const int64_t steps = (d.train_x.shape()[0] + batch - 1) / batch;
  config::compile_model(*model, c, steps);
  nn::FitOptions fo;
  fo.epochs = 1;
  fo.verbose = 0;
  fo.steps_per_epoch = 5;
  model->fit(variants[0].dataset, fo);  // compiles the step
  fo.steps_per_epoch = a.steps;
  auto report = std::make_shared<StageReport>();
  std::printf("model %s, %lld steps per epoch of batch %lld, %d threads, %d rounds\n",
              c.model.name.c_str(),
              static_cast<long long>(a.steps > 0 ? std::min(a.steps, steps) : steps),
              static_cast<long long>(batch), runtime::intra_op_threads(), a.rounds);
  for (int r = 0; r < a.rounds; ++r) {
    std::vector<size_t> order;
    for (size_t i = 0; i < variants.size(); ++i) {
      if (("," + a.variants + ",").find("," + variants[i].name + ",") != std::string::npos)
        order.push_back(i);
    }
    TERN_CHECK_ARG(!order.empty() && order[0] == 0,
                   "--variants must include memory (the baseline)");
    if (r % 2 == 1) std::reverse(order.begin(), order.end());
    for (size_t i : order) {
      Variant& v = variants[i];
      fo.callbacks = v.name == "tfrecord" ? std::vector<train::CallbackPtr>{report}
                                          : std::vector<train::CallbackPtr>{};
      double t0 = bench::wall_seconds(), c0 = bench::cpu_seconds();
      train::History h = model->fit(v.dataset, fo);
      v.seconds.push_back(bench::wall_seconds() - t0);
      v.cpu.push_back(bench::cpu_seconds() - c0);
      v.wait.push_back(h.stats.input_wait_seconds);
      std::printf("round %d %-9s %8.3f s wall %8.3f s cpu (input wait %.3f s)\n", r, v.name.c_str(),
                  v.seconds.back(), v.cpu.back(), v.wait.back());
      std::fflush(stdout);
    }
  }
  auto min_of = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  auto mean_of = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  };
  // Wall-time ratios need an otherwise idle machine; the CPU-time ratio (all threads of the
  // process) is what the input work costs the training threads when no core is spare.
  const Variant& base = variants[0];
  std::printf("\n%-9s %9s %9s %9s %9s %9s %9s %9s\n", "variant", "min s", "mean s", "min x",
              "mean x", "cpu s", "cpu x", "wait s");
  for (const auto& v : variants) {
    if (v.seconds.empty()) continue;
    std::printf("%-9s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", v.name.c_str(),
                min_of(v.seconds), mean_of(v.seconds), min_of(v.seconds) / min_of(base.seconds),
                mean_of(v.seconds) / mean_of(base.seconds), min_of(v.cpu),
                min_of(v.cpu) / min_of(base.cpu), mean_of(v.wait));
  }
  // Epochs of the same round ran next to each other (ABBA order), under similar load from
  // anything else on the machine: the median of the per-round ratios is the steadiest figure.
  // Two baselines: `memory` (no input work at all) and `tensors` (fit on in-memory tensors).
  auto per_round = [](const Variant& v, const Variant& b) {
    std::vector<double> ratios;
    for (size_t r = 0; r < v.seconds.size() && r < b.seconds.size(); ++r)
      ratios.push_back(v.seconds[r] / b.seconds[r]);
    std::printf("%-9s per-round wall ratio to %s: median %.3f (min %.3f, max %.3f)\n",
                v.name.c_str(), b.name.c_str(), bench::median(ratios),
                *std::min_element(ratios.begin(), ratios.end()),
                *std::max_element(ratios.begin(), ratios.end()));
  };
  const Variant* tensors = nullptr;
  for (const auto& v : variants) {
    if (v.name == "tensors" && !v.seconds.empty()) tensors = &v;
  }
  for (const auto& v : variants) {
    if (v.seconds.empty() || &v == &base) continue;
    per_round(v, base);
    if (tensors != nullptr && &v != tensors) per_round(v, *tensors);
  }
  std::printf("\nstages of the last tfrecord epoch:\n%s", report->report.c_str());
  pipeline_breakdown(tf);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tern::runtime::use_bounded_openmp_spin(argv);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipeline_overhead_bench: %s\n", e.what());
    return 1;
  }
}
