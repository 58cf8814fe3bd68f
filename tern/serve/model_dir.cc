// Model directories: the atomic writer, the validating reader, the fingerprint.
#include "tern/serve/model_dir.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "tern/base/error.h"
#include "tern/base/sha256.h"
#include "tern/base/version.h"
#include "tern/data/image_codec.h"
#include "tern/data/pipeline_spec.h"
#include "tern/io/atomic_file.h"
#include "tern/ir/parser.h"
#include "tern/ir/printer.h"
#include "tern/serve/rebatch.h"

namespace tern::serve {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// --- JSON helpers: every error names the file and the key ---

const json& field(const json& obj, const std::string& key, const std::string& where,
                  const std::string& file) {
  if (!obj.is_object())
    throw_error(ErrorCode::kInvalidArgument, file, ": '", where, "' must be an object");
  auto it = obj.find(key);
  if (it == obj.end())
    throw_error(ErrorCode::kInvalidArgument, file, ": missing key '", where, ".", key, "'");
  return *it;
}

std::string string_field(const json& obj, const std::string& key, const std::string& where,
                         const std::string& file) {
  const json& v = field(obj, key, where, file);
  if (!v.is_string())
    throw_error(ErrorCode::kInvalidArgument, file, ": key '", where, ".", key,
                "' must be a string");
  return v.get<std::string>();
}

json parse_json_text(std::string_view text, const std::string& path) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw_error(ErrorCode::kInvalidArgument, path, ": malformed JSON");
  if (!j.is_object()) throw_error(ErrorCode::kInvalidArgument, path, ": must be a JSON object");
  return j;
}

json parse_json_file(const std::string& dir, const std::string& name) {
  std::string path = dir + "/" + name;
  return parse_json_text(io::read_file(path), path);
}

// --- signatures.json ---

json spec_json(const TensorSpec& spec) {
  return {{"dtype", std::string(wire_dtype_name(spec.dtype))}, {"shape", spec.shape}};
}

TensorSpec read_spec(const json& j, const std::string& where, const std::string& file) {
  TensorSpec spec;
  std::string dtype = string_field(j, "dtype", where, file);
  auto d = parse_wire_dtype(dtype);
  if (!d || *d == WireDType::kInvalid)
    throw_error(ErrorCode::kInvalidArgument, file, ": key '", where, ".dtype' has unknown dtype '",
                dtype, "'");
  spec.dtype = *d;
  const json& shape = field(j, "shape", where, file);
  if (!shape.is_array())
    throw_error(ErrorCode::kInvalidArgument, file, ": key '", where, ".shape' must be an array");
  for (const json& dim : shape) {
    if (!dim.is_number_integer() || dim.get<int64_t>() < -1)
      throw_error(ErrorCode::kInvalidArgument, file, ": key '", where,
                  ".shape' must hold integers >= -1");
    spec.shape.push_back(dim.get<int64_t>());
  }
  return spec;
}

std::string method_name(data::ResizeMethod m) {
  return m == data::ResizeMethod::kNearest ? "nearest" : "bilinear";
}

void image_decoder_json(const InputDecoder& d, json& dec) {
  dec["channels"] = d.channels;
  if (d.height > 0) {
    dec["size"] = {d.height, d.width};
    dec["interpolation"] = method_name(d.method);
  }
  if (d.steps.empty()) return;
  json steps = json::array();
  for (const auto& f : d.steps) {
    json st = {{"fn", data::element_fn_name(f.kind)}, {"size", {f.height, f.width}}};
    if (f.kind == data::ElementFnKind::kResize) st["interpolation"] = method_name(f.method);
    steps.push_back(st);
  }
  dec["steps"] = steps;
}

// [height, width] of positive integers.
std::pair<int64_t, int64_t> read_size(const json& j, const std::string& where,
                                      const std::string& file) {
  const json& v = field(j, "size", where, file);
  if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer() ||
      v[0].get<int64_t>() <= 0 || v[1].get<int64_t>() <= 0)
    throw_error(ErrorCode::kInvalidArgument, file, ": key '", where,
                ".size' must be [height, width] of positive integers");
  return {v[0].get<int64_t>(), v[1].get<int64_t>()};
}

