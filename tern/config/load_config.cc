// load_config: the TOML file parsed, --set overrides applied, each section read
// (read_sections.h), the effective keys flattened and hashed. toml++ is used only inside
// tern/config.
#include "tern/config/config.h"
#include "tern/config/toml_text.h"

#include <toml++/toml.h>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "tern/base/sha256.h"
#include "tern/base/strings.h"
#include "tern/config/read_sections.h"
#include "tern/io/atomic_file.h"

namespace tern::config {
namespace {

// Configs are a few KiB; anything past this is not one.
constexpr uint64_t kMaxConfigBytes = 16 << 20;

// True if a float is anywhere inside `n` (an array or inline table holding one).
bool holds_float(const toml::node& n) {
  if (n.is_floating_point()) return true;
  if (const toml::array* arr = n.as_array()) {
    for (const toml::node& e : *arr) {
      if (holds_float(e)) return true;
    }
  }
  if (const toml::table* t = n.as_table()) {
    for (const auto& [k, v] : *t) {
      if (holds_float(v)) return true;
    }
  }
  return false;
}

// The TOML text of a value, as toml++'s formatter prints it inline. Arrays and inline tables that
// hold a float are printed here element by element: the formatter's width estimate takes
// log10 of each float and casts it to size_t, undefined for values below 1 and for nan
// (schedule.values = [0.1], the normal piecewise usage: UBSan, bad-input report F13), and the
// config hash that --resume compares went through it. Everything else is printed as before, so
// the hashes of configs without such arrays are unchanged.
std::string toml_text(const toml::node& n) {
  if (n.is_array() || n.is_table()) {
    if (holds_float(n)) {
      std::string out;
      if (const toml::array* arr = n.as_array()) {
        if (arr->empty()) return "[]";
        for (const toml::node& e : *arr) out += (out.empty() ? "[ " : ", ") + toml_text(e);
        return out + " ]";
      }
      const toml::table& t = *n.as_table();
      for (const auto& [k, v] : t) {
        out += (out.empty() ? "{ " : ", ") + std::string(k.str()) + " = " + toml_text(v);
      }
      return out.empty() ? "{}" : out + " }";
    }
  }
  std::ostringstream os;
  n.visit([&](const auto& node) { os << toml::toml_formatter{node}; });
  return os.str();
}

// Every leaf of `t` as "a.b.c" -> its TOML text.
void flatten(const toml::table& t, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  for (const auto& [k, v] : t) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = v.as_table()) {
      flatten(*sub, key, out);
      continue;
    }
    out[key] = toml_text(v);
  }
}

// Parses `text` as TOML whose nodes carry `source` as their source path.
toml::table parse_with_source(const std::string& text, const std::string& source) {
  return parse_toml(text, source);
}

// One component of an override key: "transforms" or "transforms[2]" (index -1: none).
struct KeyPart {
  std::string name;
  int64_t index = -1;
};

// Applies "a.b.c=value" to the parsed table; "a.b[2].c" addresses the third table of the array
// of tables a.b ([[a.b]]), "a.b[2]" replaces that element. The value, and any table the key
// creates, carry the flag ("--set a.b.c=value") as their source path, so errors about them name
// the flag, not the file (config_error).
void apply_override(toml::table& root, const std::string& spec, const std::string& file) {
  const std::string flag = kOverrideSourcePrefix + spec;
  auto fail = [&](const std::string& why) {
    throw ConfigError(ErrorCode::kInvalidArgument, str_cat(flag, ": ", why));
  };
  auto parse_part = [&](const std::string& part) -> KeyPart {
    if (part.empty()) fail("empty key component");
    size_t open = part.find('[');
    if (open == std::string::npos) return {part, -1};
    const std::string digits = part.substr(open + 1, part.size() - open - 2);
    if (open == 0 || part.back() != ']' || digits.empty() ||
        digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) {
      fail(str_cat("'", part, "' is not a key or key[index]"));
    }
    return {part.substr(0, open), std::stoll(digits)};
  };
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) fail("expected key=value");
  std::string key = spec.substr(0, eq), value = spec.substr(eq + 1);
  // TOML would read the text after a line break as more keys, which were silently dropped.
  if (value.find_first_of("\r\n") != std::string::npos)
    fail("the value holds a line break; one --set sets one key (give one --set per key)");
  toml::table parsed;
  try {
    parsed = parse_with_source("v = " + value, flag);
  } catch (const toml::parse_error&) {
    std::ostringstream quoted;  // a bare word is a string
    quoted << toml::value<std::string>(value);
    parsed = parse_with_source("v = " + quoted.str(), flag);
  }
  toml::table* t = &root;
  size_t start = 0;
  std::string path;
  for (;;) {
    size_t dot = key.find('.', start);
    const bool last = dot == std::string::npos;
    KeyPart part = parse_part(key.substr(start, last ? std::string::npos : dot - start));
    path += (path.empty() ? "" : ".") + part.name;
    if (part.index >= 0) {
      toml::array* arr = t->get(part.name) ? t->get(part.name)->as_array() : nullptr;
      if (!arr) fail(str_cat("'", path, "' in ", file, " is not an array"));
      if (static_cast<size_t>(part.index) >= arr->size()) {
        fail(str_cat("'", path, "' in ", file, " has ", arr->size(), " entries (index ", part.index,
                     ")"));
      }
      path += str_cat("[", part.index, "]");
      toml::node& element = *arr->get(static_cast<size_t>(part.index));
      if (last) {
        arr->replace(arr->cbegin() + part.index, std::move(*parsed.get("v")));
        return;
      }
      if (!element.is_table()) fail(str_cat("'", path, "' in ", file, " is not a table"));
      t = element.as_table();
      start = dot + 1;
      continue;
    }
    if (last) {
      t->insert_or_assign(part.name, std::move(*parsed.get("v")));
      return;
    }
    toml::node* next = t->get(part.name);
    if (!next) {
      toml::table made = parse_with_source("[t]", flag);
      t->insert(part.name, std::move(*made.get("t")));
      next = t->get(part.name);
    }
    if (!next->is_table()) {
      const int line = static_cast<int>(next->source().begin.line);
      fail(str_cat("'", path, "' is not a table (", file, line > 0 ? str_cat(":", line) : "",
                   " sets it to a value)"));
    }
    t = next->as_table();
    start = dot + 1;
  }
}

