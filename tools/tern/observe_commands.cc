// `tern logs`, `tern ckpt inspect`, `tern profile`: reading event files and checkpoints, and
// profiling training steps of a config.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "tern/base/strings.h"
#include "tern/config/builders.h"
#include "tern/config/training_data.h"
#include "tern/io/event_file.h"
#include "tern/io/hparams_plugin.h"
#include "tern/runtime/runtime.h"
#include "tern/train/checkpoint.h"
#include "tern/train/model_weights.h"
#include "tern/train/profiler.h"
#include "tern/train/training_state.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

std::string format_number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", x);
  return buf;
}

std::string format_hparam(const io::HParamValue& v) {
  if (const double* d = std::get_if<double>(&v)) return format_number(*d);
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return "\"" + std::get<std::string>(v) + "\"";
}

// One line for an hparams plugin value (docs/hparams_events.md).
std::string describe_hparams(const io::SummaryValue& v) {
  io::HParamsRecord r;
  try {
    io::decode_hparams_content(v.plugin_content, "hparams data", r);
  } catch (const Error& e) {
    return "(hparams data: " + e.message() + ")";
  }
  std::string out;
  if (r.has_experiment) {
    static const char* kType[] = {"float", "string", "bool"};
    out = "hparams experiment:";
    for (const auto& h : r.hparams) {
      out += " " + h.name + " " + kType[static_cast<int>(h.type)];
      std::string domain;
      for (const auto& s : h.discrete_strings) domain += (domain.empty() ? "" : ",") + s;
      for (double d : h.discrete_numbers) domain += (domain.empty() ? "" : ",") + format_number(d);
      if (!domain.empty()) out += " {" + domain + "}";
      if (h.interval)
        out +=
            " [" + format_number(h.interval->first) + "," + format_number(h.interval->second) + "]";
      out += ";";
    }
    out += " metrics:";
    for (const auto& m : r.metrics) out += " " + (m.group.empty() ? "" : m.group + "/") + m.tag;
  }
  if (r.has_session_start) {
    out = "hparams session start:";
    for (const auto& [name, value] : r.session.hparams)
      out += " " + name + "=" + format_hparam(value);
    if (!r.session.group_name.empty()) out += " (group " + r.session.group_name + ")";
  }
  if (r.has_session_end) {
    static const char* kStatus[] = {"unknown", "success", "failure", "running"};
    out = std::string("hparams session end: ") + kStatus[static_cast<int>(r.session.status)];
  }
  return out.empty() ? "(hparams data)" : out;
}

std::string describe(const io::SummaryValue& v) {
  char buf[256];
  switch (v.kind) {
    case io::SummaryKind::kScalar:
      std::snprintf(buf, sizeof(buf), "%.9g", v.scalar);
      return buf;
    case io::SummaryKind::kHistogram: {
      const io::Histogram& h = v.histogram;
      std::snprintf(buf, sizeof(buf), "histogram num=%.0f min=%.6g max=%.6g mean=%.6g buckets=%zu",
                    h.num, h.min, h.max, h.num > 0 ? h.sum / h.num : 0.0, h.bucket.size());
      return buf;
    }
    case io::SummaryKind::kText: {
      const std::string_view text = v.text;
      return "text \"" + printable(text.substr(0, 100)) + (text.size() > 100 ? "..." : "") + "\"";
    }
    case io::SummaryKind::kPluginData:
      if (v.plugin_name == io::kHParamsPluginName) return describe_hparams(v);
      break;
    case io::SummaryKind::kOther:
      break;
  }
  return "(" +
         (v.plugin_name.empty() ? std::string("unsupported value") : v.plugin_name + " data") + ")";
}

// Stops fit after a number of global steps.
class StopAfter : public train::Callback {
 public:
  explicit StopAfter(int64_t steps) : steps_(steps) {}
  void on_train_batch_end(int64_t, train::Logs&) override {
    if (model()->training_state()->progress.global_step >= steps_) model()->stop_training = true;
  }

 private:
  int64_t steps_;
};

}  // namespace

int cmd_logs(int argc, char** argv) {
  CLI::App app{
      "Print what TensorBoard event files hold: one line per value (step, wall time, tag, value).",
      "tern logs"};
  init_app(app);
  std::string target, tag;
  app.add_option("path", target, "an event file, or a directory searched for *tfevents* files")
      ->required();
  app.add_option("--tag", tag, "only values with this tag");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  std::vector<std::string> files = std::filesystem::is_directory(target)
                                       ? io::find_event_files(target)
                                       : std::vector<std::string>{target};
  if (files.empty())
    throw_error(ErrorCode::kNotFound, "no event files (names containing 'tfevents') under '",
                target, "'");
  for (const auto& f : files) {
    io::EventFileContents c = io::read_event_file(f);
    std::string version =
        !c.events.empty() && c.events[0].file_version ? *c.events[0].file_version : "none";
    // Everything from the file is printed through printable(): an event file written by someone
    // else must not reach the terminal's escape sequences (bad-input report F20).
    std::cout << printable(f) << ": " << c.events.size() << " events, file_version "
              << printable(version) << "\n";
    for (const auto& e : c.events) {
      if (!e.other.empty() && tag.empty())
        std::cout << "  step " << e.step << "  " << printable(e.other) << "\n";
      for (const auto& v : e.summary) {
        if (!tag.empty() && v.tag != tag) continue;
        std::cout << "  step " << std::setw(6) << e.step << "  " << std::fixed
                  << std::setprecision(3) << e.wall_time << "  " << std::setw(28) << std::left
                  << printable(v.tag) << std::right << "  " << describe(v) << "\n";
      }
    }
    if (c.truncated_at >= 0) {
      std::cout << "  (the last record, at byte offset " << c.truncated_at
                << ", is cut short: the writer stopped)\n";
    }
  }
  return 0;
}