data::ResizeMethod read_method(const json& j, const std::string& where, const std::string& file) {
  std::string m = string_field(j, "interpolation", where, file);
  if (m == "bilinear") return data::ResizeMethod::kBilinear;
  if (m == "nearest") return data::ResizeMethod::kNearest;
  throw_error(ErrorCode::kInvalidArgument, file, ": key '", where, ".interpolation' is '", m,
              "'; expected bilinear or nearest");
}

void read_image_decoder(const json& j, const std::string& where, const std::string& file,
                        InputDecoder& d) {
  if (j.contains("size")) {
    std::tie(d.height, d.width) = read_size(j, where, file);
    d.method = read_method(j, where, file);
  }
  if (!j.contains("steps")) return;
  const json& steps = j["steps"];
  if (!steps.is_array())
    throw_error(ErrorCode::kInvalidArgument, file, ": key '", where, ".steps' must be an array");
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string w = str_cat(where, ".steps[", i, "]");
    std::string fn = string_field(steps[i], "fn", w, file);
    data::ElementFnSpec f;
    if (fn == "resize") {
      f.kind = data::ElementFnKind::kResize;
      f.method = read_method(steps[i], w, file);
    } else if (fn == "center_crop") {
      f.kind = data::ElementFnKind::kCenterCrop;
    } else {
      throw_error(ErrorCode::kInvalidArgument, file, ": key '", w, ".fn' is '", fn,
                  "'; expected resize or center_crop");
    }
    std::tie(f.height, f.width) = read_size(steps[i], w, file);
    d.steps.push_back(f);
  }
}

json feature_spec_json(const InputDecoder& d) {
  const data::FeatureSpec& f = d.example_spec[0];
  return {{"type", std::string(data::feature_kind_name(f.kind))},
          {"dtype", std::string(dtype_name(f.dtype))},
          {"shape", f.shape},
          {"default", f.default_value}};
}

// A FixedLen feature spec named `feature` (checked by data::validate_feature_specs).
data::FeatureSpec read_feature_spec(const json& j, const std::string& feature,
                                    const std::string& where, const std::string& file) {
  data::FeatureSpec f;
  f.name = feature;
  std::string type = string_field(j, "type", where, file);
  if (type == "bytes_list") {
    f.kind = data::FeatureKind::kBytes;
  } else if (type == "float_list") {
    f.kind = data::FeatureKind::kFloat;
  } else if (type == "int64_list") {
    f.kind = data::FeatureKind::kInt64;
  } else {
    throw_error(ErrorCode::kInvalidArgument, file, ": key '", where, ".type' is '", type,
                "'; expected bytes_list, float_list or int64_list");
  }
  try {
    f.dtype = parse_dtype(string_field(j, "dtype", where, file));
    f.shape = field(j, "shape", where, file).get<std::vector<int64_t>>();
    f.default_value = field(j, "default", where, file).get<std::vector<double>>();
    data::validate_feature_specs({f}, where);
  } catch (const json::exception& e) {
    throw_error(ErrorCode::kInvalidArgument, file, ": key '", where, "': ", e.what());
  } catch (const Error& e) {
    throw_error(ErrorCode::kInvalidArgument, file, ": ", e.message());
  }
  return f;
}

