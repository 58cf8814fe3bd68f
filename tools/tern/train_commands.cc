// `tern train`, `tern eval`, `tern predict`, `tern summary`: flags and printing around
// tern/config (config::Trainer and the builders).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "tern/base/version.h"
#include "tern/config/builders.h"
#include "tern/config/resume.h"
#include "tern/config/trainer.h"
#include "tern/config/training_data.h"
#include "tern/dist/communicator.h"
#include "tern/io/atomic_file.h"
#include "tern/runtime/runtime.h"
#include "tern/train/interrupt.h"
#include "tern/train/model_weights.h"
#include "tern/train/training_state.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"
#include "tools/tern/train_workers.h"

namespace tern::tools {
namespace {

using config::TrainConfig;

struct CommonFlags {
  std::string config;
  std::vector<std::string> sets;
};

void add_common(CLI::App& app, CommonFlags& f) {
  app.add_option("config", f.config, "training config (TOML), e.g. examples/fashion_mnist.toml")
      ->required();
  app.add_option("--set", f.sets, "override a config key: --set training.epochs=1 (repeatable)");
}

TrainConfig setup(const CommonFlags& f) {
  TrainConfig cfg = config::load_config(f.config, f.sets);
  runtime::set_intra_op_threads(cfg.training.threads);
  return cfg;
}

void print_metrics(const nn::EvaluateResult& r) {
  std::cout << std::fixed << std::setprecision(4) << "test_loss: " << r.loss;
  for (const auto& [name, v] : r.metrics) std::cout << " - test_" << name << ": " << v;
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

// --- tern predict ---

// The first `limit` test rows (all of them from in-memory tensors).
struct TestRows {
  Tensor x, y;
  Shape sample_shape;
};

TestRows test_rows(const TrainConfig& cfg, int64_t limit) {
  if (!cfg.data.uses_pipeline()) {
    config::ClassificationData d = config::load_data(cfg);
    return {d.test_x, d.test_y, d.sample_shape};
  }
  config::TrainingData d = config::make_training_data(cfg, /*with_train=*/false);
  data::Element rows = config::first_rows(d.test, limit);
  return {rows[0], rows[1], d.sample_shape};
}

// CSV: index, predicted class, label, then the softmax of each row's logits.
void write_predictions(std::ostream& os, const Tensor& logits, const Tensor& labels, int64_t n) {
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
    os << i << "," << arg << "," << label_at(labels, i);
    for (int64_t k = 0; k < classes; ++k)
      os << "," << std::exp(logits.get(i * classes + k) - mx) / z;
    os << "\n";
  }
}

// --- tern train ---

struct TrainFlags {
  CommonFlags common;
  std::string metrics_json;
  bool quiet = false, resume = false, ignore_config_change = false;
  int workers = 0;
};

// The batch part of the banner: the pipeline's effective batch (which may be a [[data.transforms]]
// batch rather than training.batch_size), each worker's share, and the batch an update sees under
// gradient accumulation.
std::string describe_batch(const TrainConfig& cfg, int workers) {
  const config::TrainBatch b = config::train_batch(cfg);
  std::string out = str_cat("batch ", b.size);
  if (b.key != "training.batch_size") {
    out += str_cat(
        " (", b.key,
        b.size != cfg.training.fit.batch_size
            ? str_cat("; training.batch_size = ", cfg.training.fit.batch_size, " does not apply")
            : "",
        ")");
  }
  if (workers > 1) out += str_cat(" (", b.size / workers, " per worker)");
  const int k = cfg.training.fit.gradient_accumulation_steps;
  if (k > 1) out += str_cat(" x ", k, " accumulated = ", b.size * k, " per update");
  return out;
}

void print_header(config::Trainer& trainer) {
  const TrainConfig& cfg = trainer.config();
  const int workers = trainer.workers();
  std::cout << "tern train " << cfg.path << ": model " << cfg.model.name << " ("
            << trainer.model().count_params() << " params), ";
  if (cfg.data.uses_pipeline()) std::cout << "data.source " << cfg.data.source << ", ";
  if (trainer.data().train_samples >= 0) {
    std::cout << trainer.data().train_samples
              << (workers > 1 ? " training samples per worker, " : " training samples, ");
  }
  std::cout << describe_batch(cfg, workers) << ", " << cfg.training.fit.epochs << " epochs, "
            << runtime::intra_op_threads() << " threads";
  if (workers > 1) {
    std::cout << " per worker, " << workers << " workers ("
              << dist::reduce_mode_name(cfg.distribute.options.buckets.mode) << " all-reduce)";
  }
  std::cout << "\n";
  if (workers > 1 && !trainer.data().shard_description.empty())
    std::cout << "rank 0 input: " << trainer.data().shard_description << "\n";
}

void resume(config::Trainer& trainer, const TrainFlags& f) {
  std::optional<std::string> from = trainer.resume(f.ignore_config_change);
  if (f.quiet) return;
  if (from) {
    const auto& r = trainer.model().training_state()->resume;
    std::cout << "resuming from " << *from << " (epoch " << r->epoch << ", step " << r->global_step
              << ")\n";
  } else {
    std::cout << "--resume: no checkpoint in " << config::checkpoint_dir(trainer.config())
              << "; starting from scratch\n";
  }
}

// Training samples seen: the known split size (capped by steps_per_epoch) per epoch run, or what
// fit counted for a pipeline of unknown size.
int64_t samples_trained(const config::Trainer& trainer, const train::History& h) {
  const nn::FitOptions& fit = trainer.config().training.fit;
  const int64_t n = trainer.data().train_samples;
  if (n < 0) return h.stats.samples;
  // min(n, steps * batch) without the product (2^63-1 steps overflowed: UBSan).
  const int64_t batch = config::train_batch(trainer.config()).size;
  const bool capped = fit.steps_per_epoch > 0 && fit.steps_per_epoch <= (n - 1) / batch;
  const int64_t per_epoch = capped ? fit.steps_per_epoch * batch : n;
  return per_epoch * static_cast<int64_t>(h.epoch.size());
}

// The --metrics-json object (key order as the e2e tests and scripts read it).
nlohmann::ordered_json run_summary(const nn::EvaluateResult& test, const train::History& h,
                                   double train_seconds, int64_t samples,
                                   const std::string& weights_sha256, const std::string& weights) {
  nlohmann::ordered_json j;
  j["test_loss"] = test.loss;
  for (const auto& [name, v] : test.metrics) j["test_" + name] = v;
  j["epochs"] = static_cast<int>(h.epoch.size());
  j["train_seconds"] = train_seconds;
  j["samples_per_second"] = train_seconds > 0 ? static_cast<double>(samples) / train_seconds : 0;
  j["weights_sha256"] = weights_sha256;
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
  j["tern_version"] = version();
  return j;
}

// A run whose loss or weights went NaN or Inf (TerminateOnNaN stopped it, or it diverged without
// that callback) failed: an error, and the weights file of an earlier run is not overwritten
// (bad-input report F4: exit 0 with 2,525 NaN weights written over the good ones).
void check_trained(config::Trainer& trainer, const train::History& h, const std::string& weights) {
  std::string why;
  if (auto it = h.history.find("loss");
      it != h.history.end() && !it->second.empty() && !std::isfinite(it->second.back())) {
    why = str_cat("the loss of epoch ", h.epoch.back() + 1, " is ", it->second.back());
  }
  if (std::string bad = train::first_non_finite_weight(trainer.model()); !bad.empty()) {
    why += str_cat(why.empty() ? "" : " and ", "weight ", bad);
  }
  if (why.empty()) return;
  std::error_code ec;
  throw_error(ErrorCode::kFailedPrecondition, "training failed: ", why, "; weights not saved (",
              std::filesystem::exists(weights, ec) ? str_cat(weights, " from before is kept")
                                                   : "no weights file written",
              "). Lower optimizer.learning_rate, or look for NaN / Inf in the input data");
}

void write_metrics_json(const std::string& path, const nlohmann::ordered_json& j) {
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  io::write_file_atomically(path, j.dump(2) + "\n");
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
  }
  return "a signal";
}

// fit stopped at a signal: says where the run was saved (the checkpoint the callbacks wrote, or
// the weights when none is configured) and gives the exit status 128 + signal.
int interrupted(config::Trainer& trainer, const train::History& h, const TrainFlags& f) {
  const int status = train::interrupted_exit_status(h.interrupted_by);
  if (!trainer.is_chief()) return status;
  const train::FitProgress& p = trainer.model().training_state()->progress;
  std::cout << "\ntern train: interrupted by " << signal_name(h.interrupted_by) << " after step "
            << p.global_step << " (epoch " << p.epoch + 1 << ", batch " << p.step_in_epoch << ")\n";
  const std::string resume_dir = config::checkpoint_dir(trainer.config());
  if (!h.interrupt_checkpoint.empty() && h.interrupt_checkpoint.rfind(resume_dir, 0) == 0) {
    std::cout << "checkpoint: " << h.interrupt_checkpoint << "\ncontinue exactly with: tern train "
              << f.common.config << " --resume\n";
  } else if (!h.interrupt_checkpoint.empty()) {
    std::cout << "backup: " << h.interrupt_checkpoint
              << " ([callbacks.backup_and_restore]: the next tern train continues from it)\n";
  } else {
    const std::string weights = trainer.weights_path();
    trainer.model().save_weights(weights);
    std::cout << "weights: " << weights
              << " (no [callbacks.checkpoint] in the config, so --resume cannot continue this run "
                 "exactly; add the table to checkpoint)\n";
  }
  std::cout << std::flush;
  return status;
}

}  // namespace

