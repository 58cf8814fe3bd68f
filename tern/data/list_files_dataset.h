// Sources over explicit lists: from_elements (any elements, e.g. of varying shapes) and
// list_files (the paths matching glob patterns, as u8 byte tensors: tensor_bytes() gives the path).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr from_elements(std::vector<Element> elements);

// Paths matching any of the glob(3) patterns, sorted and without duplicates; with a seed, in an
// order shuffled per epoch (a full-buffer shuffle). NotFound if nothing matches.
DatasetPtr list_files(const std::vector<std::string>& patterns,
                      std::optional<uint64_t> shuffle_seed = std::nullopt);
// The sorted matches themselves.
std::vector<std::string> glob_files(const std::vector<std::string>& patterns);
// `files` as list_files yields them (no globbing: names are taken as they are).
DatasetPtr file_names_dataset(const std::vector<std::string>& files,
                              std::optional<uint64_t> shuffle_seed = std::nullopt);

}  // namespace tern::data
