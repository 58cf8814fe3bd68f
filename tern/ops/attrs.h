// Typed op attributes: each OpDef declares its attributes (name, kind, default); a node's Attrs
// hold values checked against that declaration. Getters name the attribute on a kind mismatch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tern/tensor/tensor.h"

namespace tern::ops {

enum class AttrKind { kInt, kFloat, kBool, kString, kInts, kFloats, kDType, kTensor };

using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>,
                               std::vector<double>, DType, Tensor>;

std::string_view attr_kind_name(AttrKind kind);
AttrKind attr_kind_of(const AttrValue& value);
// Equality for CSE: tensors compare by dtype, shape and bytes.
bool attr_value_equal(const AttrValue& a, const AttrValue& b);
size_t attr_value_hash(const AttrValue& value);
std::string attr_value_to_string(const AttrValue& value);

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items);

  Attrs& set(std::string_view name, AttrValue value);
  bool has(std::string_view name) const { return find(name) != nullptr; }
  const AttrValue* find(std::string_view name) const;
  // NotFound naming the attribute if absent.
  const AttrValue& at(std::string_view name) const;

  int64_t get_int(std::string_view name) const { return get<int64_t>(name); }
  double get_float(std::string_view name) const { return get<double>(name); }
  bool get_bool(std::string_view name) const { return get<bool>(name); }
  const std::string& get_string(std::string_view name) const { return get<std::string>(name); }
  const std::vector<int64_t>& get_ints(std::string_view name) const {
    return get<std::vector<int64_t>>(name);
  }
  const std::vector<double>& get_floats(std::string_view name) const {
    return get<std::vector<double>>(name);
  }
  DType get_dtype(std::string_view name) const { return get<DType>(name); }
  const Tensor& get_tensor(std::string_view name) const { return get<Tensor>(name); }

  // Sorted by name.
  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool operator==(const Attrs& o) const;
  size_t hash() const;

 private:
  template <typename T>
  const T& get(std::string_view name) const;

  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace tern::ops
