// Section: one table of a TOML config read key by key with checked types; finish() rejects the
// keys nobody read, naming the file, the line and the closest valid key. Used by the readers of
// tern/config (the only files that see toml++; config.h does not include this header).
#pragma once

#include <toml++/toml.h>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tern/base/error.h"
#include "tern/base/strings.h"
#include "tern/config/config.h"
#include "tern/ops/attrs.h"
#include "tern/ops/registry.h"

namespace tern::config {

// Values given by --set carry the flag as their source path (load_config.cc): an error there
// names the flag, not the file.
constexpr const char* kOverrideSourcePrefix = "--set ";

// A ConfigError at `where`: "file:line: msg", "--set key=value: msg", or "file: msg". The message
// quotes keys and string values of the file (or a --set), which may hold any character TOML can
// escape ("\u0000", "\u001b"): it is shown through printable() (bad-input report F24).
[[noreturn]] inline void config_error(const std::string& file, const toml::source_region& where,
                                      const std::string& msg) {
  if (where.path && where.path->rfind(kOverrideSourcePrefix, 0) == 0)
    throw ConfigError(ErrorCode::kInvalidArgument, printable(str_cat(*where.path, ": ", msg)));
  if (where.begin.line > 0) {
    throw ConfigError(ErrorCode::kInvalidArgument,
                      str_cat(file, ":", where.begin.line, ": ", printable(msg)));
  }
  throw ConfigError(ErrorCode::kInvalidArgument, str_cat(file, ": ", printable(msg)));
}

// A table whose keys are read one by one; finish() rejects the keys nobody read.
class Section {
 public:
  Section(const toml::table* table, std::string path, std::string file)
      : table_(table), path_(std::move(path)), file_(std::move(file)) {}

  bool present() const { return table_ != nullptr; }
  bool has(const std::string& key) const { return table_ && table_->contains(key); }

  template <typename T>
  void read(const std::string& key, T& out) {
    known_.insert(key);
    if (!table_) return;
    const toml::node* n = table_->get(key);
    if (!n) return;
    out = convert<T>(*n, key);
  }
  template <typename T>
  void read_optional(const std::string& key, std::optional<T>& out) {
    known_.insert(key);
    if (!table_) return;
    if (const toml::node* n = table_->get(key)) out = convert<T>(*n, key);
  }
  // A frequency: "epoch" (stored as 0) or a positive number of batches.
  void read_freq(const std::string& key, int64_t& out) {
    known_.insert(key);
    const toml::node* n = table_ ? table_->get(key) : nullptr;
    if (!n) return;
    if (auto v = n->value_exact<std::string>(); v && *v == "epoch") {
      out = 0;
    } else if (auto i = n->value_exact<int64_t>(); i && *i > 0) {
      out = *i;
    } else {
      type_error(*n, key, "\"epoch\" or a positive number of batches");
    }
  }
  // A byte count: an integer, or a string with a unit ("512MiB"; parse_memory_size).
  void read_memory_size(const std::string& key, int64_t& out) {
    known_.insert(key);
    const toml::node* n = table_ ? table_->get(key) : nullptr;
    if (!n) return;
    if (auto i = n->value_exact<int64_t>()) {
      if (*i < 0) config_error(file_, n->source(), str_cat("key '", full(key), "' must be >= 0"));
      out = *i;
    } else if (auto text = n->value_exact<std::string>()) {
      try {
        out = parse_memory_size(*text);
      } catch (const Error& e) {
        config_error(file_, n->source(), str_cat("key '", full(key), "': ", e.message()));
      }
    } else {
      type_error(*n, key, "a byte count or a size such as \"512MiB\"");
    }
  }
  Section sub(const std::string& key) {
    known_.insert(key);
    const toml::node* n = table_ ? table_->get(key) : nullptr;
    if (n && !n->is_table())
      config_error(file_, n->source(), str_cat("key '", full(key), "' must be a table"));
    return Section(n ? n->as_table() : nullptr, full(key), file_);
  }
  // Every key of the table as an attribute value (for [model.args]).
  ops::Attrs all_as_attrs() {
    ops::Attrs a;
    if (!table_) return a;
    for (const auto& [k, v] : *table_) {
      std::string key(k.str());
      known_.insert(key);
      a.set(key, to_attr(v, key));
    }
    return a;
  }
  void finish() const {
    if (!table_) return;
    for (const auto& [k, v] : *table_) {
      std::string key(k.str());
      if (known_.count(key)) continue;
      std::string best =
          ops::closest_name(key, std::vector<std::string>(known_.begin(), known_.end()));
      config_error(file_, v.source(),
                   str_cat("unknown key '", full(key), "'",
                           best.empty() ? "" : str_cat(" (did you mean '", full(best), "'?)")));
    }
  }
  const std::string& file() const { return file_; }
  // "data.transforms[2]": the dotted path of this table.
  const std::string& path() const { return path_; }
  std::string full(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  // The line the table starts on (0 if unknown or absent).
  int line() const { return table_ ? static_cast<int>(table_->source().begin.line) : 0; }
  // The keys the table holds, in the file's key order (toml++ sorts them).
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    if (table_) {
      for (const auto& [k, v] : *table_) out.emplace_back(k.str());
    }
    return out;
  }
  // An array of tables ([[data.transforms]]), each as a Section named "key[i]".
  std::vector<Section> tables(const std::string& key) {
    known_.insert(key);
    std::vector<Section> out;
    const toml::node* n = table_ ? table_->get(key) : nullptr;
    if (!n) return out;
    const toml::array* arr = n->as_array();
    if (!arr)
      config_error(
          file_, n->source(),
          str_cat("key '", full(key), "' must be an array of tables ([[", full(key), "]])"));
    for (size_t i = 0; i < arr->size(); ++i) {
      const toml::node& e = *arr->get(i);
      std::string name = str_cat(full(key), "[", i, "]");
      if (!e.is_table()) config_error(file_, e.source(), str_cat("'", name, "' must be a table"));
      out.emplace_back(e.as_table(), name, file_);
    }
    return out;
  }
  // A number or an array of numbers, as an array.
  void read_numbers(const std::string& key, std::vector<double>& out) {
    known_.insert(key);
    const toml::node* n = table_ ? table_->get(key) : nullptr;
    if (!n) return;
    if (n->is_number()) {
      out = {convert<double>(*n, key)};
    } else {
      out = convert<std::vector<double>>(*n, key);
    }
  }
  // A string or an array of strings, as an array.
  void read_strings(const std::string& key, std::vector<std::string>& out) {
    known_.insert(key);
    const toml::node* n = table_ ? table_->get(key) : nullptr;
    if (!n) return;
    if (n->is_string()) {
      out = {convert<std::string>(*n, key)};
    } else {
      out = convert<std::vector<std::string>>(*n, key);
    }
  }
  // An error at `key`'s line (the table's when the key is absent).
  [[noreturn]] void error(const std::string& key, const std::string& msg) const {
    const toml::node* n = table_ ? table_->get(key) : nullptr;
    if (n) config_error(file_, n->source(), msg);
    if (table_) config_error(file_, table_->source(), msg);
    config_error(file_, toml::source_region{}, msg);
  }