json signatures_json(const StoredSignatures& sigs) {
  json out = json::object();
  for (const auto& [name, s] : sigs) {
    json inputs = json::object(), outputs = json::object();
    for (const auto& [alias, spec] : s.signature.inputs) {
      json j = spec_json(spec);
      j["tensor"] = s.input_tensors.at(alias);
      if (spec.nullable) j["nullable"] = true;
      auto d = s.decoders.find(alias);
      if (d != s.decoders.end() && d->second.kind != DecoderKind::kNone) {
        json dec = {{"kind", std::string(decoder_kind_name(d->second.kind))}};
        if (d->second.kind == DecoderKind::kExample) {
          dec["feature"] = d->second.feature;
          if (!d->second.example_spec.empty()) dec["spec"] = feature_spec_json(d->second);
        }
        if (d->second.kind == DecoderKind::kImage) image_decoder_json(d->second, dec);
        j["decoder"] = dec;
      }
      inputs[alias] = j;
    }
    for (const auto& [alias, spec] : s.signature.outputs) {
      json j = spec_json(spec);
      if (auto l = s.output_labels.find(alias); l != s.output_labels.end()) {
        j["labels"] = l->second;
      } else {
        j["tensor"] = s.output_tensors.at(alias);
      }
      outputs[alias] = j;
    }
    out[name] = {
        {"method_name", s.signature.method_name}, {"inputs", inputs}, {"outputs", outputs}};
  }
  return {{"signatures", out}};
}

InputDecoder read_decoder(const json& j, const std::string& where, const std::string& file) {
  InputDecoder d;
  std::string kind = string_field(j, "kind", where, file);
  if (kind == "image") {
    d.kind = DecoderKind::kImage;
    const json& c = field(j, "channels", where, file);
    if (!c.is_number_integer())
      throw_error(ErrorCode::kInvalidArgument, file, ": key '", where,
                  ".channels' must be an integer");
    d.channels = c.get<int>();
    read_image_decoder(j, where, file, d);
  } else if (kind == "example") {
    d.kind = DecoderKind::kExample;
    d.feature = string_field(j, "feature", where, file);
    if (j.contains("spec"))
      d.example_spec = {read_feature_spec(j["spec"], d.feature, where + ".spec", file)};
  } else if (kind == "fingerprint") {
    d.kind = DecoderKind::kFingerprint;
  } else {
    throw_error(ErrorCode::kInvalidArgument, file, ": key '", where, ".kind' is '", kind,
                "'; expected image, example or fingerprint");
  }
  return d;
}

StoredSignatures read_signatures(const json& root, const std::string& file) {
  StoredSignatures sigs;
  const json& all = field(root, "signatures", "", file);
  if (!all.is_object() || all.empty())
    throw_error(ErrorCode::kInvalidArgument, file, ": key 'signatures' must be a non-empty object");
  for (const auto& [name, j] : all.items()) {
    std::string where = "signatures." + name;
    StoredSignature s;
    s.signature.method_name = string_field(j, "method_name", where, file);
    for (const char* side : {"inputs", "outputs"}) {
      const json& m = field(j, side, where, file);
      if (!m.is_object() || m.empty())
        throw_error(ErrorCode::kInvalidArgument, file, ": key '", where, ".", side,
                    "' must be a non-empty object");
      for (const auto& [alias, e] : m.items()) {
        std::string w = where + "." + side + "." + alias;
        TensorSpec spec = read_spec(e, w, file);
        if (std::string(side) == "inputs") {
          std::string tensor = string_field(e, "tensor", w, file);
          spec.name = tensor + ":0";
          s.input_tensors[alias] = tensor;
          if (e.contains("nullable")) {
            if (!e["nullable"].is_boolean())
              throw_error(ErrorCode::kInvalidArgument, file, ": key '", w,
                          ".nullable' must be true or false");
            spec.nullable = e["nullable"].get<bool>();
          }
          if (e.contains("decoder"))
            s.decoders[alias] = read_decoder(e["decoder"], w + ".decoder", file);
          s.signature.inputs[alias] = spec;
        } else {
          if (e.contains("labels")) {
            s.output_labels[alias] = string_field(e, "labels", w, file);
          } else {
            std::string tensor = string_field(e, "tensor", w, file);
            spec.name = tensor + ":0";
            s.output_tensors[alias] = tensor;
          }
          s.signature.outputs[alias] = spec;
        }
      }
    }
    sigs[name] = std::move(s);
  }
  return sigs;
}

// --- validation against the graph ---