int cmd_train(int argc, char** argv) {
  CLI::App app{"Train the model a config describes; prints the final test metrics.", "tern train"};
  init_app(app);
  app.footer(
      "Ctrl-C (SIGINT) or SIGTERM stops training after the current step: a checkpoint of that "
      "step goes to [callbacks.checkpoint] dir (--resume continues exactly), or without one the "
      "weights to output.dir; exit status 130 / 143. A second Ctrl-C quits at once.");
  TrainFlags f;
  add_common(app, f.common);
  app.add_option(
      "--metrics-json", f.metrics_json,
      "write test_accuracy, test_loss, epochs, train_seconds, samples_per_second, weights_sha256");
  app.add_flag("--quiet", f.quiet, "no per-epoch output");
  app.add_flag("--resume", f.resume,
               "continue from the newest complete checkpoint in [callbacks.checkpoint] dir (exact "
               "data position)");
  app.add_flag("--ignore-config-change", f.ignore_config_change,
               "--resume even if the config hash differs");
  app.add_option("--workers", f.workers,
                 "train data-parallel on N local worker processes (starts mpirun -np N; under "
                 "mpirun, leave it out)")
      ->check(CLI::Range(1, 1024));
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (f.workers > 0 && dist::launched_by_mpi()) {
    usage_error(
        "--workers starts mpirun itself; this process already runs under an MPI launcher (leave "
        "--workers out)");
  }
  if (f.workers > 1) return run_workers(f.workers, argc, argv);

  TrainConfig cfg = config::load_config(f.common.config, f.common.sets);
  cfg.training.fit.verbose = f.quiet ? 0 : 1;
  config::Trainer trainer(std::move(cfg));
  const bool chief = trainer.is_chief();  // data-parallel: only rank 0 prints and writes
  if (!chief) f.quiet = true;
  // Before the first step, not after the last: a read-only output.dir was found only when the
  // weights were saved (bad-input report F12).
  if (chief) io::check_writable_directory(trainer.config().output.dir, "output.dir");
  if (!f.quiet) print_header(trainer);
  if (f.resume) resume(trainer, f);
  auto t0 = std::chrono::steady_clock::now();
  // SIGINT / SIGTERM / SIGUSR1 stop fit after the current step (interrupt.h); after the last
  // step a request changes nothing: the run completes (the handlers stay for the process, keep()).
  train::GracefulInterrupts interrupts;
  interrupts.keep();
  train::History h = trainer.fit();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (h.interrupted_by != 0) return interrupted(trainer, h, f);
  if (!chief) return 0;
  const std::string weights = trainer.weights_path();
  check_trained(trainer, h, weights);
  nn::EvaluateResult test = trainer.evaluate();
  trainer.model().save_weights(weights);
  const std::string sha = train::weights_sha256(trainer.model());
  const int64_t samples = trainer.workers() > 1 ? h.stats.samples : samples_trained(trainer, h);
  nlohmann::ordered_json j = run_summary(test, h, seconds, samples, sha, weights);
  if (trainer.workers() > 1) j["workers"] = trainer.workers();
  print_metrics(test);
  std::cout << "\ntrained " << h.epoch.size() << " epochs in " << std::setprecision(1) << seconds
            << " s (" << std::setprecision(0) << j["samples_per_second"].get<double>()
            << " samples/s); weights: " << weights << "\nweights_sha256: " << sha << "\n";
  if (!f.metrics_json.empty()) write_metrics_json(f.metrics_json, j);
  if (const int late = train::fit_interrupt_requested(); late != 0) {
    std::cout << "(" << signal_name(late) << " came after the last step: the run completed)\n";
  }
  return 0;
}

