// The zoo registry and argument checking.
#include "tern/models/zoo.h"

#include "tern/ops/registry.h"

namespace tern::models {

void add_simple_models(std::vector<ZooEntry>& zoo);
void add_resnet_models(std::vector<ZooEntry>& zoo);
void add_transformer_models(std::vector<ZooEntry>& zoo);

const std::vector<ZooEntry>& zoo() {
  static const std::vector<ZooEntry> entries = [] {
    std::vector<ZooEntry> z;
    add_simple_models(z);
    add_resnet_models(z);
    add_transformer_models(z);
    return z;
  }();
  return entries;
}

const ZooEntry& zoo_entry(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& e : zoo()) {
    if (e.name == name) return e;
    names.push_back(e.name);
  }
  std::string best = ops::closest_name(name, names);
  throw_error(ErrorCode::kNotFound, "unknown model '", name, "'",
              best.empty() ? "" : str_cat(" (did you mean '", best, "'?)"));
}

std::shared_ptr<nn::Model> build_model(const std::string& name, const Shape& input_shape,
                                       int64_t num_classes, ops::Attrs args) {
  const ZooEntry& e = zoo_entry(name);
  std::vector<std::string> valid;
  for (const auto& a : e.args) valid.push_back(a.name);
  for (const auto& [key, value] : args.items()) {
    const ops::AttrSpec* spec = nullptr;
    for (const auto& a : e.args) {
      if (a.name == key) spec = &a;
    }
    if (!spec) {
      std::string best = ops::closest_name(key, valid);
      throw_error(ErrorCode::kInvalidArgument, "model '", name, "' has no argument '", key, "'",
                  best.empty() ? "" : str_cat(" (did you mean '", best, "'?)"));
    }
    ops::AttrKind got = ops::attr_kind_of(value);
    // An int where a float is expected is fine (TOML writes 1 for 1.0).
    if (got == ops::AttrKind::kInt && spec->kind == ops::AttrKind::kFloat) {
      args.set(key, static_cast<double>(std::get<int64_t>(value)));
    } else if (got != spec->kind) {
      throw_error(ErrorCode::kInvalidArgument, "model '", name, "' argument '", key, "' must be ",
                  ops::attr_kind_name(spec->kind), ", got ", ops::attr_kind_name(got));
    }
  }
  for (const auto& a : e.args) {
    if (!args.has(a.name) && a.default_value) args.set(a.name, *a.default_value);
    TERN_CHECK_ARG(args.has(a.name), "model '", name, "' needs argument '", a.name, "'");
  }
  TERN_CHECK_ARG(num_classes > 0, "model '", name, "': num_classes must be positive, got ",
                 num_classes);
  return e.build(input_shape, num_classes, args);
}

}  // namespace tern::models
