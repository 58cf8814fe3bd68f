// TOML config loading with checked keys (toml++ is used only here, config_section.h and
// pipeline_config.cc).
#include "tools/tern/config.h"

#include <toml++/toml.h>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "tern/base/sha256.h"
#include "tern/ops/registry.h"
#include "tools/tern/config_section.h"
#include "tools/tern/pipeline_config.h"

namespace tern::tools {
namespace {

// Every leaf of `t` as "a.b.c" -> its TOML text.
void flatten(const toml::table& t, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  for (const auto& [k, v] : t) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = v.as_table()) {
      flatten(*sub, key, out);
      continue;
    }
    std::ostringstream os;
    v.visit([&](const auto& node) { os << toml::toml_formatter{node}; });
    out[key] = os.str();
  }
}

// Applies "a.b.c=value" to the parsed table.
void apply_override(toml::table& root, const std::string& spec, const std::string& file) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw_error(ErrorCode::kInvalidArgument, "--set '", spec, "': expected key=value");
  }
  std::string key = spec.substr(0, eq), value = spec.substr(eq + 1);
  toml::table parsed;
  try {
    parsed = toml::parse("v = " + value);
  } catch (const toml::parse_error&) {
    parsed = toml::table{{"v", value}};  // a bare word is a string
  }
  toml::table* t = &root;
  size_t start = 0;
  for (;;) {
    size_t dot = key.find('.', start);
    std::string part =
        key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty())
      throw_error(ErrorCode::kInvalidArgument, "--set '", spec, "': empty key component");
    if (dot == std::string::npos) {
      t->insert_or_assign(part, *parsed.get("v"));
      return;
    }
    toml::node* next = t->get(part);
    if (!next) {
      t->insert(part, toml::table{});
      next = t->get(part);
    }
    if (!next->is_table()) {
      throw_error(ErrorCode::kInvalidArgument, "--set '", spec, "': '", part, "' in ", file,
                  " is not a table");
    }
    t = next->as_table();
    start = dot + 1;
  }
}

}  // namespace

TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  if (!std::filesystem::exists(path))
    throw_error(ErrorCode::kNotFound, "config file '", path, "' does not exist");
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw_error(ErrorCode::kInvalidArgument, path, ":", e.source().begin.line, ":",
                e.source().begin.column, ": TOML syntax error: ", e.description());
  }
  for (const auto& o : overrides) apply_override(root, o, path);
  TrainConfig c;
  c.path = path;
  Section top(&root, "", path);

  Section model = top.sub("model");
  model.read("name", c.model);
  Section args = model.sub("args");
  c.model_args = args.all_as_attrs();
  model.finish();

  Section data = top.sub("data");
  data.read("dataset", c.dataset);
  data.read("dir", c.data_dir);
  data.read("train_images", c.train_images);
  data.read("train_labels", c.train_labels);
  data.read("test_images", c.test_images);
  data.read("test_labels", c.test_labels);
  data.read("num_classes", c.num_classes);
  data.read("shuffle_buffer", c.shuffle_buffer);
  data.read("validation_split", c.validation_split);
  data.read("validate_on_test", c.validate_on_test);
  data.read("prefetch", c.prefetch);

  Section loss = top.sub("loss");
  loss.read("name", c.loss);
  loss.read("from_logits", c.from_logits);
  loss.read("label_smoothing", c.label_smoothing);
  loss.read("metrics", c.metrics);
  loss.finish();

  Section opt = top.sub("optimizer");
  opt.read("name", c.optimizer);
  opt.read("learning_rate", c.learning_rate);
  opt.read("momentum", c.momentum);
  opt.read("nesterov", c.nesterov);
  opt.read("beta1", c.beta1);
  opt.read("beta2", c.beta2);
  opt.read("epsilon", c.epsilon);
  opt.read("weight_decay", c.weight_decay);
  opt.read("rho", c.rho);
  opt.read("amsgrad", c.amsgrad);
  opt.read("centered", c.centered);
  opt.read_optional("clipnorm", c.clipnorm);
  opt.read_optional("global_clipnorm", c.global_clipnorm);
  opt.read_optional("clipvalue", c.clipvalue);
  opt.finish();

  Section sched = top.sub("schedule");
  sched.read("name", c.schedule);
  sched.read("warmup_steps", c.warmup_steps);
  sched.read("decay_steps", c.decay_steps);
  sched.read("decay_rate", c.decay_rate);
  sched.read("staircase", c.staircase);
  sched.read("alpha", c.alpha);
  sched.read("t_mul", c.t_mul);
  sched.read("m_mul", c.m_mul);
  sched.read("boundaries", c.boundaries);
  sched.read("values", c.values);
  sched.finish();

  Section train = top.sub("training");
  train.read("epochs", c.epochs);
  train.read("batch_size", c.batch_size);
  train.read("seed", c.seed);
  train.read("precision", c.precision);
  train.read("threads", c.threads);
  train.read("steps_per_epoch", c.steps_per_epoch);
  train.read("gradient_accumulation_steps", c.gradient_accumulation_steps);
  train.read("deterministic", c.deterministic);
  train.read("check_numerics", c.check_numerics);
  Section ls = train.sub("loss_scale");
  ls.read("dynamic", c.loss_scale.dynamic);
  ls.read("initial_scale", c.loss_scale.initial_scale);
  ls.read("growth_interval", c.loss_scale.growth_interval);
  ls.read("factor", c.loss_scale.factor);
  ls.finish();
  train.finish();
  if (const char* env = std::getenv("TERN_DETERMINISTIC"); env && std::string(env) == "1")
    c.deterministic = true;
  read_pipeline_config(data, c);  // data.source and its transforms (defaults from [training])
  data.finish();

  Section cbs = top.sub("callbacks");
  Section es = cbs.sub("early_stopping");
  c.callbacks.early_stopping = es.present();
  es.read("monitor", c.callbacks.es_monitor);
  es.read("patience", c.callbacks.es_patience);
  es.read("min_delta", c.callbacks.es_min_delta);
  es.read("restore_best_weights", c.callbacks.es_restore_best_weights);
  es.finish();
  Section rl = cbs.sub("reduce_lr_on_plateau");
  c.callbacks.reduce_lr = rl.present();
  rl.read("monitor", c.callbacks.rl_monitor);
  rl.read("factor", c.callbacks.rl_factor);
  rl.read("patience", c.callbacks.rl_patience);
  rl.read("min_lr", c.callbacks.rl_min_lr);
  rl.finish();
  cbs.read("terminate_on_nan", c.callbacks.terminate_on_nan);
  CallbackConfig& k = c.callbacks;
  Section tb = cbs.sub("tensorboard");
  k.tensorboard = tb.present();
  tb.read("log_dir", k.tb_log_dir);
  tb.read_freq("update_freq", k.tb_update_freq);
  tb.read("histogram_freq", k.tb_histogram_freq);
  tb.finish();
  Section ck = cbs.sub("checkpoint");
  k.checkpoint = ck.present();
  ck.read("dir", k.ckpt_dir);
  ck.read_freq("save_freq", k.ckpt_save_freq);
  ck.read("save_best_only", k.ckpt_save_best_only);
  ck.read("monitor", k.ckpt_monitor);
  ck.read("mode", k.ckpt_mode);
  ck.read("keep_last", k.ckpt_keep_last);
  ck.finish();
  Section br = cbs.sub("backup_and_restore");
  k.backup = br.present();
  br.read("dir", k.backup_dir);
  br.read_freq("save_freq", k.backup_save_freq);
  br.finish();
  Section csv = cbs.sub("csv_logger");
  k.csv_logger = csv.present();
  csv.read("path", k.csv_path);
  csv.read("append", k.csv_append);
  csv.finish();
  Section prof = cbs.sub("profiler");
  k.profiler = prof.present();
  prof.read("trace", k.profiler_trace);
  prof.read("start_step", k.profiler_start_step);
  prof.read("steps", k.profiler_steps);
  prof.finish();
  cbs.finish();

  Section out = top.sub("output");
  out.read("dir", c.output_dir);
  out.finish();
  top.finish();

  auto check = [&](bool ok, const std::string& key, const std::string& msg) {
    if (!ok) throw_error(ErrorCode::kInvalidArgument, path, ": key '", key, "' ", msg);
  };
  check(c.epochs >= 1, "training.epochs", "must be >= 1");
  check(c.batch_size >= 1, "training.batch_size", "must be >= 1");
  check(c.learning_rate > 0, "optimizer.learning_rate", "must be positive");
  check(c.validation_split >= 0 && c.validation_split < 1, "data.validation_split",
        "must be in [0, 1)");
  check(c.num_classes >= 1, "data.num_classes", "must be >= 1");
  check(
      c.precision == "float32" || c.precision == "mixed_bfloat16" || c.precision == "mixed_float16",
      "training.precision", "must be \"float32\", \"mixed_bfloat16\" or \"mixed_float16\"");
  check(!ls.present() || c.precision == "mixed_float16", "training.loss_scale",
        "applies only to training.precision = \"mixed_float16\"");
  check(std::isfinite(c.loss_scale.initial_scale) && c.loss_scale.initial_scale >= 1,
        "training.loss_scale.initial_scale", "must be finite and >= 1");
  check(c.loss_scale.growth_interval >= 1, "training.loss_scale.growth_interval", "must be >= 1");
  check(std::isfinite(c.loss_scale.factor) && c.loss_scale.factor > 1, "training.loss_scale.factor",
        "must be finite and > 1");
  check(c.gradient_accumulation_steps >= 1, "training.gradient_accumulation_steps", "must be >= 1");
  check(c.callbacks.tb_histogram_freq >= 0, "callbacks.tensorboard.histogram_freq", "must be >= 0");
  check(c.callbacks.ckpt_keep_last >= 0, "callbacks.checkpoint.keep_last",
        "must be >= 0 (0 keeps all)");
  check(c.callbacks.profiler_start_step >= 0, "callbacks.profiler.start_step", "must be >= 0");
  check(c.callbacks.profiler_steps >= 1, "callbacks.profiler.steps", "must be >= 1");
  flatten(root, "", c.effective);
  Sha256 hash;
  for (const auto& [key, value] : c.effective) {
    if (key.rfind("callbacks.", 0) == 0 || key.rfind("output.", 0) == 0) continue;
    hash.update(key + "=" + value + "\n");
  }
  c.sha256 = hash.hex_digest();
  return c;
}

}  // namespace tern::tools
