// Mixed-precision policies on a compiled model's TrainingState.
#include "tern/train/mixed_precision.h"

#include "tern/passes/amp.h"
#include "tern/train/training_state.h"

namespace tern::train {
namespace {

void set_policy(nn::Model& model, DType compute,
                const std::optional<optim::LossScaleOptions>& loss_scale) {
  TrainingState* s = model.training_state();
  TERN_CHECK_ARG(s != nullptr, "set_precision_policy: model '", model.name(),
                 "' is not compiled: call compile() first");
  if (loss_scale) optim::check_loss_scale_options(*loss_scale);
  if (s->compile_options.mixed_precision == compute && s->loss_scale == loss_scale) return;
  s->compile_options.mixed_precision = compute;
  s->loss_scale = loss_scale;
  s->steps.clear();
}

}  // namespace

void set_precision_policy(nn::Model& model, std::string_view policy) {
  DType d = passes::policy_compute_dtype(policy);
  std::optional<optim::LossScaleOptions> scaling;
  if (d == DType::kF16) scaling = optim::LossScaleOptions{};
  set_policy(model, d, scaling);
}

void set_precision_policy(nn::Model& model, std::string_view policy,
                          const optim::LossScaleOptions& loss_scale) {
  DType d = passes::policy_compute_dtype(policy);
  TERN_CHECK_ARG(d == DType::kF16, "set_precision_policy: loss scaling applies only to ",
                 "'mixed_float16', not to '", policy, "'");
  set_policy(model, d, loss_scale);
}

std::string precision_policy(const nn::Model& model) {
  const TrainingState* s = model.training_state();
  DType d = s ? s->compile_options.mixed_precision : DType::kF32;
  return d == DType::kBF16 ? "mixed_bfloat16" : d == DType::kF16 ? "mixed_float16" : "float32";
}

std::optional<optim::LossScaleOptions> loss_scale_options(const nn::Model& model) {
  const TrainingState* s = model.training_state();
  return s ? s->loss_scale : std::nullopt;
}

std::optional<optim::LossScaleState> loss_scale_state(const nn::Model& model) {
  return optim::read_loss_scale(model.variables());
}

}  // namespace tern::train
