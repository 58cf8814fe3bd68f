// The [transform] table read key by key (toml++ is private to this file): checked types, keys that
// do not apply to an op refused, unknown keys with a did-you-mean, every error at file:line.
#include "tern/transform/spec.h"

#include <toml++/toml.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "tern/io/atomic_file.h"
#include "tern/ops/registry.h"

namespace tern::transform {
namespace {

constexpr uint64_t kMaxSpecBytes = uint64_t{16} << 20;

[[noreturn]] void spec_error(const std::string& file, const toml::source_region& where,
                             const std::string& msg) {
  if (where.begin.line > 0)
    throw SpecError(ErrorCode::kInvalidArgument, str_cat(file, ":", where.begin.line, ": ", msg));
  throw SpecError(ErrorCode::kInvalidArgument, str_cat(file, ": ", msg));
}

// One table read key by key; finish() refuses the keys nobody read.
class Table {
 public:
  Table(const toml::table& t, std::string path, std::string file)
      : t_(t), path_(std::move(path)), file_(std::move(file)) {}

  std::string full(const std::string& key) const { return path_ + "." + key; }
  const toml::node* get(const std::string& key) {
    known_.insert(key);
    return t_.get(key);
  }
  bool has(const std::string& key) const { return t_.contains(key); }
  int line() const { return static_cast<int>(t_.source().begin.line); }

  [[noreturn]] void fail(const std::string& key, const std::string& msg) const {
    const toml::node* n = t_.get(key);
    spec_error(file_, n ? n->source() : t_.source(),
               key.empty() ? str_cat("'", path_, "': ", msg) : str_cat("key '", full(key), "' ", msg));
  }

  std::optional<std::string> string(const std::string& key) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    if (auto v = n->value_exact<std::string>()) return *v;
    fail(key, "must be a string");
  }
  std::optional<int64_t> integer(const std::string& key, int64_t min) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    auto v = n->value_exact<int64_t>();
    if (!v) fail(key, "must be an integer");
    if (*v < min) fail(key, str_cat("must be >= ", min, ", got ", *v));
    return *v;
  }
  std::optional<std::vector<std::string>> strings(const std::string& key) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    const toml::array* a = n->as_array();
    if (!a) fail(key, "must be an array of strings");
    std::vector<std::string> out;
    for (const auto& e : *a) {
      auto v = e.value_exact<std::string>();
      if (!v) fail(key, "must be an array of strings");
      out.push_back(*v);
    }
    return out;
  }
  std::optional<std::vector<int64_t>> integers(const std::string& key) {
    const toml::node* n = get(key);
    if (!n) return std::nullopt;
    const toml::array* a = n->as_array();
    if (!a) fail(key, "must be an array of integers");
    std::vector<int64_t> out;
    for (const auto& e : *a) {
      auto v = e.value_exact<int64_t>();
      if (!v) fail(key, "must be an array of integers");
      out.push_back(*v);
    }
    return out;
  }
  void finish() const {
    for (const auto& [k, v] : t_) {
      std::string key(k.str());
      if (known_.count(key)) continue;
      std::string best =
          ops::closest_name(key, std::vector<std::string>(known_.begin(), known_.end()));
      spec_error(file_, v.source(),
                 str_cat("unknown key '", full(key), "'",
                         best.empty() ? "" : str_cat(" (did you mean '", full(best), "'?)")));
    }
  }

 private:
  const toml::table& t_;
  std::string path_, file_;
  std::set<std::string> known_;
};

const std::map<std::string, TransformOp>& op_names() {
  static const std::map<std::string, TransformOp> kOps = {
      {"z_score", TransformOp::kZScore},       {"scale_to_0_1", TransformOp::kScaleTo01},
      {"identity", TransformOp::kIdentity},    {"vocabulary", TransformOp::kVocabulary},
      {"bucketize", TransformOp::kBucketize},  {"hash", TransformOp::kHash},
      {"cross", TransformOp::kCross},
  };
  return kOps;
}

bool numeric_op(TransformOp op) {
  return op == TransformOp::kZScore || op == TransformOp::kScaleTo01 ||
         op == TransformOp::kIdentity || op == TransformOp::kBucketize;
}

// The keys each op takes besides name, input(s) and op.
std::set<std::string> op_keys(TransformOp op) {
  switch (op) {
    case TransformOp::kZScore:
    case TransformOp::kScaleTo01:
    case TransformOp::kIdentity:
      return {"default", "length", "shape"};
    case TransformOp::kBucketize:
      return {"default", "num_buckets", "output"};
    case TransformOp::kVocabulary:
      return {"top_k", "frequency_threshold", "num_oov_buckets", "output"};
    case TransformOp::kHash:
    case TransformOp::kCross:
      return {"hash_buckets", "output"};
  }
  return {};
}

