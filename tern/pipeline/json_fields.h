// JsonField: a node of a parsed JSON document with the dotted path that leads to it, read with
// checked types; every problem is an InvalidArgument "<file>: <path>: <what>", and only() rejects
// keys nobody expects. Shared by the readers of statistics.json and anomalies.json; internal to
// tern/pipeline (nlohmann-json stays out of the public headers).
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tern/base/error.h"

namespace tern::pipeline {

// Parses `text`; bytes that are not JSON are a DataLoss naming `file` and the byte offset.
inline nlohmann::json parse_json_text(std::string_view text, const std::string& file) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw_error(ErrorCode::kDataLoss, file, ": not valid JSON at byte offset ", e.byte, " (",
                e.what(), ")");
  } catch (const nlohmann::json::exception& e) {  // e.g. a number too large for a double
    throw_error(ErrorCode::kDataLoss, file, ": not valid JSON (", e.what(), ")");
  }
}

class JsonField {
 public:
  JsonField(const nlohmann::json& node, std::string path, const std::string& file)
      : node_(node), path_(std::move(path)), file_(file) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw_error(ErrorCode::kInvalidArgument, file_, ": ", path_.empty() ? "(top level)" : path_,
                ": ", what);
  }
  const nlohmann::json& node() const { return node_; }
  const std::string& path() const { return path_; }

  bool has(const char* key) const { return node_.is_object() && node_.contains(key); }
  JsonField operator[](const char* key) const {
    if (!node_.is_object()) fail("expected an object");
    auto it = node_.find(key);
    if (it == node_.end()) JsonField(node_, child(key), file_).fail("missing");
    return JsonField(*it, child(key), file_);
  }
  // A member found by iterating object().items().
  JsonField item(const std::string& key, const nlohmann::json& value) const {
    return JsonField(value, child(key.c_str()), file_);
  }
  JsonField at(size_t i) const { return JsonField(node_[i], str_cat(path_, "[", i, "]"), file_); }
  // Rejects keys outside `known`.
  void only(std::initializer_list<std::string_view> known) const {
    if (!node_.is_object()) fail("expected an object");
    for (const auto& [k, v] : node_.items()) {
      bool ok = false;
      for (std::string_view n : known) ok = ok || n == k;
      if (!ok) JsonField(v, child(k.c_str()), file_).fail("unknown key");
    }
  }
  size_t array_size() const {
    if (!node_.is_array()) fail("expected an array");
    return node_.size();
  }
  const nlohmann::json& object() const {
    if (!node_.is_object()) fail("expected an object");
    return node_;
  }

  int64_t as_int(int64_t min = std::numeric_limits<int64_t>::min()) const {
    if (node_.is_number_integer()) {
      if (node_.is_number_unsigned() &&
          node_.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail("integer out of range");
      const auto v = node_.get<int64_t>();
      if (v < min) fail(str_cat("must be >= ", min, ", got ", v));
      return v;
    }
    fail("expected an integer");
  }
  int64_t as_count() const { return as_int(0); }
  // A number, or null for a value that was not finite.
  double as_double() const {
    if (node_.is_number()) return node_.get<double>();
    if (node_.is_null()) return std::numeric_limits<double>::quiet_NaN();
    fail("expected a number");
  }
  bool as_bool() const {
    if (node_.is_boolean()) return node_.get<bool>();
    fail("expected true or false");
  }
  std::string as_string() const {
    if (node_.is_string()) return node_.get<std::string>();
    fail("expected a string");
  }

 private:
  std::string child(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

  const nlohmann::json& node_;
  std::string path_;
  const std::string& file_;
};

// A double for JSON: non-finite values as null.
inline nlohmann::ordered_json json_number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

}  // namespace tern::pipeline