std::string spec_string(const TensorSpec& s) {
  std::string out = str_cat(wire_dtype_name(s.dtype), "[");
  for (size_t i = 0; i < s.shape.size(); ++i) out += str_cat(i ? "," : "", s.shape[i]);
  return out + "]";
}

// A signature spec agrees with a graph value of batch dim 0: same dtype, shape [-1] + the rest; a
// rank-0 output (a reduction over the whole batch) is the spec [].
bool spec_matches(const TensorSpec& spec, const TensorType& t, bool is_output) {
  if (spec.dtype != wire_dtype_of(t.dtype)) return false;
  if (is_output && t.shape.rank() == 0) return spec.shape.empty();
  if (static_cast<int>(spec.shape.size()) != t.shape.rank() || spec.shape.empty()) return false;
  if (spec.shape[0] != -1) return false;
  for (int i = 1; i < t.shape.rank(); ++i) {
    if (spec.shape[static_cast<size_t>(i)] != t.shape.dim(i)) return false;
  }
  return true;
}

std::string batchless(const TensorType& t) {
  if (t.shape.rank() == 0) return str_cat(wire_dtype_name(wire_dtype_of(t.dtype)), "[]");
  std::string out = str_cat(wire_dtype_name(wire_dtype_of(t.dtype)), "[-1");
  for (int i = 1; i < t.shape.rank(); ++i) out += str_cat(",", t.shape.dim(i));
  return out + "]";
}

size_t count_labels(const std::string& text) {
  size_t n = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++n;
    start = end + 1;
  }
  return n;
}

