// [optimizer] and [schedule]: `name` picks an options struct of tern/optim, and only its keys
// (plus the common ones) may appear; another name's key is an error naming the key and the keys
// that apply.
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

void check(const Section& s, bool ok, const std::string& key, const std::string& msg) {
  if (!ok) s.error(key, str_cat("key '", s.full(key), "' ", msg));
}

void read_clip(Section& s, optim::ClipOptions& clip) {
  s.read_optional("clipnorm", clip.clipnorm);
  s.read_optional("global_clipnorm", clip.global_clipnorm);
  s.read_optional("clipvalue", clip.clipvalue);
  for (const auto& [key, v] :
       {std::pair{"clipnorm", clip.clipnorm}, std::pair{"global_clipnorm", clip.global_clipnorm},
        std::pair{"clipvalue", clip.clipvalue}}) {
    check(s, !v || *v > 0, key, "must be positive");
  }
}

}  // namespace

void read_optimizer(Section& top, TrainConfig& c) {
  Section s = top.sub("optimizer");
  OptimizerConfig& o = c.optimizer;
  o.name = read_choice(s, "name", names_of(kOptimizerKeys), o.name);
  reject_keys_of_other_names(s, "optimizer", o.name, {"name", "learning_rate"}, kOptimizerKeys,
                             kClipKeys);
  s.read("learning_rate", o.learning_rate);
  check(s, o.learning_rate > 0, "learning_rate", "must be positive");
  if (o.name == "sgd") {
    s.read("momentum", o.sgd.momentum);
    s.read("nesterov", o.sgd.nesterov);
    s.read("weight_decay", o.sgd.weight_decay);
    check(s, o.sgd.momentum >= 0 && o.sgd.momentum < 1, "momentum", "must be in [0, 1)");
    check(s, o.sgd.weight_decay >= 0, "weight_decay", "must be >= 0");
  } else if (o.name == "adam" || o.name == "adamw") {
    s.read("beta1", o.adam.beta1);
    s.read("beta2", o.adam.beta2);
    s.read("epsilon", o.adam.epsilon);
    s.read("amsgrad", o.adam.amsgrad);
    if (o.name == "adamw") s.read("weight_decay", o.adam.weight_decay);
    check(s, o.adam.beta1 >= 0 && o.adam.beta1 < 1, "beta1", "must be in [0, 1)");
    check(s, o.adam.beta2 >= 0 && o.adam.beta2 < 1, "beta2", "must be in [0, 1)");
    check(s, o.adam.epsilon > 0, "epsilon", "must be positive");
    check(s, o.adam.weight_decay >= 0, "weight_decay", "must be >= 0");
  } else {
    s.read("rho", o.rmsprop.rho);
    s.read("momentum", o.rmsprop.momentum);
    s.read("epsilon", o.rmsprop.epsilon);
    s.read("centered", o.rmsprop.centered);
    check(s, o.rmsprop.rho >= 0 && o.rmsprop.rho < 1, "rho", "must be in [0, 1)");
    check(s, o.rmsprop.momentum >= 0 && o.rmsprop.momentum < 1, "momentum", "must be in [0, 1)");
    check(s, o.rmsprop.epsilon > 0, "epsilon", "must be positive");
  }
  read_clip(s, o.clip);
  s.finish();
}

void read_schedule(Section& top, TrainConfig& c) {
  Section s = top.sub("schedule");
  ScheduleConfig& o = c.schedule;
  o.name = read_choice(s, "name", names_of(kScheduleKeys), o.name);
  reject_keys_of_other_names(s, "schedule", o.name, {"name", "warmup_steps"}, kScheduleKeys);
  s.read("warmup_steps", o.warmup_steps);
  check(s, o.warmup_steps >= 0, "warmup_steps", "must be >= 0");
  if (o.name == "piecewise") {
    s.read("boundaries", o.piecewise.boundaries);
    s.read("values", o.piecewise.values);
    const auto& [boundaries, values] = o.piecewise;
    check(s, values.size() == boundaries.size() + 1, "values",
          str_cat("must hold one more value than boundaries (", values.size(), " values, ",
                  boundaries.size(), " boundaries)"));
    check(s, std::is_sorted(boundaries.begin(), boundaries.end()), "boundaries", "must increase");
  } else if (o.name == "exponential") {
    s.read("decay_steps", o.exponential.decay_steps);
    s.read("decay_rate", o.exponential.decay_rate);
    s.read("staircase", o.exponential.staircase);
    check(s, o.exponential.decay_steps > 0, "decay_steps", "must be positive");
  } else if (o.name == "cosine") {
    s.read("alpha", o.cosine.alpha);
  } else if (o.name == "cosine_restarts") {
    s.read("decay_steps", o.cosine_restarts.first_decay_steps);
    s.read("t_mul", o.cosine_restarts.t_mul);
    s.read("m_mul", o.cosine_restarts.m_mul);
    s.read("alpha", o.cosine_restarts.alpha);
    check(s, o.cosine_restarts.first_decay_steps > 0, "decay_steps", "must be positive");
    check(s, o.cosine_restarts.t_mul > 0, "t_mul", "must be positive");
  }
  s.finish();
}

}  // namespace tern::config
