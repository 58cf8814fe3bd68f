// OpRegistry and name suggestions.
#include "tern/ops/registry.h"

#include <algorithm>
#include <mutex>

#include "tern/ops/families.h"

namespace tern::ops {

OpRegistry& OpRegistry::global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    register_builtin_ops(*r);
    return r;
  }();
  return *registry;
}

void OpRegistry::add(OpDef def) {
  if (ops_.count(def.name)) {
    throw_error(ErrorCode::kInvalidArgument, "op '", def.name, "' is registered twice");
  }
  TERN_CHECK(static_cast<bool>(def.infer), "op ", def.name, " has no inference function");
  std::string name = def.name;
  ops_.emplace(name, std::make_unique<OpDef>(std::move(def)));
}

const OpDef* OpRegistry::find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

const OpDef& OpRegistry::get(std::string_view name) const {
  if (const OpDef* d = find(name)) return *d;
  std::vector<std::string> names;
  for (const auto& [n, _] : ops_) names.push_back(n);
  std::string best = closest_name(name, names);
  throw_error(ErrorCode::kNotFound, "unknown op '", name, "'",
              best.empty() ? "" : str_cat(" (did you mean '", best, "'?)"));
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& [_, d] : ops_) out.push_back(d.get());
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Only suggest when reasonably close.
  if (best_d > std::max<size_t>(2, name.size() / 2)) return "";
  return best;
}

}  // namespace tern::ops