FeatureTransform read_feature(Table& t) {
  FeatureTransform f;
  f.line = t.line();
  std::optional<std::string> op = t.string("op");
  if (!op) t.fail("", "needs key 'op' (z_score, scale_to_0_1, identity, vocabulary, bucketize, "
                      "hash or cross)");
  auto it = op_names().find(*op);
  if (it == op_names().end()) {
    std::vector<std::string> names;
    for (const auto& [n, o] : op_names()) names.push_back(n);
    std::string best = ops::closest_name(*op, names);
    t.fail("op", str_cat("is '", *op, "'; expected one of z_score, scale_to_0_1, identity, "
                         "vocabulary, bucketize, hash, cross",
                         best.empty() ? "" : str_cat(" (did you mean '", best, "'?)")));
  }
  f.op = it->second;
  const std::string opname(transform_op_name(f.op));
  std::optional<std::string> input = t.string("input");
  std::optional<std::vector<std::string>> inputs = t.strings("inputs");
  if (f.op == TransformOp::kCross) {
    if (input) t.fail("input", "does not apply to op 'cross': name its features in 'inputs'");
    if (!inputs) t.fail("", "op 'cross' needs 'inputs' = [two or more bytes features]");
    if (inputs->size() < 2) t.fail("inputs", "must name two or more bytes features (op 'cross')");
    f.inputs = *inputs;
    std::set<std::string> seen;
    for (const auto& in : f.inputs) {
      if (in.empty()) t.fail("inputs", "holds an empty feature name");
      if (!seen.insert(in).second) t.fail("inputs", str_cat("names '", in, "' twice"));
    }
  } else {
    if (inputs) t.fail("inputs", str_cat("does not apply to op '", opname, "' (only to cross): "
                                         "use 'input'"));
    if (!input || input->empty()) t.fail(input ? "input" : "", "needs key 'input' (the raw feature)");
    f.inputs = {*input};
  }
  std::string name;
  for (const auto& in : f.inputs) name += (name.empty() ? "" : "_x_") + in;
  f.name = t.string("name").value_or(name);
  if (f.name.empty()) t.fail("name", "must not be empty");
  // Keys that belong to other ops are named as such rather than as unknown.
  std::set<std::string> allowed = op_keys(f.op);
  for (const char* k : {"default", "length", "shape", "num_buckets", "top_k",
                        "frequency_threshold", "num_oov_buckets", "hash_buckets", "output"}) {
    if (t.has(k) && !allowed.count(k)) t.fail(k, str_cat("does not apply to op '", opname, "'"));
  }
  if (numeric_op(f.op)) {
    f.kind = RawKind::kNumeric;
    if (const toml::node* d = t.get("default")) {
      if (auto s = d->value_exact<std::string>()) {
        if (*s != "mean") t.fail("default", str_cat("is \"", *s, "\"; expected \"mean\" or a number"));
      } else if (auto v = d->value<double>()) {
        if (!std::isfinite(*v)) t.fail("default", "must be a finite number");
        f.default_is_mean = false;
        f.default_value = *v;
      } else {
        t.fail("default", "must be \"mean\" or a number");
      }
    }
  }
  if (allowed.count("length")) {
    f.length = t.integer("length", 1).value_or(1);
    if (std::optional<std::vector<int64_t>> shape = t.integers("shape")) {
      if (t.has("length")) t.fail("shape", "and 'length' exclude each other (shape: an image)");
      if (t.has("default")) t.fail("default", "does not apply to an image (shape): pixels are never missing");
      if (shape->size() != 3)
        t.fail("shape", str_cat("must be [height, width, channels], got ", shape->size(), " dims"));
      for (int64_t d : *shape) {
        if (d < 1 || d > (int64_t{1} << 20)) t.fail("shape", str_cat("has a dim of ", d));
      }
      if ((*shape)[0] * (*shape)[1] * (*shape)[2] > (int64_t{1} << 28))
        t.fail("shape", "is larger than 2^28 pixels");
      f.kind = RawKind::kImage;
      f.shape = *shape;
      f.length = 1;
    }
  }
  if (f.op == TransformOp::kVocabulary || f.op == TransformOp::kHash || f.op == TransformOp::kCross)
    f.kind = RawKind::kCategorical;
  if (f.op == TransformOp::kVocabulary) {
    f.top_k = t.integer("top_k", 0).value_or(0);
    f.frequency_threshold = t.integer("frequency_threshold", 1).value_or(1);
    f.num_oov_buckets = t.integer("num_oov_buckets", 0).value_or(1);
  }
  if (f.op == TransformOp::kBucketize) {
    std::optional<int64_t> n = t.integer("num_buckets", 2);
    if (!n) t.fail("", "op 'bucketize' needs 'num_buckets' (>= 2)");
    if (*n > 100000) t.fail("num_buckets", str_cat("must be <= 100000, got ", *n));
    f.num_buckets = *n;
  }
  if (f.op == TransformOp::kHash || f.op == TransformOp::kCross) {
    std::optional<int64_t> n = t.integer("hash_buckets", 1);
    if (!n) t.fail("", str_cat("op '", opname, "' needs 'hash_buckets' (>= 1)"));
    if (*n > 1000000) t.fail("hash_buckets", str_cat("must be <= 1000000, got ", *n));
    f.hash_buckets = *n;
  }
  if (allowed.count("output")) {
    if (std::optional<std::string> o = t.string("output")) {
      if (*o == "one_hot") {
        f.output = OutputForm::kOneHot;
      } else if (*o == "index") {
        f.output = OutputForm::kIndex;
      } else {
        t.fail("output", str_cat("is \"", *o, "\"; expected \"one_hot\" or \"index\""));
      }
    }
  }
  t.finish();
  return f;
}

