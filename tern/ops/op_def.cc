// OpDef checks and inference entry point.
#include "tern/ops/op_def.h"

#include <algorithm>

namespace tern::ops {

void InferContext::fail_message(const std::string& message) const {
  std::string types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    types += (i ? ", " : "") + inputs[i].to_string();
  }
  throw_error(ErrorCode::kInvalidArgument, "op '", op.name, "' (node '", node_name, "'): ", message,
              "; inputs: ", types.empty() ? "none" : types);
}

bool OpDef::claims(DType dtype) const {
  return std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end();
}

const AttrSpec* OpDef::find_attr(std::string_view attr_name) const {
  for (const auto& a : attrs) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

std::vector<TensorType> OpDef::check_and_infer(std::string_view node_name,
                                               std::span<const TensorType> input_types,
                                               Attrs& node_attrs) const {
  InferContext ctx{*this, node_name, input_types, node_attrs};
  size_t n = input_types.size();
  size_t fixed = inputs.size();
  size_t min_n = variadic
                     ? static_cast<size_t>(min_inputs >= 0 ? min_inputs : static_cast<int>(fixed))
                     : fixed;
  if (n < min_n || (!variadic && n != fixed)) {
    ctx.fail("expects ", variadic ? "at least " : "", min_n, " inputs, got ", n);
  }
  for (const auto& [attr_name, value] : node_attrs.items()) {
    const AttrSpec* spec = find_attr(attr_name);
    if (!spec) ctx.fail("unknown attribute '", attr_name, "'");
    if (attr_kind_of(value) != spec->kind) {
      ctx.fail("attribute '", attr_name, "' must be ", attr_kind_name(spec->kind), ", got ",
               attr_kind_name(attr_kind_of(value)));
    }
  }
  for (const auto& spec : attrs) {
    if (node_attrs.has(spec.name)) continue;
    if (!spec.default_value) ctx.fail("required attribute '", spec.name, "' is missing");
    node_attrs.set(spec.name, *spec.default_value);
  }
  if (key_input >= 0 && static_cast<size_t>(key_input) < n) {
    DType d = input_types[static_cast<size_t>(key_input)].dtype;
    if (!claims(d)) ctx.fail("dtype ", dtype_name(d), " is not supported");
  }
  std::vector<TensorType> out = infer(ctx);
  if (key_input < 0 && !out.empty() && !claims(out[0].dtype)) {
    ctx.fail("dtype ", dtype_name(out[0].dtype), " is not supported");
  }
  return out;
}

DType OpDef::key_dtype(std::span<const TensorType> in, std::span<const TensorType> out) const {
  if (key_input >= 0 && static_cast<size_t>(key_input) < in.size()) {
    return in[static_cast<size_t>(key_input)].dtype;
  }
  if (!out.empty()) return out[0].dtype;
  if (!in.empty()) return in[0].dtype;
  return DType::kF32;
}

}  // namespace tern::ops
