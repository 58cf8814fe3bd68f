// Loss scaling for the "mixed_float16" policy (Keras LossScaleOptimizer semantics): f16 gradients
// underflow unless the loss is multiplied by a large scale S before differentiation, so a training
// step differentiates loss * S, divides every gradient by S in f32 (exact: S is a power of two),
// and then, with dynamic scaling:
//   - all gradients finite: the optimizer update is applied and good_steps += 1; after
//     growth_interval (2000) clean steps in a row, S *= factor (2) and good_steps = 0;
//   - any Inf/NaN: the update is skipped (parameters and optimizer slots bitwise unchanged, the
//     host does not count an optimizer iteration), S = max(S / factor, 1), good_steps = 0.
// S starts at initial_scale (2^15). The state lives in the model's VariableStore as
// "loss_scale/scale" (f32 scalar) and "loss_scale/good_steps" (i64 scalar), so checkpoints save
// and restore it with the optimizer slots. With dynamic = false, S stays fixed and every step is
// applied (TF's fixed loss scale).
//
// LossScaleGraph adds these pieces to one step graph; the ops are all_finite and
// loss_scale_update (tern/ops/loss_scale_ops.cc) and the has_apply input of the fused updates.
#pragma once

#include <optional>
#include <vector>

#include "tern/ir/graph.h"
#include "tern/runtime/variable_store.h"

namespace tern::optim {

struct LossScaleOptions {
  bool dynamic = true;             // false: S stays initial_scale and every step is applied
  double initial_scale = 32768.0;  // 2^15
  int64_t growth_interval = 2000;  // clean steps in a row before S grows
  double factor = 2.0;             // growth and back-off factor

  bool operator==(const LossScaleOptions&) const = default;
};

// InvalidArgument naming the field: initial_scale must be finite and >= 1, growth_interval >= 1,
// factor > 1.
void check_loss_scale_options(const LossScaleOptions& o);

constexpr const char* kLossScaleVariable = "loss_scale/scale";
constexpr const char* kLossScaleGoodStepsVariable = "loss_scale/good_steps";

// The loss-scale state held in a store, if it has one.
struct LossScaleState {
  double scale = 0;
  int64_t good_steps = 0;
};
std::optional<LossScaleState> read_loss_scale(const runtime::VariableStore& store);

class LossScaleGraph {
 public:
  // Creates the state variables in `store` if missing (S = initial_scale, good_steps = 0) and
  // reads S in `g`.
  LossScaleGraph(ir::Graph& g, runtime::VariableStore& store, const LossScaleOptions& options);

  // loss * S (an f32 scalar loss): differentiate this instead of the loss.
  ir::Value* scale_loss(ir::Value* loss);
  // Each gradient times 1 / S, in the gradient's dtype.
  std::vector<ir::Value*> unscale(const std::vector<ir::Value*>& grads);
  // Dynamic scaling: the bool scalar "every gradient is finite" (feed it to the update's apply
  // input), and the loss_scale_update node it drives, ordered after every reader of S.
  // nullptr when the scale is fixed.
  ir::Value* finite(const std::vector<ir::Value*>& grads);
  ir::Node* update(ir::Value* finite);

 private:
  ir::Graph& g_;
  LossScaleOptions options_;
  ir::Value* scale_ = nullptr;
  ir::Value* good_steps_ = nullptr;
};

}  // namespace tern::optim
