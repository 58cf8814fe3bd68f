// VariableStore: named persistent tensors (weights, optimizer slots, moving statistics). A
// compiled Executable binds to the store's tensors directly, so updates are visible without copies;
// assign() therefore writes into existing storage rather than replacing it. Variables live on one
// device: plain host memory until place_on() moves them (a training step compiled for a device
// binds variables that live there).
//
// 16-bit copies: copy(name, bf16) is the store's bf16 copy of an f32 variable, which mixed-
// precision executables read instead of casting the weight on every run (amp), and which the
// optimizer update that writes the weight writes too (its attribute `copies`, from the chunk it
// just updated). The store keeps a version per variable: create, assign, get_mutable (whoever
// takes a writable reference is taken to write through it) and written() bump it, and
// refresh_copy() casts a copy again when its variable's version moved on: after a checkpoint
// restore, set_weights, a data-parallel broadcast or a step that updates the weight without
// writing its copy. A write through a Tensor handle taken before the executable's last run is the
// one write the store cannot see: write through assign() or a fresh get_mutable().
// copy(name, f32) is the bf16 copy widened: the variable's values rounded to bf16, held in f32
// (read by matmuls that run bf16 operands in f32; widen_contractions).
#pragma once

#include <cstdint>
#include <map>
#include <span>
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
  // NotFound naming the variable and the closest name. Reading never makes a copy stale.
  const Tensor& get(std::string_view name) const;
  // The variable to write through: its copies are cast again before they are next read.
  Tensor& get_mutable(std::string_view name);
  // Copies `value` into the existing variable (same dtype and shape required).
  void assign(std::string_view name, const Tensor& value);
  // Removes variable `name` and its copies (NotFound naming it if absent). No executable compiled
  // against the store may still read it. Tensors sharing its memory keep that memory alive.
  void erase(std::string_view name);
  // Variable names, without the copies (they are not variables: checkpoints never hold them).
  std::vector<std::string> names() const;
  size_t size() const { return vars_.size(); }

  // The 16-bit copy (dtype bf16 or f16, or f32 rounded to bf16) of f32 variable `name`, cast
  // from it on first use.
  Tensor& copy(std::string_view name, DType dtype);
  // Casts the copy again if its variable changed since it was last made; true if it did.
  bool refresh_copy(std::string_view name, DType dtype);
  // An executable wrote variable `name` in place; the copies of the dtypes in `with_copies` were
  // written with it (the optimizer update's copies) and stay fresh, any other copy is now stale.
  void written(std::string_view name, std::span<const DType> with_copies = {});
  // How many times a copy was cast from its variable (first use and refreshes).
  int64_t copy_casts() const { return copy_casts_; }

  // A variable's record (its tensor, version and copies) at a fixed address for the store's life:
  // an executable resolves its variables once at compile time and then pays no name lookup per
  // run. Only the store reads or writes its fields.
  class Entry;
  Entry& entry(std::string_view name);  // NotFound as get()
  bool refresh_copy(Entry& e, DType dtype);
  void written(Entry& e, std::span<const DType> with_copies = {});

  // Moves every variable `device` cannot read into its memory (a copy each, once) and creates
  // later ones there; a no-op for a host-accessible device (the CPU reads host variables).
  // Executables compiled before a move keep the old tensors: place, then compile.
  void place_on(DeviceBackend& device);
  // Null while the variables are plain host tensors.
  DeviceBackend* device() const { return device_; }
  // Total bytes of all variables and their copies.
  size_t bytes() const;

 private:
  struct Copy {
    Tensor value;
    uint64_t version = 0;  // the variable's version the copy equals
  };
  const Entry& entry(std::string_view name) const;
  Tensor allocate(const TensorType& type) const;
  void cast_into(const Entry& e, Copy& c);

  std::map<std::string, Entry, std::less<>> vars_;
  DeviceBackend* device_ = nullptr;
  int64_t copy_casts_ = 0;
};

class VariableStore::Entry {
  friend class VariableStore;
  Tensor value;
  uint64_t version = 0;
  std::map<DType, Copy> copies;
};

}  // namespace tern::runtime
