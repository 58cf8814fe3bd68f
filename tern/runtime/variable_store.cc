// VariableStore.
#include "tern/runtime/variable_store.h"

#include "tern/ops/registry.h"

namespace tern::runtime {

Tensor& VariableStore::create(std::string_view name, const Tensor& initial) {
  auto it = vars_.find(name);
  if (it != vars_.end()) {
    if (it->second.type() != initial.type()) {
      throw_error(ErrorCode::kInvalidArgument, "variable '", name, "' exists as ",
                  it->second.type().to_string(), ", cannot recreate as ",
                  initial.type().to_string());
    }
    return it->second;
  }
  return vars_.emplace(std::string(name), initial.clone()).first->second;
}

Tensor& VariableStore::get(std::string_view name) {
  return const_cast<Tensor&>(static_cast<const VariableStore*>(this)->get(name));
}

const Tensor& VariableStore::get(std::string_view name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) {
    std::string best = ops::closest_name(name, names());
    throw_error(ErrorCode::kNotFound, "variable '", name, "' is not in the store",
                best.empty() ? "" : str_cat(" (did you mean '", best, "'?)"));
  }
  return it->second;
}

void VariableStore::assign(std::string_view name, const Tensor& value) {
  Tensor& v = get(name);
  if (v.type() != value.type()) {
    throw_error(ErrorCode::kInvalidArgument, "assign to variable '", name, "': value ",
                value.type().to_string(), " does not match ", v.type().to_string());
  }
  v.copy_from(value);
}

std::vector<std::string> VariableStore::names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : vars_) out.push_back(n);
  return out;
}

}  // namespace tern::runtime
