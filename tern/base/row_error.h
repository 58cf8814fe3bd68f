// RowError: a tern::Error about one row of a tensor (a kernel's input): the row and the tensor's
// leading dim. When that tensor is a batch the caller fed, the caller can add where the row came
// from (tern/train names the file and record of a batch row whose label or embedding id is out
// of range). Caught as tern::Error everywhere else.
#pragma once

#include <cstdint>
#include <string>

#include "tern/base/error.h"

namespace tern {

class RowError : public Error {
 public:
  RowError(ErrorCode code, const std::string& message, int64_t row, int64_t rows)
      : Error(code, message), row_(row), rows_(rows) {}
  int64_t row() const { return row_; }
  int64_t rows() const { return rows_; }

 private:
  int64_t row_;
  int64_t rows_;
};

// Throws a RowError about row `row` of a tensor of `rows` rows.
template <typename... Args>
[[noreturn]] void throw_row_error(ErrorCode code, int64_t row, int64_t rows, const Args&... args) {
  throw RowError(code, str_cat(args...), row, rows);
}

}  // namespace tern
