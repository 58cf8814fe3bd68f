// VariableStore: named variables on one device.
#include "tern/runtime/variable_store.h"

#include "tern/ops/registry.h"
#include "tern/runtime/placement.h"

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
  Tensor value = device_ ? Tensor(initial.dtype(), initial.shape(), *device_)
                         : Tensor(initial.dtype(), initial.shape());
  value.copy_from(initial);
  return vars_.emplace(std::string(name), std::move(value)).first->second;
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

void VariableStore::place_on(DeviceBackend& device) {
  if (device_ == &device) return;
  // The host's variables stay where they are on a host-accessible device (executables compiled
  // earlier keep reading them); an accelerator gets its own copies.
  if (device.memory_is_host_accessible()) return;
  device_ = &device;
  for (auto& [name, v] : vars_) {
    if (needs_copy(v, device)) v = v.to_device(device);
  }
}

size_t VariableStore::bytes() const {
  size_t total = 0;
  for (const auto& [name, v] : vars_) total += v.nbytes();
  return total;
}

std::vector<std::string> VariableStore::names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : vars_) out.push_back(n);
  return out;
}

}  // namespace tern::runtime
