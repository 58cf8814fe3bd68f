// load_config: the TOML file parsed, --set overrides applied, each section read
// (read_sections.h), the effective keys flattened and hashed. toml++ is used only inside
// tern/config.
#include "tern/config/config.h"

#include <toml++/toml.h>
#include <filesystem>
#include <sstream>

#include "tern/base/sha256.h"
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

// Applies "a.b.c=value" to the parsed table.
void apply_override(toml::table& root, const std::string& spec, const std::string& file) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw_error(ErrorCode::kInvalidArgument, "--set '", spec, "': expected key=value");
  }
  std::string key = spec.substr(0, eq), value = spec.substr(eq + 1);
  toml::table parsed;
  try {
    parsed = toml::parse("v = " + value);
  } catch (const toml::parse_error&) {
    parsed = toml::table{{"v", value}};  // a bare word is a string
  }
  toml::table* t = &root;
  size_t start = 0;
  for (;;) {
    size_t dot = key.find('.', start);
    std::string part =
        key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty())
      throw_error(ErrorCode::kInvalidArgument, "--set '", spec, "': empty key component");
    if (dot == std::string::npos) {
      t->insert_or_assign(part, *parsed.get("v"));
      return;
    }
    toml::node* next = t->get(part);
    if (!next) {
      t->insert(part, toml::table{});
      next = t->get(part);
    }
    if (!next->is_table()) {
      throw_error(ErrorCode::kInvalidArgument, "--set '", spec, "': '", part, "' in ", file,
                  " is not a table");
    }
    t = next->as_table();
    start = dot + 1;
  }
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

}  // namespace

TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  if (!std::filesystem::exists(path))
    throw_error(ErrorCode::kNotFound, "config file '", path, "' does not exist");
  // A regular file of a sane size: a directory or a device (/dev/null, /dev/zero) parsed as an
  // empty table and trained the default model (bad-input report F10); /dev/zero never ended.
  std::string text;
  try {
    text = io::read_file(path, kMaxConfigBytes);
  } catch (const Error& e) {
    throw_error(e.code(), "config file: ", e.message());
  }
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw_error(ErrorCode::kInvalidArgument, path, ":", e.source().begin.line, ":",
                e.source().begin.column, ": TOML syntax error: ", e.description());
  }
  for (const auto& o : overrides) apply_override(root, o, path);
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

}  // namespace tern::config
