// Weights as files and as one hash: nn::Model::save_weights / load_weights (declared in
// tern/nn/model.h, defined in model_weights.cc) write and read safetensors with the metadata
// "model", "format" = "tern" and "weight_order" (the weight names in layer order), so a model whose
// auto-generated layer names differ (another process built other layers first) still loads them
// by position. weights_sha256 identifies a set of weights by value; first_non_finite_weight finds
// weights that training ruined.
#pragma once

#include <string>
#include <vector>

#include "tern/io/safetensors.h"
#include "tern/nn/model.h"

namespace tern::train {

// weights_sha256, precisely (docs/formats.md, "weights_sha256", recomputes it from a weights
// file in a few lines of Python): SHA-256 over the concatenation, for each weight in the model's
// layer order (Model::weights(); the "weight_order" metadata of a saved weights file), of its
// type as ASCII text -- dtype name and shape, e.g. "f32[784, 128]", "f32[10]", "i64[]" -- followed
// by its raw bytes (row-major, little-endian). Names, safetensors headers and metadata are left
// out (auto-generated names depend on what the process built before), so two runs that trained
// the same values compare equal. It is therefore NOT `sha256sum weights.safetensors`.
std::string weights_sha256(const nn::Model& model);

// The same hash over tensors by name in the given order (a weights file or a checkpoint's
// weights.safetensors, ordered by its weight order); NotFound when a name is missing.
std::string weights_sha256(const io::NamedTensors& tensors, const std::vector<std::string>& order);

// "" if every weight value is finite, else the first weight (layer order) holding NaN or Inf and
// how many: "dense/kernel (16 of 128 values NaN or Inf)". tern train and the checkpoint callbacks
// never write such weights over good ones (bad-input report F4).
std::string first_non_finite_weight(const nn::Model& model);

}  // namespace tern::train