void validate_signatures(const ModelDirContents& c, const std::string& file) {
  const ir::Graph& g = *c.graph;
  std::map<std::string, const ir::Value*> outputs;
  for (const auto& o : g.outputs()) outputs[o.name] = o.value;
  for (const auto& [name, s] : c.signatures) {
    std::set<std::string> fed;
    for (const auto& [alias, spec] : s.signature.inputs) {
      std::string w = str_cat("signature '", name, "' input '", alias, "'");
      auto t = s.input_tensors.find(alias);
      TERN_CHECK_ARG(t != s.input_tensors.end(), file, ": ", w, " names no graph tensor");
      ir::Node* in = g.find_input(t->second);
      if (!in)
        throw_error(ErrorCode::kInvalidArgument, file, ": ", w, " names graph input '", t->second,
                    "', which ", kGraphFile, " does not have");
      TERN_CHECK_ARG(fed.insert(t->second).second, file, ": ", w, " feeds graph input '", t->second,
                     "' a second time");
      const TensorType& type = in->output()->type();
      auto d = s.decoders.find(alias);
      InputDecoder dec = d == s.decoders.end() ? InputDecoder{} : d->second;
      if (spec.nullable && spec.dtype != WireDType::kFloat && spec.dtype != WireDType::kDouble &&
          spec.dtype != WireDType::kString)
        throw_error(ErrorCode::kInvalidArgument, file, ": ", w, " is nullable but ",
                    spec_string(spec), "; only DT_FLOAT, DT_DOUBLE and DT_STRING inputs can "
                    "carry a missing value");
      if (dec.kind == DecoderKind::kNone) {
        if (!spec_matches(spec, type, false))
          throw_error(ErrorCode::kInvalidArgument, file, ": ", w, " is ", spec_string(spec),
                      " but graph input '", t->second, "' is ", batchless(type));
        continue;
      }
      if (spec.dtype != WireDType::kString || spec.shape != std::vector<int64_t>{-1})
        throw_error(ErrorCode::kInvalidArgument, file, ": ", w, " has a ",
                    decoder_kind_name(dec.kind), " decoder, so it must be DT_STRING[-1], not ",
                    spec_string(spec));
      if (dec.kind == DecoderKind::kImage) {
        bool ok = (type.dtype == DType::kU8 || type.dtype == DType::kF32) &&
                  type.shape.rank() == 4 &&
                  (dec.channels == 0 || type.shape.dim(3) == dec.channels);
        if (!ok)
          throw_error(ErrorCode::kInvalidArgument, file, ": ", w,
                      " decodes images with channels=", dec.channels, " but graph input '",
                      t->second, "' is ", batchless(type), " (u8 or f32 [-1, H, W, C] needed)");
      } else if (dec.kind == DecoderKind::kFingerprint) {
        if (type.dtype != DType::kI64 || type.shape.rank() != 1)
          throw_error(ErrorCode::kInvalidArgument, file, ": ", w,
                      " has a fingerprint decoder but graph input '", t->second, "' is ",
                      batchless(type), " (DT_INT64[-1] needed)");
      } else if (dec.feature.empty()) {
        throw_error(ErrorCode::kInvalidArgument, file, ": ", w, " has an empty decoder feature");
      }
    }
    // A signature may feed only some graph inputs (it runs the part of the graph its outputs
    // need, rebatch.h's prune_to_outputs), but every input its outputs read.
    std::vector<std::string> read_outputs;
    for (const auto& [alias, tensor] : s.output_tensors) {
      if (outputs.count(tensor)) read_outputs.push_back(tensor);
    }
    for (const std::string& input : inputs_read_by(g, read_outputs)) {
      if (!fed.count(input))
        throw_error(ErrorCode::kInvalidArgument, file, ": signature '", name,
                    "' feeds no alias to graph input '", input, "', which its outputs read");
    }
    for (const auto& [alias, spec] : s.signature.outputs) {
      std::string w = str_cat("signature '", name, "' output '", alias, "'");
      if (auto l = s.output_labels.find(alias); l != s.output_labels.end()) {
        auto a = c.assets.find(l->second);
        if (a == c.assets.end())
          throw_error(ErrorCode::kInvalidArgument, file, ": ", w, " names labels file '", l->second,
                      "', which ", kAssetsDir, "/ does not have");
        std::vector<int64_t> want{-1, static_cast<int64_t>(count_labels(a->second))};
        if (spec.dtype != WireDType::kString || spec.shape != want)
          throw_error(ErrorCode::kInvalidArgument, file, ": ", w, " is ", spec_string(spec),
                      " but ", kAssetsDir, "/", l->second, " holds ", want[1],
                      " labels (DT_STRING[-1,", want[1], "])");
        continue;
      }
      auto t = s.output_tensors.find(alias);
      TERN_CHECK_ARG(t != s.output_tensors.end(), file, ": ", w, " names no graph tensor");
      auto o = outputs.find(t->second);
      if (o == outputs.end())
        throw_error(ErrorCode::kInvalidArgument, file, ": ", w, " names graph output '", t->second,
                    "', which ", kGraphFile, " does not have");
      if (!spec_matches(spec, o->second->type(), true))
        throw_error(ErrorCode::kInvalidArgument, file, ": ", w, " is ", spec_string(spec),
                    " but graph output '", t->second, "' is ", batchless(o->second->type()));
    }
  }
}

void validate_weights(const ir::Graph& g, const io::NamedTensors& weights,
                      const std::string& file) {
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : weights) by_name[name] = &t;
  std::set<std::string> read;
  for (ir::Node* n : g.nodes()) {
    if (n->op_name() != "variable") continue;
    const std::string& name = n->attrs().get_string("name");
    read.insert(name);
    auto it = by_name.find(name);
    if (it == by_name.end())
      throw_error(ErrorCode::kInvalidArgument, file, ": no tensor '", name, "', which ", kGraphFile,
                  " reads");
    if (it->second->type() != n->output()->type())
      throw_error(ErrorCode::kInvalidArgument, file, ": tensor '", name, "' is ",
                  it->second->type().to_string(), " but ", kGraphFile, " reads it as ",
                  n->output()->type().to_string());
  }
  for (const auto& [name, t] : weights) {
    if (!read.count(name))
      throw_error(ErrorCode::kInvalidArgument, file, ": tensor '", name, "' is not read by ",
                  kGraphFile);
  }
}

