// Capturing a training run's state for a checkpoint, and restoring one into a compiled model.
#include <algorithm>
#include <map>
#include <set>

#include "tern/base/logging.h"
#include "tern/data/iterator.h"
#include "tern/nn/model.h"
#include "tern/train/checkpoint.h"
#include "tern/train/distributed.h"
#include "tern/train/training_state.h"

namespace tern::train {
namespace {

TrainingState& compiled_state(nn::Model& model, const char* what) {
  TrainingState* s = model.training_state();
  TERN_CHECK_ARG(s && s->optimizer, what, ": model '", model.name(),
                 "' is not compiled: call compile() first");
  return *s;
}

void check_type(const std::string& dir, const std::string& name, const Tensor& saved,
                const Tensor& current) {
  if (saved.type() != current.type()) {
    throw_error(ErrorCode::kInvalidArgument, "checkpoint '", dir, "': tensor '", name, "' is ",
                saved.type().to_string(), " but the model has ", current.type().to_string());
  }
}

// Saved name -> current name, for weights and for variables named after a weight
// ("optimizer/<weight>/<slot>", "accumulator/<weight>").
std::map<std::string, std::string> name_mapping(nn::Model& model, const Checkpoint& ckpt) {
  std::map<std::string, std::string> map;
  std::map<std::string, const Tensor*> saved;
  for (const auto& [name, t] : ckpt.weights) saved[name] = &t;
  std::vector<nn::WeightSpec> current = model.weights();
  bool all_named = true;
  for (const auto& w : current) all_named = all_named && saved.count(w.name);
  const std::vector<std::string>& order = ckpt.state.weight_order;
  bool positional = !all_named && order.size() == current.size();
  for (size_t i = 0; positional && i < order.size(); ++i) {
    auto it = saved.find(order[i]);
    positional = it != saved.end() && it->second->type() == current[i].type;
  }
  if (!positional) {
    for (const auto& [name, _] : saved) map[name] = name;
    for (const auto& [name, _] : ckpt.optimizer) map[name] = name;
    return map;
  }
  log_info("checkpoint '", ckpt.dir, "': weight names differ from the model's; matching ",
           order.size(), " weights by position");
  for (size_t i = 0; i < order.size(); ++i) map[order[i]] = current[i].name;
  for (const auto& [name, _] : ckpt.optimizer) {
    map[name] = name;
    size_t best = 0;
    for (const auto& [old_name, new_name] : std::map<std::string, std::string>(map)) {
      for (const char* prefix : {"optimizer/", "accumulator/"}) {
        std::string p = prefix + old_name;
        bool match = name == p || name.rfind(p + "/", 0) == 0;
        if (match && p.size() > best &&
            std::find(order.begin(), order.end(), old_name) != order.end()) {
          best = p.size();
          map[name] = prefix + new_name + name.substr(p.size());
        }
      }
    }
  }
  return map;
}

}  // namespace

CheckpointState capture_checkpoint_state(nn::Model& model) {
  TrainingState& s = compiled_state(model, "checkpoint");
  const FitProgress& p = s.progress;
  CheckpointState c;
  c.position.epoch = p.epoch;
  c.position.step_in_epoch = p.step_in_epoch;
  c.position.global_step = p.global_step;
  c.position.epoch_complete = p.epoch_complete || p.iterator == nullptr;
  c.position.epoch_loss_sum = p.epoch_loss_sum;
  c.position.epoch_samples = p.epoch_samples;
  if (!c.position.epoch_complete) c.position.iterator_state = p.iterator->save_state();
  if (s.data_parallel) {
    average_non_trainable(model, s);
    // Every worker's data position, for rank 0 to write (a collective: all workers checkpoint
    // at the same steps).
    c.position.iterator_state =
        dist::pack_rank_blobs(s.data_parallel->comm().all_gather(c.position.iterator_state));
  }
  const optim::Optimizer& opt = *s.optimizer;
  c.optimizer_name = opt.name();
  c.optimizer_iterations = opt.iterations;
  c.micro_step = s.micro_step;
  c.learning_rate = opt.learning_rate(opt.iterations);
  c.lr_schedule = opt.schedule()->describe();
  c.rng_offset = opt.iterations * s.gradient_accumulation_steps + s.micro_step;
  for (const auto& w : model.weights()) c.weight_order.push_back(w.name);
  if (s.loss_scale) {
    c.loss_scale.enabled = true;
    c.loss_scale.dynamic = s.loss_scale->dynamic;
    // Before the first train step the state variables do not exist yet: the initial values.
    std::optional<optim::LossScaleState> ls = optim::read_loss_scale(model.variables());
    c.loss_scale.scale = ls ? ls->scale : s.loss_scale->initial_scale;
    c.loss_scale.good_steps = ls ? ls->good_steps : 0;
  }
  return c;
}

void restore_checkpoint(nn::Model& model, const Checkpoint& ckpt) {
  TrainingState& s = compiled_state(model, "restore checkpoint");
  const CheckpointState& st = ckpt.state;
  optim::Optimizer& opt = *s.optimizer;
  if (st.optimizer_name != opt.name()) {
    throw_error(ErrorCode::kInvalidArgument, "checkpoint '", ckpt.dir,
                "' was written with optimizer '", st.optimizer_name,
                "' but the model is compiled with '", opt.name(), "'");
  }
  runtime::VariableStore& store = model.variables();
  std::map<std::string, std::string> rename = name_mapping(model, ckpt);
  std::map<std::string, const Tensor*> saved;
  for (const auto& [name, t] : ckpt.weights) saved[rename.at(name)] = &t;
  // Check everything before changing anything.
  for (const auto& w : model.weights()) {
    auto it = saved.find(w.name);
    if (it == saved.end()) {
      throw_error(ErrorCode::kInvalidArgument, "checkpoint '", ckpt.dir, "' has no weight '",
                  w.name, "' (was it written by a different model?)");
    }
    check_type(ckpt.dir, w.name, *it->second, store.get(w.name));
  }
  for (const auto& [name, t] : ckpt.optimizer) {
    if (store.has(rename.at(name)))
      check_type(ckpt.dir, rename.at(name), t, store.get(rename.at(name)));
  }
  // After updates the optimizer's slots are state: one missing would restart from zero and the
  // resumed run would silently differ (bad-input report F16: a forged checkpoint without a slot).
  if (st.optimizer_iterations > 0) {
    std::set<std::string> have;
    for (const auto& [name, t] : ckpt.optimizer) have.insert(rename.at(name));
    for (const auto& w : model.trainable_weights()) {
      for (const std::string& slot : opt.slot_names()) {
        const std::string name = optim::slot_variable_name(w.name, slot);
        if (!have.count(name)) {
          throw_error(ErrorCode::kDataLoss, "checkpoint '", ckpt.dir, "' has no optimizer slot '",
                      name, "' after ", st.optimizer_iterations,
                      " iterations (resuming would restart it from zero)");
        }
      }
    }
  }
  for (const auto& w : model.weights()) store.assign(w.name, *saved[w.name]);
  // Slots are created lazily when the train step is built; creating them here with the saved
  // values makes the build keep them.
  for (const auto& [saved_name, t] : ckpt.optimizer) {
    const std::string& name = rename.at(saved_name);
    if (store.has(name)) {
      store.assign(name, t);
    } else {
      store.create(name, t.clone());
    }
  }
  opt.iterations = st.optimizer_iterations;
  s.micro_step = st.micro_step;
  // Schedules are functions of the step; only a callback-set constant rate is state.
  std::string current = opt.schedule()->describe();
  if (current != st.lr_schedule) {
    if (st.lr_schedule.rfind("constant(", 0) == 0) {
      opt.set_schedule(std::make_shared<optim::ConstantSchedule>(st.learning_rate));
    } else {
      log_warning("checkpoint '", ckpt.dir, "' was written with learning-rate schedule ",
                  st.lr_schedule, "; continuing with ", current);
    }
  }
  s.resume = st.position;
}

}  // namespace tern::train
