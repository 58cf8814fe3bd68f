// VariableStore: named variables on one device, with versioned 16-bit copies.
#include "tern/runtime/variable_store.h"

#include "tern/ops/registry.h"
#include "tern/runtime/placement.h"

namespace tern::runtime {

Tensor VariableStore::allocate(const TensorType& type) const {
  return device_ ? Tensor(type.dtype, type.shape, *device_) : Tensor(type.dtype, type.shape);
}

Tensor& VariableStore::create(std::string_view name, const Tensor& initial) {
  auto it = vars_.find(name);
  if (it != vars_.end()) {
    if (it->second.value.type() != initial.type()) {
      throw_error(ErrorCode::kInvalidArgument, "variable '", name, "' exists as ",
                  it->second.value.type().to_string(), ", cannot recreate as ",
                  initial.type().to_string());
    }
    ++it->second.version;  // the caller holds a writable reference
    return it->second.value;
  }
  Entry e;
  e.value = allocate(initial.type());
  e.value.copy_from(initial);
  return vars_.emplace(std::string(name), std::move(e)).first->second.value;
}

void VariableStore::erase(std::string_view name) {
  entry(name);  // NotFound with the closest name
  vars_.erase(vars_.find(name));
}

const VariableStore::Entry& VariableStore::entry(std::string_view name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) {
    std::string best = ops::closest_name(name, names());
    throw_error(ErrorCode::kNotFound, "variable '", name, "' is not in the store",
                best.empty() ? "" : str_cat(" (did you mean '", best, "'?)"));
  }
  return it->second;
}

VariableStore::Entry& VariableStore::entry(std::string_view name) {
  return const_cast<Entry&>(static_cast<const VariableStore*>(this)->entry(name));
}

Tensor& VariableStore::get_mutable(std::string_view name) {
  Entry& e = entry(name);
  ++e.version;  // a writable reference: its copies are cast again before they are next read
  return e.value;
}

const Tensor& VariableStore::get(std::string_view name) const {
  return entry(name).value;
}

void VariableStore::assign(std::string_view name, const Tensor& value) {
  Tensor& v = get_mutable(name);
  if (v.type() != value.type()) {
    throw_error(ErrorCode::kInvalidArgument, "assign to variable '", name, "': value ",
                value.type().to_string(), " does not match ", v.type().to_string());
  }
  v.copy_from(value);
}

void VariableStore::cast_into(const Entry& e, Copy& c) {
  // An f32 copy is the bf16 copy widened: the values rounded to bf16.
  Tensor host = c.value.dtype() == DType::kF32
                    ? e.value.to_host().cast(DType::kBF16).cast(DType::kF32)
                    : e.value.to_host().cast(c.value.dtype());
  c.value.copy_from(host);
  c.version = e.version;
  ++copy_casts_;
}

Tensor& VariableStore::copy(std::string_view name, DType dtype) {
  Entry& e = entry(name);
  auto it = e.copies.find(dtype);
  if (it != e.copies.end()) return it->second.value;
  if (e.value.dtype() != DType::kF32 ||
      (dtype != DType::kBF16 && dtype != DType::kF16 && dtype != DType::kF32)) {
    throw_error(ErrorCode::kInvalidArgument, "variable '", name, "' is ",
                e.value.type().to_string(), ": only an f32 variable has a 16-bit copy (bf16 or ",
                "f16, or f32 rounded to bf16), asked for ", dtype_name(dtype));
  }
  Copy& c = e.copies[dtype];
  c.value = allocate(TensorType{dtype, e.value.shape()});
  cast_into(e, c);
  return c.value;
}

bool VariableStore::refresh_copy(std::string_view name, DType dtype) {
  Entry& e = entry(name);
  TERN_CHECK_ARG(e.copies.count(dtype) > 0, "variable '", name, "' has no ", dtype_name(dtype),
                 " copy to refresh");
  return refresh_copy(e, dtype);
}

bool VariableStore::refresh_copy(Entry& e, DType dtype) {
  auto it = e.copies.find(dtype);
  TERN_CHECK(it != e.copies.end(), "refresh_copy of a ", dtype_name(dtype), " copy never made");
  if (it->second.version == e.version) return false;
  cast_into(e, it->second);
  return true;
}

void VariableStore::written(std::string_view name, std::span<const DType> with_copies) {
  written(entry(name), with_copies);
}

void VariableStore::written(Entry& e, std::span<const DType> with_copies) {
  ++e.version;
  for (DType d : with_copies) {
    auto it = e.copies.find(d);
    if (it != e.copies.end()) it->second.version = e.version;
  }
}

void VariableStore::place_on(DeviceBackend& device) {
  if (device_ == &device) return;
  // The host's variables stay where they are on a host-accessible device (executables compiled
  // earlier keep reading them); an accelerator gets its own copies.
  if (device.memory_is_host_accessible()) return;
  device_ = &device;
  for (auto& [name, e] : vars_) {
    if (needs_copy(e.value, device)) e.value = e.value.to_device(device);
    for (auto& [dtype, c] : e.copies) {
      if (needs_copy(c.value, device)) c.value = c.value.to_device(device);
    }
  }
}

size_t VariableStore::bytes() const {
  size_t total = 0;
  for (const auto& [name, e] : vars_) {
    total += e.value.nbytes();
    for (const auto& [dtype, c] : e.copies) total += c.value.nbytes();
  }
  return total;
}

std::vector<std::string> VariableStore::names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : vars_) out.push_back(n);
  return out;
}

}  // namespace tern::runtime
