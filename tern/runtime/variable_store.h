// VariableStore: named persistent tensors (weights, optimizer slots, moving statistics). A
// compiled Executable binds to the store's tensors directly, so updates are visible without copies;
// assign() therefore writes into existing storage rather than replacing it. Variables live on one
// device: plain host memory until place_on() moves them (a training step compiled for a device
// binds variables that live there).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tern/tensor/tensor.h"

namespace tern::runtime {

class VariableStore {
 public:
  // Creates a variable (InvalidArgument if it exists with another type; keeps the value if it
  // exists with the same type).
  Tensor& create(std::string_view name, const Tensor& initial);
  bool has(std::string_view name) const { return vars_.count(name) > 0; }
  // NotFound naming the variable and the closest name.
  Tensor& get(std::string_view name);
  const Tensor& get(std::string_view name) const;
  // Copies `value` into the existing variable (same dtype and shape required).
  void assign(std::string_view name, const Tensor& value);
  std::vector<std::string> names() const;
  size_t size() const { return vars_.size(); }

  // Moves every variable `device` cannot read into its memory (a copy each, once) and creates
  // later ones there; a no-op for a host-accessible device (the CPU reads host variables).
  // Executables compiled before a move keep the old tensors: place, then compile.
  void place_on(DeviceBackend& device);
  // Null while the variables are plain host tensors.
  DeviceBackend* device() const { return device_; }
  // Total bytes of all variables.
  size_t bytes() const;

 private:
  std::map<std::string, Tensor, std::less<>> vars_;
  DeviceBackend* device_ = nullptr;
};

}  // namespace tern::runtime
