// TFRecord framing: encoding, checked decoding of one frame, and splitting an in-memory stream.
#include "tern/format/tfrecord_frame.h"

#include "tern/base/error.h"
#include "tern/format/crc32c.h"
#include "tern/format/little_endian.h"

namespace tern::format {

std::string tfrecord_header(uint64_t length) {
  std::string out;
  put_fixed64(out, length);
  put_fixed32(out, crc32c_mask(crc32c(out)));
  return out;
}

std::string tfrecord_footer(std::string_view data) {
  std::string out;
  put_fixed32(out, crc32c_mask(crc32c(data)));
  return out;
}

std::string tfrecord_frame(std::string_view data) {
  std::string out;
  out.reserve(kTFRecordHeaderBytes + data.size() + kTFRecordFooterBytes);
  out += tfrecord_header(data.size());
  out += data;
  out += tfrecord_footer(data);
  return out;
}

TFRecordFrame tfrecord_decode(std::string_view bytes, uint64_t max_length) {
  TFRecordFrame f;
  auto bad = [&](TFRecordStatus status, std::string problem) {
    f.status = status;
    f.problem = std::move(problem);
    return f;
  };
  if (bytes.size() < kTFRecordHeaderBytes) {
    return bad(TFRecordStatus::kTruncatedHeader, str_cat("truncated record header (", bytes.size(),
                                                         " bytes at the end of the file)"));
  }
  if (crc32c_unmask(load_fixed32(bytes.data() + 8)) != crc32c(bytes.data(), 8)) {
    return bad(TFRecordStatus::kLengthCrcMismatch, "length CRC mismatch");
  }
  f.length = load_fixed64(bytes.data());
  if (f.length > max_length) {
    return bad(TFRecordStatus::kLengthOverLimit,
               str_cat("record length ", f.length, " exceeds the limit of ", max_length));
  }
  const size_t after_header = bytes.size() - kTFRecordHeaderBytes;
  if (f.length > after_header || after_header - f.length < kTFRecordFooterBytes) {
    return bad(TFRecordStatus::kTruncatedRecord,
               str_cat("truncated record: the header says ", f.length,
                       " bytes but the file ends after ", after_header));
  }
  const std::string_view data = bytes.substr(kTFRecordHeaderBytes, f.length);
  const uint32_t stored = load_fixed32(bytes.data() + kTFRecordHeaderBytes + f.length);
  if (crc32c_unmask(stored) != crc32c(data)) {
    return bad(TFRecordStatus::kDataCrcMismatch,
               str_cat("data CRC mismatch in a record of ", f.length, " bytes"));
  }
  f.data = data;
  return f;
}

TFRecordScan tfrecord_split(std::string_view bytes, std::string_view what, uint64_t max_length) {
  TFRecordScan scan;
  size_t pos = 0;
  while (pos < bytes.size()) {
    const TFRecordFrame f = tfrecord_decode(bytes.substr(pos), max_length);
    switch (f.status) {
      case TFRecordStatus::kOk:
        scan.records.emplace_back(f.data);
        pos += static_cast<size_t>(f.frame_bytes());
        continue;
      case TFRecordStatus::kTruncatedHeader:
      case TFRecordStatus::kTruncatedRecord:
        scan.truncated_at = static_cast<int64_t>(pos);
        return scan;
      case TFRecordStatus::kLengthCrcMismatch:
      case TFRecordStatus::kLengthOverLimit:
      case TFRecordStatus::kDataCrcMismatch:
        break;
    }
    throw_error(ErrorCode::kDataLoss, what, ": corrupt TFRecord at byte offset ", pos, ": ",
                f.problem);
  }
  return scan;
}

}  // namespace tern::format
