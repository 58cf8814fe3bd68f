// Mixed precision for a compiled model, Keras-style policies:
//   "float32"         everything in f32 (the default)
//   "mixed_bfloat16"  matmuls and convolutions (forward and backward) and the cheap ops between
//                     them run in bf16; variables, optimizer updates, normalizations, softmax and
//                     losses stay f32 (the amp pass, tern/passes/amp.h, on every compiled step)
//   "mixed_float16"   the same in f16, plus loss scaling (tern/optim/loss_scale.h): the train
//                     step differentiates loss * S and unscales the gradients in f32; with dynamic
//                     scaling (the default: S = 2^15, halved and the step skipped on Inf/NaN
//                     gradients, doubled after 2000 clean steps) a skipped step changes no
//                     parameter or optimizer slot and is not counted in optimizer.iterations.
//                     The scale state is variables of the model, saved in checkpoints. Meant for
//                     GPUs; on a CPU without f16 arithmetic the f16 matmuls and convolutions run
//                     on the (f32/f64-accumulating) reference kernels: correct, slow.
// With gradient accumulation, micro-batch gradients are unscaled before they are summed; an
// Inf/NaN in any micro-batch makes the update step skip the whole accumulated update.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tern/nn/model.h"
#include "tern/optim/loss_scale.h"

namespace tern::train {

// Sets the policy of a compiled model (after compile(), before fit/evaluate/predict; steps
// compiled earlier are dropped). "mixed_float16" gets the default LossScaleOptions.
// InvalidArgument naming the valid policies otherwise.
void set_precision_policy(nn::Model& model, std::string_view policy);
// "mixed_float16" with the given loss scaling (InvalidArgument naming the field for bad options,
// and for any other policy: only mixed_float16 scales the loss).
void set_precision_policy(nn::Model& model, std::string_view policy,
                          const optim::LossScaleOptions& loss_scale);
// The model's policy name ("float32" when none was set or the model is not compiled).
std::string precision_policy(const nn::Model& model);
// The loss scaling of the model's policy (nullopt unless "mixed_float16").
std::optional<optim::LossScaleOptions> loss_scale_options(const nn::Model& model);
// The current loss scale and clean-step count (nullopt before the first mixed_float16 train step
// created them, or when the model has none).
std::optional<optim::LossScaleState> loss_scale_state(const nn::Model& model);

}  // namespace tern::train
