// Mixed-precision policies on a compiled model's TrainingState.
#include "tern/train/mixed_precision.h"

#include "tern/passes/amp.h"
#include "tern/train/training_state.h"

namespace tern::train {

void set_precision_policy(nn::Model& model, std::string_view policy) {
  DType d = passes::policy_compute_dtype(policy);
  TERN_CHECK_ARG(d != DType::kF16,
                 "precision policy 'mixed_float16' needs dynamic loss scaling, which ",
                 "this build's optimizers do not do; use 'mixed_bfloat16' or 'float32'");
  TrainingState* s = model.training_state();
  TERN_CHECK_ARG(s != nullptr, "set_precision_policy: model '", model.name(),
                 "' is not compiled: call compile() first");
  if (s->compile_options.mixed_precision == d) return;
  s->compile_options.mixed_precision = d;
  s->steps.clear();
}

std::string precision_policy(const nn::Model& model) {
  const TrainingState* s = model.training_state();
  DType d = s ? s->compile_options.mixed_precision : DType::kF32;
  return d == DType::kBF16 ? "mixed_bfloat16" : d == DType::kF16 ? "mixed_float16" : "float32";
}

}  // namespace tern::train
