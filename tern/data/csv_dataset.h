// csv_dataset: rows of CSV files as elements, one scalar tensor per selected column, typed by
// the column list (TensorFlow's record_defaults). An empty field takes the column's default;
// a column without a default requires a value. Bytes columns become rank-1 u8 tensors.
// Parsing errors (bad number, wrong field count, missing value) are InvalidArgument and broken
// quoting is DataLoss, both naming "file:line".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tern/data/dataset.h"
#include "tern/data/input_stream.h"

namespace tern::data {

struct CsvColumn {
  DType dtype = DType::kF32;
  std::optional<double> default_value;  // for empty fields; none: a value is required
  bool as_bytes = false;                // keep the text as a u8 tensor (dtype ignored)
};

struct CsvOptions {
  std::vector<CsvColumn> columns;  // one per field in every row
  bool header = true;              // skip the first row of each file
  char delimiter = ',';
  std::vector<int> select_columns;  // indices into `columns` to emit, in order; empty: all
  Compression compression = Compression::kAuto;
  int64_t max_row_bytes = int64_t{1} << 24;
};

DatasetPtr csv_dataset(std::vector<std::string> files, CsvOptions options);

// Parses one field as `dtype` (surrounding spaces ignored); InvalidArgument naming `where`.
Tensor parse_csv_scalar(std::string_view text, DType dtype, std::string_view where);

}  // namespace tern::data
