// safetensors: read and write named tensors (format facts: docs/formats.md, "safetensors").
// The reader validates everything a hostile file could get wrong: header size cap, JSON shape,
// dtype names, offsets contiguous from 0 and covering the buffer exactly, sizes equal to
// dtype x shape. Any mismatch is DataLoss naming the file.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tern/tensor/tensor.h"

namespace tern::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct SafetensorsFile {
  NamedTensors tensors;                         // in file order of offsets
  std::map<std::string, std::string> metadata;  // "__metadata__"
};

constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

// Serializes like the reference writer: sorted by dtype alignment (descending) then name,
// contiguous, JSON padded with spaces to a multiple of 8.
std::string encode_safetensors(const NamedTensors& tensors,
                               const std::map<std::string, std::string>& metadata = {});
// `what` names the source in errors (usually the file path).
SafetensorsFile decode_safetensors(std::string_view bytes, const std::string& what);

// Writes atomically (temp file, fsync, rename).
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace tern::io
