// CsvReader: splits a CSV file into rows of fields (RFC 4180): a delimiter between fields, rows
// ending in \n or \r\n, fields optionally in double quotes, inside which delimiters and newlines
// are literal and "" is one quote. Blank lines are skipped. Broken quoting is a DataLoss naming
// the file and line.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tern/data/input_stream.h"

namespace tern::data {

struct CsvField {
  std::string text;
  bool quoted = false;
};

class CsvReader {
 public:
  // NotFound if the file cannot be opened.
  CsvReader(const std::string& path, char delimiter, Compression compression,
            int64_t max_row_bytes);

  // The next row, or nullopt at the end of the file.
  std::optional<std::vector<CsvField>> next_row();
  // 1-based line on which the row last returned by next_row() starts.
  int64_t row_line() const { return row_line_; }
  // Position of the next row, for save/restore.
  int64_t offset() const { return offset_; }
  int64_t line() const { return line_; }
  // Moves to a position that offset()/line() returned for this file.
  void seek(int64_t offset, int64_t line);
  const std::string& path() const { return path_; }

 private:
  // The next byte, or -1 at the end.
  int get();
  int peek();

  std::string path_;
  char delimiter_;
  Compression compression_;
  int64_t max_row_bytes_;
  std::unique_ptr<InputStream> in_;
  std::string buf_;
  size_t head_ = 0;
  int64_t offset_ = 0;  // bytes consumed
  int64_t line_ = 1;    // line of the next byte
  int64_t row_line_ = 0;
};

}  // namespace tern::data
