// Pushing a model version (TFX's Pusher): a served model directory copied to
// SERVING_BASE/<next version> atomically, so that a `tern serve --model_base_path SERVING_BASE`
// polling the folder loads it whole or not at all: every file is written into a temporary sibling
// (".tern-push-*", which the server ignores: not a number), fsync'ed, the folders fsync'ed, then
// renamed to its version without replacing anything (renameat2 RENAME_NOREPLACE: a version that
// appeared meanwhile is never overwritten; the next number is taken), and the base folder
// fsync'ed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tern::pipeline {

// The numeric version folders under `base` (empty when it does not exist), ascending.
std::vector<int64_t> served_versions(const std::string& base);
// The largest, or nullopt.
std::optional<int64_t> latest_served_version(const std::string& base);

struct PushResult {
  int64_t version = 0;
  std::string path;  // base/version
};

// Copies the model directory `model_dir` to `base`/<latest + 1> as above (creating `base`).
// Unavailable naming the file on an I/O error (the temporary folder is removed).
PushResult push_model(const std::string& model_dir, const std::string& base);

}  // namespace tern::pipeline