int cmd_eval(int argc, char** argv) {
  CLI::App app{"Evaluate trained weights on the config's test split.", "tern eval"};
  init_app(app);
  CommonFlags f;
  std::string weights;
  add_common(app, f);
  app.add_option("--weights", weights, "weights file (default: <output.dir>/weights.safetensors)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  config::Trainer trainer(config::load_config(f.config, f.sets), /*with_train=*/false);
  trainer.model().load_weights(weights.empty() ? trainer.weights_path() : weights);
  print_metrics(trainer.evaluate());
  std::cout << "\n";
  return 0;
}

int cmd_predict(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--model") || !std::strncmp(argv[i], "--model=", 8))
      return cmd_predict_model(argc, argv);
  }
  CLI::App app{
      "Predict classes for the config's test images; writes CSV (index, predicted, label, "
      "probabilities).",
      "tern predict"};
  init_app(app);
  CommonFlags f;
  std::string weights, output;
  int64_t limit = 10;
  add_common(app, f);
  app.add_option("--weights", weights, "weights file (default: <output.dir>/weights.safetensors)");
  app.add_option("--output", output, "CSV file to write (default: stdout)");
  app.add_option("--limit", limit, "number of test images (-1 = all)");
  std::string model_dir;  // handled above; listed for --help and completion
  app.add_option("--model", model_dir,
                 "run an exported model directory instead of a config's weights (no CONFIG; "
                 "'tern predict --model DIR --help' lists its options)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  TrainConfig cfg = setup(f);
  if (limit == 0) usage_error("--limit 0: nothing to predict (-1 = all)");
  TestRows rows = test_rows(cfg, limit);
  std::shared_ptr<nn::Model> model = config::make_model(cfg, rows.sample_shape);
  model->load_weights(weights.empty() ? cfg.output.dir + "/weights.safetensors" : weights);
  int64_t n = rows.x.shape()[0];
  if (limit >= 0) n = std::min(n, limit);
  TERN_CHECK_ARG(n > 0, "predict: nothing to predict (--limit ", limit, ")");
  Tensor logits =
      model->predict(rows.x.slice_rows(0, n), std::max<int64_t>(cfg.training.fit.batch_size, 256));
  std::ofstream file;
  if (!output.empty()) {
    file.open(output);
    TERN_CHECK_ARG(file.good(), "predict: cannot write '", output, "'");
  }
  std::ostream& os = output.empty() ? std::cout : file;
  write_predictions(os, logits, rows.y, n);
  // A full disk left a 0-byte file and exit 0 (bad-input report F9): check the flush and close.
  errno = 0;
  os.flush();
  if (file.is_open()) file.close();
  if (os.fail()) {
    throw_error(ErrorCode::kUnavailable, "predict: cannot write '",
                output.empty() ? "standard output" : output,
                "': ", errno != 0 ? std::strerror(errno) : "write error");
  }
  return 0;
}

int cmd_summary(int argc, char** argv) {
  CLI::App app{"Print the model a config describes: layers, output shapes, parameter counts.",
               "tern summary"};
  init_app(app);
  CommonFlags f;
  add_common(app, f);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  TrainConfig cfg = setup(f);
  // The input shape comes from the data files' headers (or a pipeline's first test batch).
  Shape sample_shape = cfg.data.uses_pipeline()
                           ? config::make_training_data(cfg, /*with_train=*/false).sample_shape
                           : config::load_data(cfg).sample_shape;
  config::make_model(cfg, sample_shape)->summary(std::cout);
  return 0;
}

}  // namespace tern::tools
