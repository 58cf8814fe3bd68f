// `tern train`, `tern eval`, `tern predict`, `tern summary`: config-driven training and use of
// the trained weights.
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tern/data/iterator.h"
#include "tern/io/atomic_file.h"
#include "tern/runtime/runtime.h"
#include "tern/train/callbacks.h"
#include "tern/train/training_state.h"
#include "tools/tern/commands.h"
#include "tools/tern/observe_setup.h"
#include "tools/tern/training_setup.h"

namespace tern::tools {
namespace {

struct CommonFlags {
  std::string config;
  std::vector<std::string> sets;
};

void add_common(CLI::App& app, CommonFlags& f) {
  app.add_option("config", f.config, "training config (TOML), e.g. examples/fashion_mnist.toml")
      ->required();
  app.add_option("--set", f.sets, "override a config key: --set training.epochs=1 (repeatable)");
}

int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return -1;
}

TrainConfig setup(const CommonFlags& f) {
  TrainConfig c = load_config(f.config, f.sets);
  runtime::set_intra_op_threads(c.threads);
  return c;
}

std::string default_weights(const TrainConfig& c) {
  return c.output_dir + "/weights.safetensors";
}

// Row i's class: the index itself, or the argmax of a one-hot / probability row.
int64_t label_at(const Tensor& y, int64_t i) {
  if (y.rank() <= 1) return static_cast<int64_t>(y.get(i));
  const int64_t k = y.num_elements() / y.shape()[0];
  int64_t best = 0;
  for (int64_t j = 1; j < k; ++j) {
    if (y.get(i * k + j) > y.get(i * k + best)) best = j;
  }
  return best;
}

}  // namespace

int cmd_train(int argc, char** argv) {
  CLI::App app{"Train the model a config describes; prints the final test metrics.", "tern train"};
  CommonFlags f;
  std::string metrics_json;
  bool quiet = false;
  add_common(app, f);
  app.add_option(
      "--metrics-json", metrics_json,
      "write test_accuracy, test_loss, epochs, train_seconds, samples_per_second, weights_sha256");
  app.add_flag("--quiet", quiet, "no per-epoch output");
  bool resume = false, ignore_config_change = false;
  app.add_flag("--resume", resume,
               "continue from the newest complete checkpoint in [callbacks.checkpoint] dir (exact "
               "data position)");
  app.add_flag("--ignore-config-change", ignore_config_change,
               "--resume even if the config hash differs");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  TrainConfig c = setup(f);
  TrainingData d = make_training_data(c, /*with_train=*/true);
  int64_t steps = d.steps_per_epoch;
  std::shared_ptr<nn::Model> model = make_model(c, d.sample_shape);
  compile_model(*model, c, steps);
  if (!quiet) {
    std::cout << "tern train " << c.path << ": model " << c.model << " (" << model->count_params()
              << " params), ";
    if (c.pipeline.enabled()) std::cout << "data.source " << c.pipeline.source << ", ";
    if (d.train_samples >= 0) std::cout << d.train_samples << " training samples, ";
    std::cout << "batch " << c.batch_size << ", " << c.epochs << " epochs, "
              << runtime::intra_op_threads() << " threads\n";
  }
  if (resume) {
    std::optional<std::string> from = resume_from_checkpoint(*model, c, ignore_config_change);
    const auto& r = model->training_state()->resume;
    if (!quiet && from) {
      std::cout << "resuming from " << *from << " (epoch " << r->epoch << ", step "
                << r->global_step << ")\n";
    } else if (!quiet) {
      std::cout << "--resume: no checkpoint in " << checkpoint_dir(c)
                << "; starting from scratch\n";
    }
  }
  nn::FitOptions fo;
  fo.epochs = c.epochs;
  fo.validation_data = d.validation;
  fo.callbacks = make_callbacks(c);
  for (auto& cb : make_observe_callbacks(c)) fo.callbacks.push_back(std::move(cb));
  fo.steps_per_epoch = c.steps_per_epoch;
  fo.verbose = quiet ? 0 : 1;
  fo.gradient_accumulation_steps = c.gradient_accumulation_steps;
  fo.seed = static_cast<uint64_t>(c.seed);
  auto t0 = std::chrono::steady_clock::now();
  train::History h = model->fit(d.train, fo);
  double train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int epochs_run = static_cast<int>(h.epoch.size());
  int64_t samples = h.stats.samples;  // a pipeline of unknown size: what fit saw
  if (d.train_samples >= 0) {
    samples = std::min(d.train_samples, (c.steps_per_epoch > 0 ? c.steps_per_epoch * c.batch_size
                                                               : d.train_samples)) *
              epochs_run;
  }
  nn::EvaluateResult test = model->evaluate(d.test);
  std::string weights = save_weights(*model, c.output_dir);
  std::string sha = weights_sha256(*model);
  nlohmann::ordered_json j;
  j["test_loss"] = test.loss;
  for (const auto& [name, v] : test.metrics) j["test_" + name] = v;
  j["epochs"] = epochs_run;
  j["train_seconds"] = train_seconds;
  j["samples_per_second"] = train_seconds > 0 ? static_cast<double>(samples) / train_seconds : 0;
  j["weights_sha256"] = sha;
  const train::FitStats& st = h.stats;
  j["monitor"] = {{"epoch_seconds_min", st.epoch_seconds_min()},
                  {"epoch_seconds_mean", st.epoch_seconds_mean()},
                  {"epoch_seconds_max", st.epoch_seconds_max()},
                  {"steps", st.steps},
                  {"steps_per_second", st.steps_per_second()},
                  {"samples_per_second", st.samples_per_second()},
                  {"input_wait_seconds", st.input_wait_seconds},
                  {"compute_seconds", st.compute_seconds},
                  {"validation_seconds", st.validation_seconds}};
  j["weights"] = weights;
  std::cout << "test_loss: " << std::fixed << std::setprecision(4) << test.loss;
  for (const auto& [name, v] : test.metrics) std::cout << " - test_" << name << ": " << v;
  std::cout << "\ntrained " << epochs_run << " epochs in " << std::setprecision(1) << train_seconds
            << " s (" << std::setprecision(0) << j["samples_per_second"].get<double>()
            << " samples/s); weights: " << weights << "\nweights_sha256: " << sha << "\n";
  if (!metrics_json.empty()) {
    std::filesystem::path p(metrics_json);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
    io::write_file_atomically(metrics_json, j.dump(2) + "\n");
  }
  return 0;
}