 private:
  [[noreturn]] void type_error(const toml::node& n, const std::string& key,
                               const char* want) const {
    config_error(file_, n.source(), str_cat("key '", full(key), "' must be ", want));
  }

  template <typename T>
  T convert(const toml::node& n, const std::string& key) const {
    if constexpr (std::is_same_v<T, bool>) {
      if (auto v = n.value_exact<bool>()) return *v;
      type_error(n, key, "a boolean (true or false)");
    } else if constexpr (std::is_integral_v<T>) {
      if (auto v = n.value_exact<int64_t>()) {
        // Range-checked: a 32-bit field took 4294967298 as 2 (bad-input report F15).
        if (!std::in_range<T>(*v)) {
          config_error(file_, n.source(),
                       str_cat("key '", full(key), "' = ", *v, " is out of range (",
                               static_cast<int64_t>(std::numeric_limits<T>::min()), " to ",
                               static_cast<uint64_t>(std::numeric_limits<T>::max()), ")"));
        }
        return static_cast<T>(*v);
      }
      type_error(n, key, "an integer");
    } else if constexpr (std::is_same_v<T, double>) {
      if (auto v = n.value_exact<double>()) return *v;
      if (auto v = n.value_exact<int64_t>()) return static_cast<double>(*v);
      type_error(n, key, "a number");
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (auto v = n.value_exact<std::string>()) return *v;
      type_error(n, key, "a string");
    } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
      const toml::array* arr = n.as_array();
      if (!arr) type_error(n, key, "an array of integers");
      T out;
      for (const auto& e : *arr) {
        auto v = e.value_exact<int64_t>();
        if (!v) type_error(n, key, "an array of integers");
        out.push_back(*v);
      }
      return out;
    } else if constexpr (std::is_same_v<T, std::vector<double>>) {
      const toml::array* arr = n.as_array();
      if (!arr) type_error(n, key, "an array of numbers");
      T out;
      for (const auto& e : *arr) {
        if (auto v = e.value_exact<double>()) {
          out.push_back(*v);
        } else if (auto i = e.value_exact<int64_t>()) {
          out.push_back(static_cast<double>(*i));
        } else {
          type_error(n, key, "an array of numbers");
        }
      }
      return out;
    } else {
      static_assert(std::is_same_v<T, std::vector<std::string>>);
      const toml::array* arr = n.as_array();
      if (!arr) type_error(n, key, "an array of strings");
      T out;
      for (const auto& e : *arr) {
        auto v = e.value_exact<std::string>();
        if (!v) type_error(n, key, "an array of strings");
        out.push_back(*v);
      }
      return out;
    }
  }

  ops::AttrValue to_attr(const toml::node& n, const std::string& key) const {
    if (auto v = n.value_exact<bool>()) return *v;
    if (auto v = n.value_exact<int64_t>()) return *v;
    if (auto v = n.value_exact<double>()) return *v;
    if (auto v = n.value_exact<std::string>()) return *v;
    if (const toml::array* arr = n.as_array()) {
      bool all_int = true;
      for (const auto& e : *arr) all_int = all_int && e.is_integer();
      if (all_int) return convert<std::vector<int64_t>>(n, key);
      return convert<std::vector<double>>(n, key);
    }
    type_error(n, key, "a boolean, number, string or array");
  }

  const toml::table* table_;
  std::string path_;
  std::string file_;
  std::set<std::string> known_;
};

}  // namespace tern::config
