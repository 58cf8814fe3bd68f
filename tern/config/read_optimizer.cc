// [optimizer] and [schedule]: `name` picks an options struct of tern/optim, and only its keys
// (plus the common ones) may appear; another name's key is an error naming the key and the keys
// that apply.
#include <algorithm>
#include <cmath>

#include "tern/config/config_readers.h"
#include "tern/config/read_sections.h"

namespace tern::config {
namespace {

const KeysByName kOptimizerKeys = {
    {"sgd", {"momentum", "nesterov", "weight_decay"}},
    {"adam", {"beta1", "beta2", "epsilon", "amsgrad"}},
    {"adamw", {"beta1", "beta2", "epsilon", "amsgrad", "weight_decay"}},
    {"rmsprop", {"rho", "momentum", "epsilon", "centered"}},
};
const std::vector<std::string> kClipKeys = {"clipnorm", "global_clipnorm", "clipvalue"};

const KeysByName kScheduleKeys = {
    {"constant", {}},
    {"piecewise", {"boundaries", "values"}},
    {"exponential", {"decay_steps", "decay_rate", "staircase"}},
    {"cosine", {"alpha"}},
    {"cosine_restarts", {"decay_steps", "t_mul", "m_mul", "alpha"}},
};

std::vector<std::string> names_of(const KeysByName& table) {
  std::vector<std::string> names;
  for (const auto& [name, keys] : table) names.push_back(name);
  return names;
}

void check(const Section& table, bool ok, const std::string& key, const std::string& msg) {
  if (!ok) table.error(key, str_cat("key '", table.full(key), "' ", msg));
}

void read_clip(Section& table, optim::ClipOptions& clip) {
  table.read_optional("clipnorm", clip.clipnorm);
  table.read_optional("global_clipnorm", clip.global_clipnorm);
  table.read_optional("clipvalue", clip.clipvalue);
  for (const auto& [key, v] :
       {std::pair{"clipnorm", clip.clipnorm}, std::pair{"global_clipnorm", clip.global_clipnorm},
        std::pair{"clipvalue", clip.clipvalue}}) {
    check(table, !v || *v > 0, key, "must be positive");
  }
}

}  // namespace

void read_optimizer(Section& top, TrainConfig& cfg) {
  Section table = top.sub("optimizer");
  OptimizerConfig& optimizer = cfg.optimizer;
  optimizer.name = read_choice(table, "name", names_of(kOptimizerKeys), optimizer.name);
  reject_keys_of_other_names(table, "optimizer", optimizer.name, {"name", "learning_rate"},
                             kOptimizerKeys, kClipKeys);
  table.read("learning_rate", optimizer.learning_rate);
  check(table, optimizer.learning_rate > 0 && std::isfinite(optimizer.learning_rate),
        "learning_rate", str_cat("must be positive and finite, got ", optimizer.learning_rate));
  if (optimizer.name == "sgd") {
    table.read("momentum", optimizer.sgd.momentum);
    table.read("nesterov", optimizer.sgd.nesterov);
    table.read("weight_decay", optimizer.sgd.weight_decay);
    check(table, optimizer.sgd.momentum >= 0 && optimizer.sgd.momentum < 1, "momentum",
          "must be in [0, 1)");
    check(table, optimizer.sgd.weight_decay >= 0, "weight_decay", "must be >= 0");
  } else if (optimizer.name == "adam" || optimizer.name == "adamw") {
    table.read("beta1", optimizer.adam.beta1);
    table.read("beta2", optimizer.adam.beta2);
    table.read("epsilon", optimizer.adam.epsilon);
    table.read("amsgrad", optimizer.adam.amsgrad);
    if (optimizer.name == "adamw") table.read("weight_decay", optimizer.adam.weight_decay);
    check(table, optimizer.adam.beta1 >= 0 && optimizer.adam.beta1 < 1, "beta1",
          "must be in [0, 1)");
    check(table, optimizer.adam.beta2 >= 0 && optimizer.adam.beta2 < 1, "beta2",
          "must be in [0, 1)");
    check(table, optimizer.adam.epsilon > 0, "epsilon", "must be positive");
    check(table, optimizer.adam.weight_decay >= 0, "weight_decay", "must be >= 0");
  } else {
    table.read("rho", optimizer.rmsprop.rho);
    table.read("momentum", optimizer.rmsprop.momentum);
    table.read("epsilon", optimizer.rmsprop.epsilon);
    table.read("centered", optimizer.rmsprop.centered);
    check(table, optimizer.rmsprop.rho >= 0 && optimizer.rmsprop.rho < 1, "rho",
          "must be in [0, 1)");
    check(table, optimizer.rmsprop.momentum >= 0 && optimizer.rmsprop.momentum < 1, "momentum",
          "must be in [0, 1)");
    check(table, optimizer.rmsprop.epsilon > 0, "epsilon", "must be positive");
  }
  read_clip(table, optimizer.clip);
  table.finish();
}

void read_schedule(Section& top, TrainConfig& cfg) {
  Section table = top.sub("schedule");
  ScheduleConfig& schedule = cfg.schedule;
  schedule.name = read_choice(table, "name", names_of(kScheduleKeys), schedule.name);
  reject_keys_of_other_names(table, "schedule", schedule.name, {"name", "warmup_steps"},
                             kScheduleKeys);
  table.read("warmup_steps", schedule.warmup_steps);
  check(table, schedule.warmup_steps >= 0, "warmup_steps", "must be >= 0");
  if (schedule.name == "piecewise") {
    table.read("boundaries", schedule.piecewise.boundaries);
    table.read("values", schedule.piecewise.values);
    const auto& [boundaries, values] = schedule.piecewise;
    check(table, values.size() == boundaries.size() + 1, "values",
          str_cat("must hold one more value than boundaries (", values.size(), " values, ",
                  boundaries.size(), " boundaries)"));
    check(table, std::is_sorted(boundaries.begin(), boundaries.end()), "boundaries",
          "must increase");
    for (double v : values) {
      check(table, v >= 0 && std::isfinite(v), "values",
            str_cat("must be finite learning rates >= 0, got ", v));
    }
  } else if (schedule.name == "exponential") {
    table.read("decay_steps", schedule.exponential.decay_steps);
    table.read("decay_rate", schedule.exponential.decay_rate);
    table.read("staircase", schedule.exponential.staircase);
    check(table, schedule.exponential.decay_steps > 0, "decay_steps", "must be positive");
  } else if (schedule.name == "cosine") {
    table.read("alpha", schedule.cosine.alpha);
    // The final rate as a fraction of the initial one: a negative alpha gave a negative rate.
    check(table, schedule.cosine.alpha >= 0 && schedule.cosine.alpha <= 1, "alpha",
          str_cat("must be in [0, 1], got ", schedule.cosine.alpha));
  } else if (schedule.name == "cosine_restarts") {
    table.read("decay_steps", schedule.cosine_restarts.first_decay_steps);
    table.read("t_mul", schedule.cosine_restarts.t_mul);
    table.read("m_mul", schedule.cosine_restarts.m_mul);
    table.read("alpha", schedule.cosine_restarts.alpha);
    check(table, schedule.cosine_restarts.first_decay_steps > 0, "decay_steps", "must be positive");
    check(table, schedule.cosine_restarts.t_mul > 0, "t_mul", "must be positive");
    check(table, schedule.cosine_restarts.alpha >= 0 && schedule.cosine_restarts.alpha <= 1,
          "alpha", str_cat("must be in [0, 1], got ", schedule.cosine_restarts.alpha));
    check(table,
          schedule.cosine_restarts.m_mul > 0 && std::isfinite(schedule.cosine_restarts.m_mul),
          "m_mul", str_cat("must be positive and finite, got ", schedule.cosine_restarts.m_mul));
  }
  table.finish();
}

}  // namespace tern::config
