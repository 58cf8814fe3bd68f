// What a data file holds (what `tern data inspect` prints): counts the records of a TFRecord / IDX
// / CSV file and describes the first ones: feature names, kinds and value counts for tf.Examples
// (with the FixedLen / VarLen spec that parses them), dtype, shape and value range for IDX,
// columns and inferred types for CSV.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace tern::data {

struct InspectOptions {
  int64_t records = 3;               // shown in full
  std::string format = "auto";       // auto | tfrecord | idx | csv
  std::string compression = "auto";  // auto | none | gzip | zlib (TFRecord, CSV)
};

// Writes the description to `out`. A file in none of the formats is an InvalidArgument naming it.
void inspect_data_file(const std::string& path, const InspectOptions& options, std::ostream& out);

}  // namespace tern::data