bool valid_asset_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  return name.find('/') == std::string::npos && name.find('\\') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

void validate(const ModelDirContents& c, const std::string& dir) {
  TERN_CHECK_ARG(c.graph != nullptr, dir, ": no graph");
  for (const auto& [name, bytes] : c.assets) {
    TERN_CHECK_ARG(valid_asset_name(name), dir, "/", kAssetsDir, ": invalid asset file name '",
                   name, "' (a plain file name, no '/')");
  }
  validate_weights(*c.graph, c.weights, dir + "/" + kWeightsFile);
  validate_signatures(c, dir + "/" + kSignaturesFile);
}

// --- writing ---

std::string temp_sibling(const fs::path& dir) {
  static std::atomic<int> counter{0};
  return (dir.parent_path() /
          str_cat(".", dir.filename().string(), ".tmp-", ::getpid(), "-", counter.fetch_add(1)))
      .string();
}

}  // namespace

StoredSignatures parse_signatures(std::string_view text, const std::string& file) {
  return read_signatures(parse_json_text(text, file), file);
}

std::string write_signatures(const StoredSignatures& signatures) {
  return signatures_json(signatures).dump(2) + "\n";
}

std::string_view decoder_kind_name(DecoderKind kind) {
  switch (kind) {
    case DecoderKind::kNone:
      return "none";
    case DecoderKind::kImage:
      return "image";
    case DecoderKind::kExample:
      return "example";
    case DecoderKind::kFingerprint:
      return "fingerprint";
  }
  return "none";
}

bool image_decoder_step(data::ElementFnKind kind) {
  return kind == data::ElementFnKind::kResize || kind == data::ElementFnKind::kCenterCrop;
}

Tensor run_image_decoder(const InputDecoder& decoder, std::string_view bytes,
                         const std::string& what) {
  TERN_CHECK_ARG(decoder.kind == DecoderKind::kImage, what, ": not an image decoder");
  Tensor image = decoder.height > 0
                     ? data::image_dir_decode(bytes, decoder.channels, decoder.height,
                                              decoder.width, decoder.method, what)
                     : data::decode_image(bytes, {.channels = decoder.channels}, what);
  for (const data::ElementFnSpec& f : decoder.steps) {
    TERN_CHECK_ARG(image_decoder_step(f.kind), what, ": '", data::element_fn_name(f.kind),
                   "' cannot run in an image decoder");
    try {
      image = data::apply_element_fn(f, {image}, 0, /*training=*/false)[0];
    } catch (const Error& e) {
      throw_error(ErrorCode::kInvalidArgument, what, ": ", e.message());
    }
  }
  return image;
}

std::string fingerprint_model_dir(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), dir).generic_string();
    if (rel != kFingerprintFile) files.push_back(rel);
  }
  std::sort(files.begin(), files.end());
  Sha256 h;
  for (const auto& rel : files) {
    std::string bytes = io::read_file(dir + "/" + rel);
    std::string head = str_cat(rel, '\0', bytes.size(), '\0');
    h.update(head);
    h.update(bytes);
  }
  return h.hex_digest();
}

