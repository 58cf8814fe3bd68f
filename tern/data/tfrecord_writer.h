// TFRecordWriter: writes TFRecord files, records framed as tern/format/tfrecord_frame.h says
//   u64 length (LE) | u32 masked_crc32c(length bytes) | data | u32 masked_crc32c(data)
// optionally inside one GZIP or ZLIB stream covering the whole file (TensorFlow's options).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tern/data/output_stream.h"

namespace tern::data {

class TFRecordWriter {
 public:
  // Creates or truncates `path`. Unavailable if it cannot be created.
  explicit TFRecordWriter(const std::string& path, Compression compression = Compression::kNone);

  void write(std::string_view record);
  // Makes every record written so far readable by others (and durable with `durable`).
  void flush(bool durable = false) { out_->flush(durable); }
  void close() { out_->close(); }
  int64_t records_written() const { return records_; }

 private:
  std::unique_ptr<OutputStream> out_;
  int64_t records_ = 0;
};

}  // namespace tern::data
