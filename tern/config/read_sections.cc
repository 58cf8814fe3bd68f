// [model], [training], [data], [loss] and [output] read key by key (read_sections.h).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "tern/base/thread_pool.h"
#include "tern/config/config_readers.h"
#include "tern/config/read_sections.h"
#include "tern/models/zoo.h"

namespace tern::config {
namespace {

// An error at `key` of `s` unless `ok`.
void check(const Section& table, bool ok, const std::string& key, const std::string& msg) {
  if (!ok) table.error(key, str_cat("key '", table.full(key), "' ", msg));
}

const KeysByName kLossKeys = {
    {"sparse_categorical_crossentropy", {"from_logits"}},
    {"categorical_crossentropy", {"from_logits", "label_smoothing"}},
    {"binary_crossentropy", {"from_logits", "label_smoothing"}},
    {"mean_squared_error", {}},
    {"mse", {}},
    {"mean_absolute_error", {}},
    {"mae", {}},
    {"huber", {}},
};

void read_loss_scale(Section& training, TrainConfig& cfg) {
  Section ls = training.sub("loss_scale");
  optim::LossScaleOptions& scale = cfg.training.loss_scale;
  ls.read("dynamic", scale.dynamic);
  ls.read("initial_scale", scale.initial_scale);
  ls.read("growth_interval", scale.growth_interval);
  ls.read("factor", scale.factor);
  check(ls, std::isfinite(scale.initial_scale) && scale.initial_scale >= 1, "initial_scale",
        "must be finite and >= 1");
  check(ls, scale.growth_interval >= 1, "growth_interval", "must be >= 1");
  check(ls, std::isfinite(scale.factor) && scale.factor > 1, "factor", "must be finite and > 1");
  ls.finish();
  if (ls.present() && cfg.training.precision != "mixed_float16") {
    training.error("loss_scale",
                   "key 'training.loss_scale' applies only to training.precision = "
                   "\"mixed_float16\"");
  }
}

}  // namespace

void read_model(Section& top, TrainConfig& cfg) {
  Section model = top.sub("model");
  model.read("name", cfg.model.name);
  // The name and the argument names are checked here, at their lines (the kinds when the model
  // is built: an int where a float goes is fine).
  std::vector<std::string> arg_names;
  try {
    for (const auto& a : models::zoo_entry(cfg.model.name).args) arg_names.push_back(a.name);
  } catch (const Error& e) {
    model.error("name", str_cat("key 'model.name': ", e.message()));
  }
  Section args = model.sub("args");
  for (const std::string& key : args.keys()) {
    if (std::find(arg_names.begin(), arg_names.end(), key) != arg_names.end()) continue;
    const std::string best = ops::closest_name(key, arg_names);
    args.error(key,
               str_cat("unknown key '", args.full(key), "': model '", cfg.model.name,
                       "' has no argument '", key, "'",
                       best.empty() ? "" : str_cat(" (did you mean '", args.full(best), "'?)")));
  }
  cfg.model.args = args.all_as_attrs();
  model.finish();
}

void read_training(Section& top, TrainConfig& cfg) {
  Section table = top.sub("training");
  TrainingConfig& training = cfg.training;
  table.read("epochs", training.fit.epochs);
  table.read("batch_size", training.fit.batch_size);
  table.read("seed", training.fit.seed);
  table.read("precision", training.precision);
  table.read("threads", training.threads);
  table.read("steps_per_epoch", training.fit.steps_per_epoch);
  table.read("gradient_accumulation_steps", training.fit.gradient_accumulation_steps);
  table.read("deterministic", training.deterministic);
  table.read("check_numerics", training.check_numerics);
  table.read_memory_size("memory_limit", training.fit.memory_limit_bytes);
  check(table, training.fit.epochs >= 1, "epochs", "must be >= 1");
  check(table, training.fit.batch_size >= 1, "batch_size", "must be >= 1");
  check(table, training.fit.steps_per_epoch == -1 || training.fit.steps_per_epoch >= 1,
        "steps_per_epoch",
        str_cat("must be -1 (the whole split) or >= 1, got ", training.fit.steps_per_epoch));
  if (std::string why = thread_count_problem(training.threads, /*zero_ok=*/true); !why.empty()) {
    check(table, false, "threads", why);
  }
  check(table, training.fit.gradient_accumulation_steps >= 1, "gradient_accumulation_steps",
        "must be >= 1");
  check(table,
        training.precision == "float32" || training.precision == "mixed_bfloat16" ||
            training.precision == "mixed_float16",
        "precision", "must be \"float32\", \"mixed_bfloat16\" or \"mixed_float16\"");
  read_loss_scale(table, cfg);
  table.finish();
  if (const char* env = std::getenv("TERN_DETERMINISTIC"); env && std::string(env) == "1")
    training.deterministic = true;
}

void read_data(Section& top, TrainConfig& cfg) {
  Section table = top.sub("data");
  DataConfig& data = cfg.data;
  table.read("dataset", data.dataset);
  table.read("dir", data.dir);
  table.read("train_images", data.train_images);
  table.read("train_labels", data.train_labels);
  table.read("test_images", data.test_images);
  table.read("test_labels", data.test_labels);
  table.read("num_classes", data.num_classes);
  table.read("shuffle_buffer", data.shuffle_buffer);
  table.read("validation_split", data.validation_split);
  table.read("validate_on_test", data.validate_on_test);
  table.read("prefetch", data.prefetch);
  check(table, data.validation_split >= 0 && data.validation_split < 1, "validation_split",
        "must be in [0, 1)");
  check(table, data.num_classes >= 1, "num_classes", "must be >= 1");
  check(table, data.prefetch >= 1 || data.prefetch == -1, "prefetch",
        "must be >= 1 (batches made ahead on a background thread) or -1 (AUTOTUNE)");
  if (!table.has("source") && table.has("dataset")) {
    read_choice(table, "dataset", {"fashion_mnist", "mnist", "idx"}, "fashion_mnist");
  }
  read_pipeline(table, cfg);  // data.source and its transforms (defaults from [training])
  table.finish();
}

void read_loss(Section& top, TrainConfig& cfg) {
  Section table = top.sub("loss");
  LossConfig& loss = cfg.loss;
  std::vector<std::string> names;
  for (const auto& [name, keys] : kLossKeys) names.push_back(name);
  loss.name = read_choice(table, "name", names, loss.name);
  reject_keys_of_other_names(table, "loss", loss.name, {"name"}, kLossKeys, {"metrics"});
  table.read("from_logits", loss.from_logits);
  table.read("label_smoothing", loss.label_smoothing);
  table.read("metrics", loss.metrics);
  check(table, loss.label_smoothing >= 0 && loss.label_smoothing < 1, "label_smoothing",
        "must be in [0, 1)");
  table.finish();
}

void read_distribute(Section& top, TrainConfig& cfg) {
  Section table = top.sub("distribute");
  DistributeConfig& d = cfg.distribute;
  d.strategy = read_choice(table, "strategy", {"mirrored"}, "mirrored");
  bool deterministic = true;
  double first_mb = 1, bucket_mb = 25;
  table.read("deterministic", deterministic);
  table.read("first_bucket_mb", first_mb);
  table.read("bucket_mb", bucket_mb);
  table.read("watchdog_timeout", d.options.watchdog_seconds);
  check(table, first_mb > 0 && first_mb <= 4096, "first_bucket_mb", "must be in (0, 4096]");
  check(table, bucket_mb > 0 && bucket_mb <= 4096, "bucket_mb", "must be in (0, 4096]");
  check(table, d.options.watchdog_seconds >= 0, "watchdog_timeout",
        "must be >= 0 seconds (0: max(30 s, 10x the median step time))");
  d.options.buckets.mode =
      deterministic ? dist::ReduceMode::kDeterministic : dist::ReduceMode::kFast;
  d.options.buckets.first_bucket_bytes = static_cast<size_t>(first_mb * 1048576.0);
  d.options.buckets.bucket_bytes = static_cast<size_t>(bucket_mb * 1048576.0);
  table.finish();
}

void read_output(Section& top, TrainConfig& cfg) {
  Section table = top.sub("output");
  table.read("dir", cfg.output.dir);
  table.finish();
}

int64_t parse_memory_size(const std::string& text) {
  static const std::vector<std::pair<std::string, double>> kUnits = {
      {"b", 1},           {"kb", 1e3},           {"mb", 1e6},
      {"gb", 1e9},        {"tb", 1e12},          {"kib", 1024.0},
      {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
  size_t end = 0;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) {
    ++end;
  }
  const std::string number = text.substr(0, end);
  std::string unit = text.substr(end);
  if (!unit.empty() && unit[0] == ' ') unit = unit.substr(1);
  for (char& ch : unit) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  char* parsed_end = nullptr;
  const double value = number.empty() ? 0 : std::strtod(number.c_str(), &parsed_end);
  if (number.empty() || parsed_end != number.c_str() + number.size()) {
    throw_error(ErrorCode::kInvalidArgument, "'", text,
                "' is not a memory size (a number and a unit: \"512MiB\", \"2GiB\", \"500MB\")");
  }
  double scale = unit.empty() ? 1 : 0;
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) scale = factor;
  }
  if (scale == 0) {
    throw_error(ErrorCode::kInvalidArgument, "'", text, "': unknown unit '", text.substr(end),
                "' (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
  }
  const double bytes = value * scale;
  if (!(bytes < 9.2e18)) {
    throw_error(ErrorCode::kInvalidArgument, "'", text, "' is too large");
  }
  if (bytes != std::floor(bytes)) {
    throw_error(ErrorCode::kInvalidArgument, "'", text, "' is not a whole number of bytes");
  }
  return static_cast<int64_t>(bytes);
}

}  // namespace tern::config