std::string write_model_dir(const ModelDirContents& c, const std::string& dir) {
  TERN_CHECK_ARG(!dir.empty(), "write_model_dir: empty directory name");
  fs::path final_path = fs::absolute(fs::path(dir)).lexically_normal();
  if (final_path.filename().empty()) final_path = final_path.parent_path();
  if (fs::exists(final_path))
    throw_error(ErrorCode::kFailedPrecondition, "model directory '", dir,
                "' already exists; versions are never overwritten");
  validate(c, dir);
  fs::create_directories(final_path.parent_path());
  std::string tmp = temp_sibling(final_path);
  std::string fingerprint;
  try {
    fs::create_directory(tmp);
    json manifest = {{"format", "tern.model"},
                     {"format_version", kModelDirFormatVersion},
                     {"model", c.model_name},
                     {"tern_version", version()}};  // informational; part of the fingerprint
    io::write_new_file_synced(tmp + "/" + kManifestFile, manifest.dump(2) + "\n");
    io::write_new_file_synced(tmp + "/" + kGraphFile, ir::print_graph(*c.graph));
    io::write_new_file_synced(
        tmp + "/" + kWeightsFile,
        io::encode_safetensors(c.weights, {{"format", "tern"}, {"model", c.model_name}}));
    io::write_new_file_synced(tmp + "/" + kSignaturesFile, write_signatures(c.signatures));
    fs::create_directory(tmp + "/" + kAssetsDir);
    for (const auto& [name, bytes] : c.assets) {
      io::write_new_file_synced(tmp + "/" + kAssetsDir + "/" + name, bytes);
    }
    io::fsync_directory(tmp + "/" + kAssetsDir);
    fingerprint = fingerprint_model_dir(tmp);
    io::write_new_file_synced(tmp + "/" + kFingerprintFile,
                              json({{"sha256", fingerprint}}).dump(2) + "\n");
    io::fsync_directory(tmp);
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final_path.c_str(), RENAME_NOREPLACE) != 0) {
      int e = errno;
      throw_error(e == EEXIST ? ErrorCode::kFailedPrecondition : ErrorCode::kUnavailable,
                  "cannot rename '", tmp, "' to '", dir, "': ", std::strerror(e));
    }
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  io::fsync_directory(final_path.parent_path().string());
  return fingerprint;
}

ModelDirContents read_model_dir(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw_error(ErrorCode::kNotFound, "model directory '", dir, "' does not exist");
  for (const char* f :
       {kManifestFile, kGraphFile, kWeightsFile, kSignaturesFile, kFingerprintFile}) {
    if (!fs::is_regular_file(dir + "/" + f))
      throw_error(ErrorCode::kNotFound, dir, "/", f, ": missing (not a complete model directory)");
  }
  ModelDirContents c;
  {
    std::string file = dir + "/" + kManifestFile;
    json m = parse_json_file(dir, kManifestFile);
    std::string format = string_field(m, "format", "", file);
    TERN_CHECK_ARG(format == "tern.model", file, ": key 'format' is '", format,
                   "', expected 'tern.model'");
    const json& v = field(m, "format_version", "", file);
    TERN_CHECK_ARG(v.is_number_integer() && v.get<int>() == kModelDirFormatVersion, file,
                   ": key 'format_version' is ", v.dump(), "; this build reads version ",
                   kModelDirFormatVersion);
    c.model_name = string_field(m, "model", "", file);
    if (m.contains("tern_version")) c.tern_version = string_field(m, "tern_version", "", file);
  }
  {
    std::string file = dir + "/" + kFingerprintFile;
    json f = parse_json_file(dir, kFingerprintFile);
    std::string want = string_field(f, "sha256", "", file);
    std::string have = fingerprint_model_dir(dir);
    if (want != have)
      throw_error(ErrorCode::kDataLoss, file, ": fingerprint mismatch: the files hash to ", have,
                  " but the fingerprint says ", want, " (a file was changed or is incomplete)");
    c.fingerprint = have;
  }
  std::string graph_file = dir + "/" + kGraphFile;
  c.graph = ir::parse_graph(io::read_file(graph_file), graph_file);
  std::string weights_file = dir + "/" + kWeightsFile;
  c.weights = io::decode_safetensors(io::read_file(weights_file), weights_file).tensors;
  c.signatures =
      read_signatures(parse_json_file(dir, kSignaturesFile), dir + "/" + kSignaturesFile);
  if (fs::is_directory(dir + "/" + kAssetsDir)) {
    for (const auto& e : fs::directory_iterator(dir + "/" + kAssetsDir)) {
      if (e.is_regular_file())
        c.assets[e.path().filename().string()] = io::read_file(e.path().string());
    }
  }
  validate(c, dir);
  return c;
}

ServablePtr load(const std::string& dir) {
  return load_servable(dir);
}

}  // namespace tern::serve
