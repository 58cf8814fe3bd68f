// OpRegistry: every op tern knows, by name. The built-in families register on first use.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tern/ops/op_def.h"

namespace tern::ops {

class OpRegistry {
 public:
  // The process-wide registry, with all built-in op families registered.
  static OpRegistry& global();

  // InvalidArgument if an op of that name exists.
  void add(OpDef def);
  const OpDef* find(std::string_view name) const;
  // NotFound naming the op and the closest registered name.
  const OpDef& get(std::string_view name) const;
  std::vector<const OpDef*> all() const;  // sorted by name

 private:
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
};

// Edit distance, for "did you mean" suggestions across tern.
size_t edit_distance(std::string_view a, std::string_view b);
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace tern::ops