// The file parsed with `overrides` applied.
toml::table parse_with_overrides(const std::string& path,
                                 const std::vector<std::string>& overrides) {
  if (!std::filesystem::exists(path))
    throw ConfigError(ErrorCode::kNotFound, str_cat("config file '", path, "' does not exist"));
  // A regular file of a sane size: a directory or a device (/dev/null, /dev/zero) parsed as an
  // empty table and trained the default model (bad-input report F10); /dev/zero never ended.
  std::string text;
  try {
    text = io::read_file(path, kMaxConfigBytes);
  } catch (const Error& e) {
    throw ConfigError(e.code(), str_cat("config file: ", e.message()));
  }
  toml::table root;
  try {
    root = parse_toml(text, path);
  } catch (const toml::parse_error& e) {
    throw ConfigError(ErrorCode::kInvalidArgument,
                      str_cat(path, ":", e.source().begin.line, ":", e.source().begin.column,
                              ": TOML syntax error: ", printable(e.description())));
  }
  for (const auto& o : overrides) apply_override(root, o, path);
  return root;
}

// What checkpoints and TensorBoard record about the config (known once every key is read).
void finish_callbacks(TrainConfig& cfg) {
  CallbacksConfig& callbacks = cfg.callbacks;
  if (callbacks.tensorboard) {
    callbacks.tensorboard->hparams = cfg.effective;
    callbacks.tensorboard->hparams["config_sha256"] = cfg.sha256;
  }
  if (callbacks.checkpoint) callbacks.checkpoint->config_sha256 = cfg.sha256;
  if (callbacks.backup_and_restore) callbacks.backup_and_restore->config_sha256 = cfg.sha256;
}

TrainConfig read_config(const std::string& path, const std::vector<std::string>& overrides) {
  toml::table root = parse_with_overrides(path, overrides);
  TrainConfig cfg;
  cfg.path = path;
  Section top(&root, "", path);
  read_model(top, cfg);
  read_training(top, cfg);
  read_data(top, cfg);
  read_loss(top, cfg);
  read_optimizer(top, cfg);
  read_schedule(top, cfg);
  read_distribute(top, cfg);
  read_output(top, cfg);
  read_callbacks(top, cfg);
  top.finish();

  flatten(root, "", cfg.effective);
  Sha256 hash;
  for (const auto& [key, value] : cfg.effective) {
    if (key.rfind("callbacks.", 0) == 0 || key.rfind("output.", 0) == 0) continue;
    hash.update(key + "=" + value + "\n");
  }
  cfg.sha256 = hash.hex_digest();
  finish_callbacks(cfg);
  return cfg;
}

}  // namespace

TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  try {
    return read_config(path, overrides);
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    // A reader's library call refused a value: still an error in the config.
    if (e.message().rfind(path, 0) == 0) throw ConfigError(e.code(), e.message());
    throw ConfigError(e.code(), str_cat(path, ": ", e.message()));
  }
}

namespace {

// A key as TOML writes it: bare when it can be, else a basic string.
std::string toml_key(std::string_view k) {
  const bool bare = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  if (bare) return std::string(k);
  std::ostringstream os;
  os << toml::toml_formatter{toml::value<std::string>(std::string(k))};
  return os.str();
}

// `t` as TOML: its values first (through toml_text, so no float reaches toml++'s formatter: see
// toml_text), then its sub-tables as [a.b] and its arrays of tables as [[a.b]].
void render_table(const toml::table& t, const std::string& prefix, std::string& out) {
  for (const auto& [k, v] : t) {
    const toml::table* sub = v.as_table();
    const toml::array* arr = v.as_array();
    if ((sub && !sub->is_inline()) || (arr && !arr->empty() && arr->is_array_of_tables())) continue;
    out += toml_key(k.str()) + " = " + toml_text(v) + "\n";
  }
  for (const auto& [k, v] : t) {
    const std::string name = (prefix.empty() ? "" : prefix + ".") + toml_key(k.str());
    if (const toml::table* sub = v.as_table(); sub && !sub->is_inline()) {
      out += "\n[" + name + "]\n";
      render_table(*sub, name, out);
    } else if (const toml::array* arr = v.as_array();
               arr && !arr->empty() && arr->is_array_of_tables()) {
      for (const toml::node& e : *arr) {
        out += "\n[[" + name + "]]\n";
        render_table(*e.as_table(), name, out);
      }
    }
  }
}

}  // namespace

std::string render_config(const std::string& path, const std::vector<std::string>& overrides) {
  toml::table root = parse_with_overrides(path, overrides);
  std::string out;
  render_table(root, "", out);
  return out;
}

}  // namespace tern::config
