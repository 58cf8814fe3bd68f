// TFRecordReader: reads the records of one TFRecord file (framing and its checks in
// tern/format/tfrecord_frame.h). Corrupt input (a CRC mismatch, an absurd length, a truncated
// tail, broken compression) is a DataLoss naming the file and the record's byte offset, or, with
// skip_corrupt, is skipped and counted: a bad data CRC skips that record; a bad length CRC scans
// forward byte by byte to the next valid header; a truncated tail or broken compressed stream
// ends the file.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tern/data/input_stream.h"

namespace tern::data {

struct TFRecordOptions {
  Compression compression = Compression::kNone;  // "", GZIP or ZLIB in TensorFlow's terms
  bool skip_corrupt = false;
  int64_t max_record_bytes = int64_t{1} << 30;  // longer lengths count as corrupt
};

class TFRecordReader {
 public:
  // NotFound if the file cannot be opened.
  explicit TFRecordReader(const std::string& path, TFRecordOptions options = {});

  // The next record, or nullopt at the end of the file.
  std::optional<std::string> read();
  // Offset of the next record (uncompressed offset for compressed files).
  int64_t offset() const { return pos_; }
  // Moves to an offset that offset() returned for this file.
  void seek(int64_t offset);
  // Corrupt records (or corrupt regions) skipped so far, with skip_corrupt.
  int64_t skipped_records() const { return skipped_; }
  const std::string& path() const { return path_; }

 private:
  // Makes up to `n` bytes available from pos_; returns how many are (fewer only at the end).
  size_t fill(size_t n);
  void consume(size_t n);
  // The bytes read but not consumed.
  std::string_view unconsumed() const;
  // Reports corruption at `at`: throws DataLoss, or (skip_corrupt) counts it once per region.
  void corrupt(int64_t at, const std::string& what);

  std::string path_;
  TFRecordOptions options_;
  std::unique_ptr<InputStream> in_;
  std::string buf_;  // bytes read but not consumed start at buf_[head_]
  size_t head_ = 0;
  int64_t pos_ = 0;
  bool stream_failed_ = false;  // compressed stream broke (skip_corrupt): treated as its end
  bool resyncing_ = false;      // scanning for the next valid header after a corrupt one
  int64_t skipped_ = 0;
};

}  // namespace tern::data
