// nn::Model::save_weights / load_weights (safetensors) and weights_sha256.
#include "tern/train/model_weights.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tern/base/sha256.h"
#include "tern/io/safetensors.h"

namespace tern {
namespace nn {

void Model::save_weights(const std::string& path) const {
  TERN_CHECK_ARG(!path.empty(), "save_weights: empty path");
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  io::NamedTensors tensors;
  nlohmann::json order = nlohmann::json::array();
  for (const auto& w : weights()) {
    tensors.push_back({w.name, variables().get(w.name)});
    order.push_back(w.name);
  }
  io::save_safetensors(path, tensors,
                       {{"model", name()}, {"format", "tern"}, {"weight_order", order.dump()}});
}

void Model::load_weights(const std::string& path) {
  io::SafetensorsFile f = io::load_safetensors(path);
  std::map<std::string, Tensor> by_name(f.tensors.begin(), f.tensors.end());
  std::vector<WeightSpec> current = weights();
  bool all_named = true;
  for (const auto& w : current) all_named = all_named && by_name.count(w.name);
  // Auto-generated layer names depend on what a process built before; then the saved model order
  // (metadata "weight_order") pairs weights by position.
  std::vector<std::string> source;
  if (all_named) {
    for (const auto& w : current) source.push_back(w.name);
  } else {
    auto it = f.metadata.find("weight_order");
    nlohmann::json order;
    if (it != f.metadata.end()) order = nlohmann::json::parse(it->second, nullptr, false);
    if (!order.is_array() || order.size() != current.size()) {
      std::string missing;
      for (const auto& w : current) {
        if (!by_name.count(w.name)) missing = w.name;
      }
      throw_error(ErrorCode::kInvalidArgument, "weights file '", path, "' has no tensor '", missing,
                  "' and no matching weight order (was it saved from a different model?)");
    }
    for (const auto& n : order) source.push_back(n.is_string() ? n.get<std::string>() : "");
  }
  for (size_t i = 0; i < current.size(); ++i) {
    const WeightSpec& w = current[i];
    auto it = by_name.find(source[i]);
    if (it == by_name.end()) {
      throw_error(ErrorCode::kDataLoss, "weights file '", path, "': weight_order names '",
                  source[i], "' but the file has no such tensor");
    }
    if (it->second.type() != w.type) {
      throw_error(ErrorCode::kInvalidArgument, "weights file '", path, "': tensor '", source[i],
                  "' is ", it->second.type().to_string(), " but the model's weight '", w.name,
                  "' is ", w.type.to_string());
    }
    variables().assign(w.name, it->second);
  }
}

}  // namespace nn

namespace train {

std::string weights_sha256(const nn::Model& model) {
  Sha256 h;
  for (const auto& w : model.weights()) {
    const Tensor t = model.variables().get(w.name).to_host();
    h.update(t.type().to_string());
    h.update(t.raw_data(), t.nbytes());
  }
  return h.hex_digest();
}

std::string weights_sha256(const io::NamedTensors& tensors, const std::vector<std::string>& order) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : tensors) by_name[name] = &t;
  Sha256 h;
  for (const auto& name : order) {
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw_error(ErrorCode::kNotFound, "weights_sha256: no tensor '", name, "'");
    const Tensor t = it->second->to_host();
    h.update(t.type().to_string());
    h.update(t.raw_data(), t.nbytes());
  }
  return h.hex_digest();
}

std::string first_non_finite_weight(const nn::Model& model) {
  for (const auto& w : model.weights()) {
    if (!is_floating(w.type.dtype)) continue;
    const Tensor t = model.variables().get(w.name).to_host();
    int64_t bad = 0;
    for (int64_t i = 0; i < t.num_elements(); ++i) bad += std::isfinite(t.get(i)) ? 0 : 1;
    if (bad > 0) {
      return str_cat(w.name, " (", bad, " of ", t.num_elements(), " values NaN or Inf)");
    }
  }
  return "";
}

}  // namespace train
}  // namespace tern
