// Optimizer: turns (parameter, gradient) pairs into ONE fused update node in the training graph
// (sgd_update, adam_update, ... mutate the variables in place). Slot variables (momenta) live in
// the model's VariableStore as "optimizer/<param>/<slot>". Gradient clipping (clipvalue, clipnorm,
// global_clipnorm) is added to the graph before the update. The learning rate is a schedule
// evaluated on the host each step and fed as a scalar input.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tern/ir/graph.h"
#include "tern/ops/attrs.h"
#include "tern/optim/schedules.h"
#include "tern/runtime/variable_store.h"

namespace tern::optim {

struct ParamGrad {
  std::string name;  // variable name
  ir::Value* param;  // the graph's read of the variable
  ir::Value* grad;
};

struct ClipOptions {
  std::optional<double> clipvalue;        // clip each gradient element to [-v, v]
  std::optional<double> clipnorm;         // rescale each gradient to at most this L2 norm
  std::optional<double> global_clipnorm;  // rescale all gradients together (tf.clip_by_global_norm)
};

class Optimizer {
 public:
  explicit Optimizer(SchedulePtr learning_rate) : learning_rate_(std::move(learning_rate)) {}
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;

  // Adds clipping and the fused update node to `g`; creates slot variables in `store` (zeros) if
  // missing. `lr` is an f32 scalar value, `step` an i64 scalar holding iterations + 1. Every other
  // reader of a parameter is ordered before the update (control inputs). `apply` (optional, a
  // bool scalar) gates the update: false leaves parameters and slots untouched (loss scaling).
  ir::Node* apply_gradients(ir::Graph& g, runtime::VariableStore& store,
                            const std::vector<ParamGrad>& params, ir::Value* lr, ir::Value* step,
                            ir::Value* apply = nullptr);

  // Learning rate for a 0-based step.
  double learning_rate(int64_t step) const { return (*learning_rate_)(step); }
  const SchedulePtr& schedule() const { return learning_rate_; }
  void set_schedule(SchedulePtr s) { learning_rate_ = std::move(s); }

  // The slots this optimizer keeps per parameter ("m", "v" for Adam), each a variable named
  // slot_variable_name(param, slot).
  std::vector<std::string> slot_names() const;

  ClipOptions clip;
  // Number of updates applied so far (Keras' `iterations`); saved in checkpoints.
  int64_t iterations = 0;

 protected:
  // The update op and its attributes (num_params is added by the base class).
  virtual std::string update_op() const = 0;
  virtual ops::Attrs update_attrs() const = 0;

 private:
  std::vector<ir::Value*> clip_gradients(ir::Graph& g, std::vector<ir::Value*> grads) const;
  SchedulePtr learning_rate_;
};

using OptimizerPtr = std::shared_ptr<Optimizer>;

// Names of the slot variables of `param` for an update op and attributes (for checkpoints).
std::string slot_variable_name(const std::string& param, const std::string& slot);

}  // namespace tern::optim
