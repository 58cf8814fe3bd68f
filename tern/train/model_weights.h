// Weights as files and as one hash: nn::Model::save_weights / load_weights (declared in
// tern/nn/model.h, defined in model_weights.cc) write and read safetensors with the metadata
// "model", "format" = "tern" and "weight_order" (the weight names in layer order), so a model whose
// auto-generated layer names differ (another process built other layers first) still loads them
// by position. weights_sha256 identifies a set of weights by value; first_non_finite_weight finds
// weights that training ruined.
#pragma once

#include <string>

#include "tern/nn/model.h"

namespace tern::train {

// SHA-256 over the model's weights in layer order: dtype, shape and bytes of each, names left out
// (auto-generated names depend on what the process built before), so two runs that trained the
// same values compare equal.
std::string weights_sha256(const nn::Model& model);

// "" if every weight value is finite, else the first weight (layer order) holding NaN or Inf and
// how many: "dense/kernel (16 of 128 values NaN or Inf)". tern train and the checkpoint callbacks
// never write such weights over good ones (bad-input report F4).
std::string first_non_finite_weight(const nn::Model& model);

}  // namespace tern::train