std::string render_table(const toml::table& t) {
  toml::table root;
  root.insert("transform", t);
  std::ostringstream os;
  os << toml::toml_formatter(root);
  return os.str() + "\n";
}

}  // namespace

std::string_view transform_op_name(TransformOp op) {
  switch (op) {
    case TransformOp::kZScore:
      return "z_score";
    case TransformOp::kScaleTo01:
      return "scale_to_0_1";
    case TransformOp::kIdentity:
      return "identity";
    case TransformOp::kVocabulary:
      return "vocabulary";
    case TransformOp::kBucketize:
      return "bucketize";
    case TransformOp::kHash:
      return "hash";
    case TransformOp::kCross:
      return "cross";
  }
  return "?";
}

std::string_view raw_kind_name(RawKind kind) {
  switch (kind) {
    case RawKind::kNumeric:
      return "numeric";
    case RawKind::kCategorical:
      return "categorical";
    case RawKind::kImage:
      return "image";
  }
  return "?";
}

std::vector<TransformSpec::RawFeature> TransformSpec::raw_features() const {
  std::vector<RawFeature> out;
  std::set<std::string> seen;
  for (const auto& f : features) {
    for (const auto& in : f.inputs) {
      if (!seen.insert(in).second) continue;
      out.push_back({in, f.kind, f.length, f.shape});
    }
  }
  return out;
}

TransformSpec parse_transform_spec(std::string_view text, const std::string& file) {
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw SpecError(ErrorCode::kInvalidArgument,
                    str_cat(file, ":", e.source().begin.line, ":", e.source().begin.column,
                            ": TOML syntax error: ", e.description()));
  }
  const toml::node* node = root.get("transform");
  if (!node) spec_error(file, {}, "no [transform] table");
  const toml::table* table = node->as_table();
  if (!table) spec_error(file, node->source(), "key 'transform' must be a table ([transform])");
  TransformSpec spec;
  spec.file = file;
  Table t(*table, "transform", file);
  spec.label = t.string("label").value_or("");
  const toml::node* features = t.get("features");
  if (!features)
    t.fail("", "needs [[transform.features]] entries (one table per output feature)");
  const toml::array* arr = features->as_array();
  if (!arr || arr->empty())
    t.fail("features", "must be a non-empty array of tables ([[transform.features]])");
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::node& e = *arr->get(i);
    std::string path = str_cat("transform.features[", i, "]");
    if (!e.is_table()) spec_error(file, e.source(), str_cat("'", path, "' must be a table"));
    Table ft(*e.as_table(), path, file);
    spec.features.push_back(read_feature(ft));
  }
  t.finish();
  // Across features: unique output names; one kind (and length / shape) per raw feature; the
  // label is not an input (the server has no label).
  std::map<std::string, const FeatureTransform*> outputs;
  std::map<std::string, const FeatureTransform*> raw;
  for (size_t i = 0; i < spec.features.size(); ++i) {
    const FeatureTransform& f = spec.features[i];
    const toml::node& e = *arr->get(i);
    std::string path = str_cat("transform.features[", i, "]");
    if (auto [it, fresh] = outputs.emplace(f.name, &f); !fresh)
      spec_error(file, e.source(),
                 str_cat("'", path, "': output name '", f.name, "' is taken by the entry at line ",
                         it->second->line, " (set 'name')"));
    for (const auto& in : f.inputs) {
      if (in == spec.label)
        spec_error(file, e.source(),
                   str_cat("'", path, "': feature '", in,
                           "' is the label; the served model cannot take it as an input"));
      auto [it, fresh] = raw.emplace(in, &f);
      if (fresh) continue;
      const FeatureTransform& g = *it->second;
      if (g.kind != f.kind || g.length != f.length || g.shape != f.shape)
        spec_error(file, e.source(),
                   str_cat("'", path, "': feature '", in, "' is used as ", raw_kind_name(f.kind),
                           " here but as ", raw_kind_name(g.kind), " (or another length / shape) "
                           "at line ", g.line));
    }
  }
  spec.toml = render_table(*table);
  return spec;
}

TransformSpec read_transform_spec(const std::string& path) {
  std::string text;
  try {
    text = io::read_file(path, kMaxSpecBytes);
  } catch (const Error& e) {
    throw Error(e.code(), str_cat("transform spec: ", e.message()));
  }
  return parse_transform_spec(text, path);
}

std::string describe_spec(const TransformSpec& spec) {
  std::string out;
  if (!spec.label.empty()) out += str_cat("label: ", spec.label, "\n");
  for (const auto& f : spec.features) {
    std::string ins;
    for (const auto& in : f.inputs) ins += (ins.empty() ? "" : ", ") + in;
    out += str_cat(f.name, ": ", transform_op_name(f.op), "(", ins, ")\n");
  }
  return out;
}

}  // namespace tern::transform