int cmd_ckpt(int argc, char** argv) {
  CLI::App app{
      "Checkpoints: 'tern ckpt inspect DIR' validates a checkpoint (every hash and safetensors "
      "header) "
      "and lists its state and tensors; DIR may also be a folder of ckpt-* checkpoints (the newest "
      "is shown).",
      "tern ckpt"};
  init_app(app);
  app.require_subcommand(1);
  CLI::App* inspect = app.add_subcommand("inspect", "validate and describe a checkpoint");
  std::string dir;
  inspect->add_option("dir", dir, "a ckpt-* directory or a folder of them")->required();
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  std::string target = dir;
  std::vector<std::string> all = train::list_checkpoints(dir);
  if (!std::filesystem::exists(dir + "/manifest.json") && !all.empty()) {
    std::cout << all.size() << " checkpoints in " << dir << ":";
    for (const auto& p : all) std::cout << " " << std::filesystem::path(p).filename().string();
    std::cout << "\n";
    target = all.back();
  }
  train::Checkpoint c = train::read_checkpoint(target);
  const train::CheckpointState& s = c.state;
  const train::ResumePoint& p = s.position;
  std::cout << "checkpoint " << target << " (all files verified)\n"
            << "  global step " << p.global_step << ", epoch " << p.epoch
            << (p.epoch_complete ? " (complete)"
                                 : ", batch " + std::to_string(p.step_in_epoch) + " of the epoch")
            << "\n"
            << "  optimizer " << s.optimizer_name << ", iterations " << s.optimizer_iterations
            << ", learning rate " << s.learning_rate << " (" << s.lr_schedule << ")\n"
            << "  rng dropout offset " << s.rng_offset << ", data iterator state "
            << p.iterator_state.size() << " bytes\n"
            << "  config_sha256 " << (s.config_sha256.empty() ? "(none)" : s.config_sha256) << "\n"
            << "  weights_sha256 " << train::weights_sha256(c.weights, s.weight_order)
            << " (over the weights in model order, as tern train prints it: docs/formats.md)\n";
  for (const auto& [k, v] : s.logs) std::cout << "  log " << k << " = " << v << "\n";
  auto list = [](const char* title, const io::NamedTensors& ts) {
    int64_t bytes = 0;
    for (const auto& [_, t] : ts) bytes += static_cast<int64_t>(t.nbytes());
    std::cout << title << ": " << ts.size() << " tensors, " << bytes << " bytes\n";
    for (const auto& [name, t] : ts)
      std::cout << "  " << std::setw(40) << std::left << name << " " << t.type().to_string()
                << "\n";
    std::cout << std::right;
  };
  list("weights", c.weights);
  list("optimizer", c.optimizer);
  return 0;
}

int cmd_profile(int argc, char** argv) {
  CLI::App app{
      "Profile training steps of a config: writes a Chrome-trace JSON (Perfetto, chrome://tracing) "
      "and "
      "prints ops ranked by total time and the input wait / compute / optimizer split.",
      "tern profile"};
  init_app(app);
  std::string config, trace = "trace.json";
  std::vector<std::string> sets;
  int64_t steps = 10, warmup = 2;
  app.add_option("config", config, "training config (TOML)")->required();
  app.add_option("--set", sets, "override a config key (repeatable)");
  app.add_option("--steps", steps, "training steps to profile")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000000}));
  app.add_option("--warmup", warmup, "steps run first, untraced (the first one compiles)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000000}));
  app.add_option("--trace", trace, "where to write the trace JSON");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  config::TrainConfig cfg = config::load_config(config, sets);
  runtime::set_intra_op_threads(cfg.training.threads);
  config::ClassificationData d = config::load_data(cfg);
  const int64_t batch = cfg.training.fit.batch_size;
  int64_t per_epoch = (d.train_x.shape()[0] + batch - 1) / batch;
  if (cfg.training.fit.steps_per_epoch > 0)
    per_epoch = std::min(per_epoch, cfg.training.fit.steps_per_epoch);
  std::shared_ptr<nn::Model> model = config::make_model(cfg, d.sample_shape);
  config::compile_model(*model, cfg, per_epoch);
  auto profiler = std::make_shared<train::Profiler>(train::ProfilerOptions{
      .trace_path = trace, .start_step = warmup, .num_steps = steps, .print_report = false});
  nn::FitOptions fo = cfg.training.fit;
  fo.epochs = static_cast<int>((warmup + steps + per_epoch - 1) / per_epoch);
  fo.verbose = 0;
  fo.callbacks = {profiler, std::make_shared<StopAfter>(warmup + steps)};
  model->fit(config::training_pipeline(cfg, d.train_x, d.train_y), fo);
  TERN_CHECK(profiler->done(), "the profiled window did not close");
  std::cout << "tern profile " << cfg.path << ": model " << cfg.model.name << ", batch " << batch
            << ", " << runtime::intra_op_threads() << " threads; trace: " << trace << "\n"
            << profiler->report().format(20);
  return 0;
}

}  // namespace tern::tools