int cmd_eval(int argc, char** argv) {
  CLI::App app{"Evaluate trained weights on the config's test split.", "tern eval"};
  CommonFlags f;
  std::string weights;
  add_common(app, f);
  app.add_option("--weights", weights, "weights file (default: <output.dir>/weights.safetensors)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  TrainConfig c = setup(f);
  TrainingData d = make_training_data(c, /*with_train=*/false);
  std::shared_ptr<nn::Model> model = make_model(c, d.sample_shape);
  load_weights(*model, weights.empty() ? default_weights(c) : weights);
  compile_model(*model, c, 1);
  nn::EvaluateResult r = model->evaluate(d.test);
  std::cout << std::fixed << std::setprecision(4) << "test_loss: " << r.loss;
  for (const auto& [name, v] : r.metrics) std::cout << " - test_" << name << ": " << v;
  std::cout << "\n";
  return 0;
}

int cmd_predict(int argc, char** argv) {
  CLI::App app{
      "Predict classes for the config's test images; writes CSV (index, predicted, label, "
      "probabilities).",
      "tern predict"};
  CommonFlags f;
  std::string weights, output;
  int64_t limit = 10;
  add_common(app, f);
  app.add_option("--weights", weights, "weights file (default: <output.dir>/weights.safetensors)");
  app.add_option("--output", output, "CSV file to write (default: stdout)");
  app.add_option("--limit", limit, "number of test images (-1 = all)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  TrainConfig c = setup(f);
  TERN_CHECK_ARG(limit != 0, "predict: nothing to predict (--limit ", limit, ")");
  Tensor test_x, test_y;
  Shape sample_shape;
  if (c.pipeline.enabled()) {
    TrainingData d = make_training_data(c, /*with_train=*/false);
    data::Element rows = first_rows(d.test, limit);
    test_x = rows[0];
    test_y = rows[1];
    sample_shape = d.sample_shape;
  } else {
    ClassificationData d = load_data(c);
    test_x = d.test_x;
    test_y = d.test_y;
    sample_shape = d.sample_shape;
  }
  std::shared_ptr<nn::Model> model = make_model(c, sample_shape);
  load_weights(*model, weights.empty() ? default_weights(c) : weights);
  int64_t n = test_x.shape()[0];
  if (limit >= 0) n = std::min(n, limit);
  TERN_CHECK_ARG(n > 0, "predict: nothing to predict (--limit ", limit, ")");
  Tensor logits = model->predict(test_x.slice_rows(0, n), std::max<int64_t>(c.batch_size, 256));
  std::ofstream file;
  if (!output.empty()) {
    file.open(output);
    TERN_CHECK_ARG(file.good(), "predict: cannot write '", output, "'");
  }
  std::ostream& os = output.empty() ? std::cout : file;
  int64_t classes = logits.shape()[1];
  os << "index,predicted,label";
  for (int64_t k = 0; k < classes; ++k) os << ",p" << k;
  os << "\n" << std::setprecision(5);
  for (int64_t i = 0; i < n; ++i) {
    double mx = -1e300;
    int64_t arg = 0;
    for (int64_t k = 0; k < classes; ++k) {
      double v = logits.get(i * classes + k);
      if (v > mx) {
        mx = v;
        arg = k;
      }
    }
    double z = 0;
    for (int64_t k = 0; k < classes; ++k) z += std::exp(logits.get(i * classes + k) - mx);
    os << i << "," << arg << "," << label_at(test_y, i);
    for (int64_t k = 0; k < classes; ++k)
      os << "," << std::exp(logits.get(i * classes + k) - mx) / z;
    os << "\n";
  }
  return 0;
}

int cmd_summary(int argc, char** argv) {
  CLI::App app{"Print the model a config describes: layers, output shapes, parameter counts.",
               "tern summary"};
  CommonFlags f;
  add_common(app, f);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  TrainConfig c = setup(f);
  // The input shape comes from the data files' headers (or a pipeline's first test batch).
  Shape sample_shape = c.pipeline.enabled()
                           ? make_training_data(c, /*with_train=*/false).sample_shape
                           : load_data(c).sample_shape;
  std::shared_ptr<nn::Model> model = make_model(c, sample_shape);
  model->summary(std::cout);
  return 0;
}

}  // namespace tern::tools
