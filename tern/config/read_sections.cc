// [model], [training], [data], [loss] and [output] read key by key (read_sections.h).
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "tern/config/config_readers.h"
#include "tern/config/read_sections.h"

namespace tern::config {
namespace {

// An error at `key` of `s` unless `ok`.
void check(const Section& s, bool ok, const std::string& key, const std::string& msg) {
  if (!ok) s.error(key, str_cat("key '", s.full(key), "' ", msg));
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

void read_loss_scale(Section& training, TrainConfig& c) {
  Section ls = training.sub("loss_scale");
  optim::LossScaleOptions& o = c.training.loss_scale;
  ls.read("dynamic", o.dynamic);
  ls.read("initial_scale", o.initial_scale);
  ls.read("growth_interval", o.growth_interval);
  ls.read("factor", o.factor);
  check(ls, std::isfinite(o.initial_scale) && o.initial_scale >= 1, "initial_scale",
        "must be finite and >= 1");
  check(ls, o.growth_interval >= 1, "growth_interval", "must be >= 1");
  check(ls, std::isfinite(o.factor) && o.factor > 1, "factor", "must be finite and > 1");
  ls.finish();
  if (ls.present() && c.training.precision != "mixed_float16") {
    training.error("loss_scale",
                   "key 'training.loss_scale' applies only to training.precision = "
                   "\"mixed_float16\"");
  }
}

}  // namespace

void read_model(Section& top, TrainConfig& c) {
  Section model = top.sub("model");
  model.read("name", c.model.name);
  Section args = model.sub("args");
  c.model.args = args.all_as_attrs();
  model.finish();
}

void read_training(Section& top, TrainConfig& c) {
  Section s = top.sub("training");
  TrainingConfig& t = c.training;
  s.read("epochs", t.fit.epochs);
  s.read("batch_size", t.fit.batch_size);
  s.read("seed", t.fit.seed);
  s.read("precision", t.precision);
  s.read("threads", t.threads);
  s.read("steps_per_epoch", t.fit.steps_per_epoch);
  s.read("gradient_accumulation_steps", t.fit.gradient_accumulation_steps);
  s.read("deterministic", t.deterministic);
  s.read("check_numerics", t.check_numerics);
  s.read_memory_size("memory_limit", t.fit.memory_limit_bytes);
  check(s, t.fit.epochs >= 1, "epochs", "must be >= 1");
  check(s, t.fit.batch_size >= 1, "batch_size", "must be >= 1");
  check(s, t.fit.gradient_accumulation_steps >= 1, "gradient_accumulation_steps", "must be >= 1");
  check(
      s,
      t.precision == "float32" || t.precision == "mixed_bfloat16" || t.precision == "mixed_float16",
      "precision", "must be \"float32\", \"mixed_bfloat16\" or \"mixed_float16\"");
  read_loss_scale(s, c);
  s.finish();
  if (const char* env = std::getenv("TERN_DETERMINISTIC"); env && std::string(env) == "1")
    t.deterministic = true;
}

void read_data(Section& top, TrainConfig& c) {
  Section s = top.sub("data");
  DataConfig& d = c.data;
  s.read("dataset", d.dataset);
  s.read("dir", d.dir);
  s.read("train_images", d.train_images);
  s.read("train_labels", d.train_labels);
  s.read("test_images", d.test_images);
  s.read("test_labels", d.test_labels);
  s.read("num_classes", d.num_classes);
  s.read("shuffle_buffer", d.shuffle_buffer);
  s.read("validation_split", d.validation_split);
  s.read("validate_on_test", d.validate_on_test);
  s.read("prefetch", d.prefetch);
  check(s, d.validation_split >= 0 && d.validation_split < 1, "validation_split",
        "must be in [0, 1)");
  check(s, d.num_classes >= 1, "num_classes", "must be >= 1");
  if (!s.has("source") && s.has("dataset")) {
    read_choice(s, "dataset", {"fashion_mnist", "mnist", "idx"}, "fashion_mnist");
  }
  read_pipeline(s, c);  // data.source and its transforms (defaults from [training])
  s.finish();
}

void read_loss(Section& top, TrainConfig& c) {
  Section s = top.sub("loss");
  LossConfig& l = c.loss;
  std::vector<std::string> names;
  for (const auto& [name, keys] : kLossKeys) names.push_back(name);
  l.name = read_choice(s, "name", names, l.name);
  reject_keys_of_other_names(s, "loss", l.name, {"name"}, kLossKeys, {"metrics"});
  s.read("from_logits", l.from_logits);
  s.read("label_smoothing", l.label_smoothing);
  s.read("metrics", l.metrics);
  check(s, l.label_smoothing >= 0 && l.label_smoothing < 1, "label_smoothing", "must be in [0, 1)");
  s.finish();
}

void read_output(Section& top, TrainConfig& c) {
  Section s = top.sub("output");
  s.read("dir", c.output.dir);
  s.finish();
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
