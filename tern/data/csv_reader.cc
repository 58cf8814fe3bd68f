// CsvReader: a byte-at-a-time RFC 4180 state machine over a buffered InputStream.
#include "tern/data/csv_reader.h"

#include "tern/base/error.h"
#include "tern/base/strings.h"

namespace tern::data {

CsvReader::CsvReader(const std::string& path, char delimiter, Compression compression,
                     int64_t max_row_bytes)
    : path_(path),
      delimiter_(delimiter),
      compression_(compression),
      max_row_bytes_(max_row_bytes),
      in_(InputStream::open(path, compression)) {
  TERN_CHECK_ARG(delimiter != '"' && delimiter != '\n' && delimiter != '\r',
                 "csv: the delimiter cannot be a quote or a line break");
}

int CsvReader::peek() {
  if (head_ == buf_.size()) {
    buf_.resize(64 * 1024);
    buf_.resize(in_->read(buf_.data(), buf_.size()));
    head_ = 0;
    if (buf_.empty()) return -1;
  }
  return static_cast<unsigned char>(buf_[head_]);
}

int CsvReader::get() {
  const int c = peek();
  if (c < 0) return c;
  ++head_;
  ++offset_;
  if (c == '\n') ++line_;
  return c;
}

std::optional<std::vector<CsvField>> CsvReader::next_row() {
  // Skip blank lines (including \r\n ones).
  for (;;) {
    const int c = peek();
    if (c < 0) return std::nullopt;
    if (c != '\n' && c != '\r') break;
    get();
  }
  row_line_ = line_;
  const int64_t row_start = offset_;
  std::vector<CsvField> row(1);
  for (;;) {
    if (offset_ - row_start > max_row_bytes_) {
      throw_error(ErrorCode::kDataLoss, path_, ":", row_line_, ": row longer than ", max_row_bytes_,
                  " bytes (an unterminated quote?)");
    }
    CsvField& field = row.back();
    int c = get();
    if (c == '"' && field.text.empty() && !field.quoted) {
      field.quoted = true;
      for (;;) {
        c = get();
        if (c < 0) {
          throw_error(ErrorCode::kDataLoss, path_, ":", row_line_,
                      ": unterminated quoted field at the end of the file");
        }
        if (c == '"') {
          if (peek() != '"') break;
          get();
        }
        field.text.push_back(static_cast<char>(c));
        if (static_cast<int64_t>(field.text.size()) > max_row_bytes_) {
          throw_error(ErrorCode::kDataLoss, path_, ":", row_line_, ": quoted field longer than ",
                      max_row_bytes_, " bytes (an unterminated quote?)");
        }
      }
      c = peek();
      if (c >= 0 && c != delimiter_ && c != '\n' && c != '\r') {
        throw_error(ErrorCode::kDataLoss, path_, ":", line_, ": unexpected character '",
                    printable(std::string(1, static_cast<char>(c))), "' after a closing quote");
      }
      continue;
    }
    if (c < 0 || c == '\n') return row;
    if (c == '\r') {
      if (peek() == '\n') get();
      return row;
    }
    if (c == delimiter_) {
      row.emplace_back();
      continue;
    }
    if (c == '"') {
      throw_error(ErrorCode::kDataLoss, path_, ":", line_,
                  ": quote inside an unquoted field (quote the whole field and double the quote)");
    }
    field.text.push_back(static_cast<char>(c));
  }
}

void CsvReader::seek(int64_t offset, int64_t line) {
  TERN_CHECK_ARG(offset >= 0 && line >= 1, path_, ": bad csv position ", offset, ":", line);
  in_ = InputStream::open(path_, compression_);
  buf_.clear();
  head_ = 0;
  if (in_->skip(offset) < offset) {
    throw_error(ErrorCode::kDataLoss, path_, ": cannot seek to byte offset ", offset,
                ": the file is shorter");
  }
  offset_ = offset;
  line_ = line;
}

}  // namespace tern::data
