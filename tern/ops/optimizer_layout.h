// Input layout of the fused optimizer-update ops (sgd_update, adam_update, adamw_update,
// rmsprop_update): leading hyper-parameter scalars, then `num_params` parameters, then as many
// gradients, then one list of `num_params` tensors per optimizer slot, then one 16-bit copy per
// entry of attribute `copies` (the indices of the parameters that have one, ascending: the update
// writes copy = cast(new parameter), so mixed-precision steps read the variable store's bf16 / f16
// copy of a weight instead of casting it every step, see VariableStore::copy), then (only with
// attribute has_apply = true) one bool scalar `apply`: false skips the whole update, leaving every
// parameter, slot and copy bitwise unchanged (dynamic loss scaling skips steps whose gradients
// overflowed). Shared
// by the OpDefs, the reference kernels and the fast kernels so that all three read the same
// positions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tern/ops/attrs.h"

namespace tern::ops {

struct OptimizerLayout {
  std::vector<std::string> hypers;  // names of the leading scalar inputs ("lr", "step")
  std::vector<std::string> slots;   // names of the slot lists, in input order
  int num_params = 0;
  std::vector<int64_t> copies;  // parameters with a 16-bit copy input, ascending
  bool has_apply = false;       // a trailing bool scalar input `apply`

  int num_hypers() const { return static_cast<int>(hypers.size()); }
  int num_slots() const { return static_cast<int>(slots.size()); }
  int num_copies() const { return static_cast<int>(copies.size()); }
  int num_inputs() const { return apply() + (has_apply ? 1 : 0); }
  // Input index of `apply` (only when has_apply).
  int apply() const { return copy(num_copies()); }
  // Input index of the j-th copy (of parameter copies[j]).
  int copy(int j) const { return num_hypers() + (2 + num_slots()) * num_params + j; }
  // Input index of parameter i, its gradient, and its entry in slot list s.
  int param(int i) const { return num_hypers() + i; }
  int grad(int i) const { return num_hypers() + num_params + i; }
  int slot(int s, int i) const { return num_hypers() + (2 + s) * num_params + i; }
  // Index of the slot list called `name`, or -1 if this configuration has none.
  int slot_index(std::string_view name) const {
    for (int s = 0; s < num_slots(); ++s) {
      if (slots[static_cast<size_t>(s)] == name) return s;
    }
    return -1;
  }
};

// Whether `op` is one of the fused updates this layout describes (not `assign`).
inline bool is_optimizer_update(std::string_view op) {
  return op == "sgd_update" || op == "adam_update" || op == "adamw_update" ||
         op == "rmsprop_update";
}

// The layout of `op` ("sgd_update", ...) for a node's attributes (defaults filled in).
// Slot lists that an attribute switches off (momentum = 0, amsgrad = false, centered = false)
// are absent, not zero-filled.
inline OptimizerLayout optimizer_layout(std::string_view op, const Attrs& attrs) {
  OptimizerLayout l;
  l.num_params = static_cast<int>(attrs.get_int("num_params"));
  l.has_apply = attrs.has("has_apply") && attrs.get_bool("has_apply");
  if (attrs.has("copies")) l.copies = attrs.get_ints("copies");
  if (op == "sgd_update") {
    l.hypers = {"lr"};
    if (attrs.get_float("momentum") != 0.0) l.slots = {"velocity"};
  } else if (op == "adam_update" || op == "adamw_update") {
    l.hypers = {"lr", "step"};
    l.slots = {"m", "v"};
    if (attrs.get_bool("amsgrad")) l.slots.push_back("vhat");
  } else if (op == "rmsprop_update") {
    l.hypers = {"lr"};
    l.slots = {"rms"};
    if (attrs.get_float("momentum") != 0.0) l.slots.push_back("momentum");
    if (attrs.get_bool("centered")) l.slots.push_back("mg");
  } else {
    throw_error(ErrorCode::kInternal, "optimizer_layout: '", op, "' is not an optimizer update op");
  }
  return l;
}

}  // namespace tern::ops
