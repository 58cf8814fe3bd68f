// Helpers for reading config tables with Section: enumerations with suggestions, required keys
// (a misspelt one is reported as such), keys that apply to some names only, [height, width]
// sizes, dtypes.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "tern/config/config_section.h"
#include "tern/tensor/dtype.h"

namespace tern::config {

inline std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

inline std::string did_you_mean(const std::string& v, const std::vector<std::string>& choices) {
  std::string best = ops::closest_name(v, choices);
  return best.empty() ? "" : str_cat(" (did you mean '", best, "'?)");
}

// A required key is absent: a misspelling of it is reported as such, else the absence.
[[noreturn]] inline void missing_key(Section& s, const std::string& key,
                                     const std::string& what = "") {
  for (const auto& k : s.keys()) {
    if (k != key && ops::closest_name(k, {key}) == key) {
      s.error(k, str_cat("unknown key '", s.full(k), "' (did you mean '", s.full(key), "'?)"));
    }
  }
  s.error(key, str_cat("'", s.path(), "' needs key '", key, "'", what));
}

// A string key whose value must be one of `choices`; `fallback` when absent ("" = required).
inline std::string read_choice(Section& s, const std::string& key,
                               const std::vector<std::string>& choices,
                               const std::string& fallback) {
  if (fallback.empty() && !s.has(key)) missing_key(s, key, str_cat(": one of ", join(choices)));
  std::string v = fallback;
  s.read(key, v);
  if (std::find(choices.begin(), choices.end(), v) == choices.end()) {
    s.error(key, str_cat("key '", s.full(key), "' = '", v, "' is not one of ", join(choices),
                         did_you_mean(v, choices)));
  }
  return v;
}

// A table keyed by a name (an optimizer, a schedule, a loss, a transform's op or fn): `name` takes
// the `common` keys, its own in `keys_by_name`, and `common_tail`. A key that only other names
// take is an error at its line: "optimizer.beta1 does not apply to optimizer 'sgd' (its keys:
// learning_rate, momentum, ...)". Keys no name takes are left to Section::finish (unknown key,
// did you mean).
using KeysByName = std::vector<std::pair<std::string, std::vector<std::string>>>;
inline void reject_keys_of_other_names(const Section& s, const std::string& what,
                                       const std::string& name,
                                       const std::vector<std::string>& common,
                                       const KeysByName& keys_by_name,
                                       const std::vector<std::string>& common_tail = {}) {
  std::vector<std::string> own = common;
  for (const auto& [n, keys] : keys_by_name) {
    if (n == name) own.insert(own.end(), keys.begin(), keys.end());
  }
  own.insert(own.end(), common_tail.begin(), common_tail.end());
  for (const auto& key : s.keys()) {
    if (std::find(own.begin(), own.end(), key) != own.end()) continue;
    for (const auto& [other, keys] : keys_by_name) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
      std::vector<std::string> listed;
      for (const auto& k : own) {
        if (k != "name" && k != "op" && k != "fn") listed.push_back(k);  // the selecting keys
      }
      s.error(key, str_cat(s.full(key), " does not apply to ", what, " '", name, "' (its keys: ",
                           listed.empty() ? std::string("none") : join(listed), ")"));
    }
  }
}

template <typename T>
T read_required(Section& s, const std::string& key) {
  if (!s.has(key)) missing_key(s, key);
  T v{};
  s.read(key, v);
  return v;
}

// [rows, cols] from a two-integer array.
inline std::pair<int64_t, int64_t> read_size(Section& s, const std::string& key) {
  auto v = read_required<std::vector<int64_t>>(s, key);
  if (v.size() != 2 || v[0] <= 0 || v[1] <= 0) {
    s.error(key, str_cat("key '", s.full(key), "' must be [height, width] with positive sizes"));
  }
  return {v[0], v[1]};
}

inline DType read_dtype(Section& s, const std::string& key) {
  std::string name = read_required<std::string>(s, key);
  try {
    return parse_dtype(name);
  } catch (const Error& e) {
    s.error(key, str_cat("key '", s.full(key), "': ", e.message()));
  }
}

inline std::vector<float> to_floats(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

inline std::string origin_of(const Section& s) {
  return str_cat(s.file(), ":", s.line(), " (", s.path(), ")");
}

}  // namespace tern::config
