// The one-line pipeline language: stages split and checked, each emitted as a source or
// TransformSpec.
#include "tern/data/pipeline_line.h"

#include <algorithm>
#include <sstream>

#include "tern/base/error.h"
#include "tern/data/example_proto.h"
#include "tern/data/list_files_dataset.h"

namespace tern::data {
namespace {

struct Stage {
  std::string name;
  std::vector<std::string> args;                        // positional
  std::vector<std::pair<std::string, std::string>> kv;  // key=value
  std::string text;
  size_t position = 0;  // 1-based, the source included

  std::string where() const { return str_cat("pipeline stage ", position, " '", text, "'"); }
  std::string get(const std::string& key, const std::string& fallback) const {
    for (const auto& [k, v] : kv)
      if (k == key) return v;
    return fallback;
  }
  [[noreturn]] void fail(const std::string& msg) const {
    throw_error(ErrorCode::kInvalidArgument, where(), ": ", msg);
  }
  void expect_args(size_t min, size_t max) const {
    if (args.size() < min || args.size() > max) {
      fail(str_cat("expected ", min == max ? str_cat(min) : str_cat(min, " to ", max),
                   " arguments, got ", args.size()));
    }
  }
  void expect_keys(const std::vector<std::string>& keys) const {
    for (const auto& [k, v] : kv) {
      if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
      std::string valid;
      for (const auto& key : keys) valid += (valid.empty() ? "" : ", ") + key;
      fail(keys.empty() ? str_cat("takes no key=value options, got '", k, "'")
                        : str_cat("unknown option '", k, "' (options: ", valid, ")"));
    }
  }
  int64_t to_int(const std::string& text_value) const {
    try {
      size_t used = 0;
      const int64_t v = std::stoll(text_value, &used);
      if (used == text_value.size()) return v;
    } catch (const std::exception&) {
    }
    fail(str_cat("'", text_value, "' is not an integer"));
  }
  float to_float(const std::string& text_value) const {
    try {
      size_t used = 0;
      const float v = std::stof(text_value, &used);
      if (used == text_value.size()) return v;
    } catch (const std::exception&) {
    }
    fail(str_cat("'", text_value, "' is not a number"));
  }
  std::vector<float> to_floats(const std::string& text_value) const {
    std::vector<float> out;
    std::stringstream in(text_value);
    std::string item;
    while (std::getline(in, item, ',')) out.push_back(to_float(item));
    return out;
  }
};

std::vector<Stage> split_stages(const std::string& line) {
  std::vector<Stage> out;
  std::stringstream all(line);
  std::string part;
  while (std::getline(all, part, '|')) {
    std::stringstream words(part);
    Stage s;
    s.position = out.size() + 1;
    std::string w;
    while (words >> w) {
      if (s.name.empty()) {
        s.name = w;
      } else if (auto eq = w.find('='); eq != std::string::npos && eq > 0) {
        s.kv.emplace_back(w.substr(0, eq), w.substr(eq + 1));
      } else {
        s.args.push_back(w);
      }
      s.text += (s.text.empty() ? "" : " ") + w;
    }
    if (s.name.empty()) {
      throw_error(ErrorCode::kInvalidArgument, "pipeline stage ", s.position, " is empty in '",
                  line, "'");
    }
    out.push_back(std::move(s));
  }
  TERN_CHECK_ARG(!out.empty(), "pipeline: empty pipeline");
  return out;
}

// What component 0 of the elements holds: decides what `decode` means.
enum class Holds { kTensor, kPath, kBytes };

const std::vector<std::string> kSources = {"images", "files", "tfrecord", "idx"};
const std::vector<std::string> kTransforms = {
    "parse_example", "decode", "resize",   "crop",   "flip", "brightness", "contrast", "normalize",
    "shuffle",       "batch",  "prefetch", "repeat", "take", "skip",       "cache"};

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A FixedLen spec per selected feature of the first record (bytes lists of several values and
// empty lists become VarLen).
std::vector<FeatureSpec> infer_features(const Stage& s, const PipelineLine& p) {
  const std::vector<std::string> files = glob_files(p.inputs);
  if (files.empty()) s.fail("no file matches the tfrecord source");
  TFRecordReader reader(files[0], p.spec.source.tfrecord);
  std::optional<std::string> first = reader.read();
  if (!first) s.fail(str_cat(files[0], " has no records to infer a feature spec from"));
  const Example ex = parse_example_proto(*first, files[0] + " record 0");
  std::vector<std::string> names = s.args;
  if (names.empty())
    for (const auto& [name, f] : ex.features) names.push_back(name);
  std::vector<FeatureSpec> specs;
  for (const std::string& name : names) {
    auto it = ex.features.find(name);
    if (it == ex.features.end()) s.fail(str_cat(files[0], " record 0 has no feature '", name, "'"));
    const Feature& f = it->second;
    if (f.kind == FeatureKind::kNone) s.fail(str_cat("feature '", name, "' is empty in record 0"));
    const auto n = static_cast<int64_t>(f.size());
    if (n == 0 || (f.kind == FeatureKind::kBytes && n > 1)) {
      specs.push_back(var_len_feature(name, f.kind));
    } else if (f.kind == FeatureKind::kBytes || n == 1) {
      specs.push_back(fixed_len_feature(name, f.kind));
    } else {
      specs.push_back(fixed_len_feature(name, f.kind, {n}));
    }
  }
  return specs;
}

void add_source(const Stage& s, PipelineLine& p, Holds& holds) {
  SourceSpec& src = p.spec.source;
  src.seed = 0;
  if (s.name == "images") {
    s.expect_args(1, 1);
    s.expect_keys({});
    src.kind = SourceKind::kImageDir;
    src.decode = false;
    holds = Holds::kPath;
  } else if (s.name == "files") {
    s.expect_args(1, 64);
    s.expect_keys({});
    src.kind = SourceKind::kFiles;
    holds = Holds::kPath;
  } else if (s.name == "tfrecord") {
    s.expect_args(1, 64);
    s.expect_keys({"compression"});
    src.kind = SourceKind::kTFRecord;
    try {
      src.tfrecord.compression = parse_compression(s.get("compression", ""));
    } catch (const Error& e) {
      s.fail(e.message());
    }
    holds = Holds::kBytes;
  } else if (s.name == "idx") {
    s.expect_args(1, 2);
    s.expect_keys({});
    src.kind = SourceKind::kIdx;
    holds = Holds::kTensor;
  } else if (std::find(kTransforms.begin(), kTransforms.end(), s.name) != kTransforms.end()) {
    s.fail(str_cat("the first stage must be a source (", joined(kSources), "), not the transform '",
                   s.name, "'"));
  } else {
    s.fail(str_cat("unknown source '", s.name, "' (sources: ", joined(kSources), ")"));
  }
  p.inputs = s.args;
}

// The image stages: one map transform with one element function each.
bool add_image_stage(const Stage& s, const PipelineLineOptions& o, PipelineLine& p, Holds& holds) {
  ElementFnSpec f;
  if (s.name == "decode") {
    s.expect_args(0, 0);
    s.expect_keys({"channels"});
    if (holds == Holds::kTensor) s.fail("the elements already hold decoded images");
    f.kind = holds == Holds::kPath ? ElementFnKind::kReadImage : ElementFnKind::kDecodeImage;
    f.channels = static_cast<int>(s.to_int(s.get("channels", "0")));
  } else if (s.name == "resize" || s.name == "crop") {
    s.expect_args(2, 2);
    s.expect_keys({});
    f.kind = s.name == "resize" ? ElementFnKind::kResize : ElementFnKind::kRandomCrop;
    f.height = s.to_int(s.args[0]);
    f.width = s.to_int(s.args[1]);
  } else if (s.name == "flip") {
    s.expect_args(0, 0);
    s.expect_keys({});
    f.kind = ElementFnKind::kRandomFlip;
  } else if (s.name == "brightness") {
    s.expect_args(1, 1);
    s.expect_keys({});
    f.kind = ElementFnKind::kRandomBrightness;
    f.max_delta = s.to_float(s.args[0]);
  } else if (s.name == "contrast") {
    s.expect_args(2, 2);
    s.expect_keys({});
    f.kind = ElementFnKind::kRandomContrast;
    f.lower = s.to_float(s.args[0]);
    f.upper = s.to_float(s.args[1]);
  } else if (s.name == "normalize") {
    s.expect_args(0, 0);
    s.expect_keys({"mean", "std"});
    f.kind = ElementFnKind::kNormalize;
    f.mean = s.to_floats(s.get("mean", "0"));
    f.stddev = s.to_floats(s.get("std", "1"));
  } else {
    return false;
  }
  if (s.name != "decode" && holds != Holds::kTensor)
    s.fail("the elements hold file paths or encoded images; add 'decode' first");
  try {
    validate_element_fn(f, s.where());
  } catch (const Error& e) {
    throw_error(ErrorCode::kInvalidArgument, e.message());
  }
  TransformSpec t = map_transform(f, o.map_threads);
  t.seed = o.seed + p.spec.transforms.size();
  t.origin = s.where();
  p.spec.transforms.push_back(std::move(t));
  holds = Holds::kTensor;
  return true;
}

TransformSpec count_transform(const Stage& s, TransformKind kind, int64_t fallback) {
  TransformSpec t;
  t.kind = kind;
  t.size = s.args.empty() ? fallback : s.to_int(s.args[0]);
  return t;
}

void add_transform(const Stage& s, const PipelineLineOptions& o, PipelineLine& p, Holds& holds) {
  if (add_image_stage(s, o, p, holds)) return;
  TransformSpec t;
  if (s.name == "parse_example") {
    s.expect_keys({});
    if (p.spec.source.kind != SourceKind::kTFRecord || !p.spec.transforms.empty())
      s.fail("parse_example reads the records of a tfrecord source: put it right after it");
    p.spec.source.features = infer_features(s, p);
    t = parse_transform(o.map_threads);
    holds = Holds::kBytes;  // component 0 may be an encoded image
  } else if (s.name == "shuffle") {
    s.expect_args(1, 1);
    s.expect_keys({"seed"});
    t = shuffle_transform(s.to_int(s.args[0]),
                          static_cast<uint64_t>(s.to_int(s.get("seed", str_cat(o.seed)))));
  } else if (s.name == "batch") {
    s.expect_args(1, 2);
    s.expect_keys({});
    if (s.args.size() == 2 && s.args[1] != "drop_remainder")
      s.fail("the second argument can only be drop_remainder");
    t = batch_transform(s.to_int(s.args[0]), s.args.size() == 2);
  } else if (s.name == "prefetch") {
    s.expect_args(0, 1);
    s.expect_keys({});
    t = prefetch_transform(s.args.empty() ? kAutotune : s.to_int(s.args[0]));
  } else if (s.name == "repeat") {
    s.expect_args(0, 1);
    s.expect_keys({});
    t = count_transform(s, TransformKind::kRepeat, -1);
    t.apply_to = ApplyTo::kTrain;
  } else if (s.name == "take" || s.name == "skip") {
    s.expect_args(1, 1);
    s.expect_keys({});
    t = count_transform(s, s.name == "take" ? TransformKind::kTake : TransformKind::kSkip, 0);
  } else if (s.name == "cache") {
    s.expect_args(0, 0);
    s.expect_keys({});
    t.kind = TransformKind::kCache;
  } else if (std::find(kSources.begin(), kSources.end(), s.name) != kSources.end()) {
    s.fail("a second source (only the first stage is one)");
  } else {
    s.fail(str_cat("unknown stage '", s.name, "' (stages: ", joined(kTransforms), ")"));
  }
  if (t.size <= 0 && (t.kind == TransformKind::kShuffle || t.kind == TransformKind::kBatch))
    s.fail(str_cat("the size must be positive, got ", t.size));
  t.origin = s.where();
  p.spec.transforms.push_back(std::move(t));
}

}  // namespace

PipelineLine parse_pipeline_line(const std::string& line, const PipelineLineOptions& options) {
  PipelineLine p;
  Holds holds = Holds::kTensor;
  std::vector<Stage> stages = split_stages(line);
  add_source(stages[0], p, holds);
  for (size_t i = 1; i < stages.size(); ++i) add_transform(stages[i], options, p, holds);
  return p;
}

}  // namespace tern::data
