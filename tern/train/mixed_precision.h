// Mixed precision for a compiled model, Keras-style policies:
//   "float32"         everything in f32 (the default)
//   "mixed_bfloat16"  matmuls and convolutions (forward and backward) and the cheap ops between
//                     them run in bf16; variables, optimizer updates, normalizations, softmax and
//                     losses stay f32 (the amp pass, tern/passes/amp.h, on every compiled step)
// "mixed_float16" is refused: f16 gradients need dynamic loss scaling, which the optimizers do
// not do yet.
#pragma once

#include <string>
#include <string_view>

#include "tern/nn/model.h"

namespace tern::train {

// Sets the policy of a compiled model (after compile(), before fit/evaluate/predict; steps
// compiled earlier are dropped). InvalidArgument naming the valid policies otherwise.
void set_precision_policy(nn::Model& model, std::string_view policy);
// The model's policy name ("float32" when none was set or the model is not compiled).
std::string precision_policy(const nn::Model& model);

}  // namespace tern::train
