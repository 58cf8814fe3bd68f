// TFRecord framing (docs/formats.md, "TFRecord"), one record at a time:
//   u64 length (LE) | u32 masked_crc32c(length bytes) | data | u32 masked_crc32c(data)
// Encoding (tfrecord_frame, or its header and footer for writers that stream the data), checked
// decoding of one frame (tfrecord_decode: what is wrong, never throws), and tfrecord_split for a
// whole uncompressed stream held in memory. Compression and files are the callers' business:
// tern/data's TFRecordReader / TFRecordWriter, tern/io's event files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tern::format {

inline constexpr size_t kTFRecordHeaderBytes = 12;
inline constexpr size_t kTFRecordFooterBytes = 4;
// Longer lengths count as corrupt unless a caller asks for more.
inline constexpr uint64_t kTFRecordMaxLength = uint64_t{1} << 30;

// The 12 header bytes for a record of `length` bytes, and the 4 footer bytes for `data`.
std::string tfrecord_header(uint64_t length);
std::string tfrecord_footer(std::string_view data);
// The framed bytes of one record (header, data, footer).
std::string tfrecord_frame(std::string_view data);

enum class TFRecordStatus : uint8_t {
  kOk,
  kTruncatedHeader,    // fewer than 12 bytes
  kLengthCrcMismatch,  // the header's CRC does not match its length bytes
  kLengthOverLimit,    // a valid header whose length exceeds the limit
  kTruncatedRecord,    // a valid header, but the data or footer is cut short
  kDataCrcMismatch,    // the footer's CRC does not match the data
};

// What tfrecord_decode found at the start of its bytes.
struct TFRecordFrame {
  TFRecordStatus status = TFRecordStatus::kOk;
  uint64_t length = 0;    // the header's length, once its CRC matched
  std::string_view data;  // the record (kOk only), a view into the decoded bytes
  std::string problem;    // what is wrong, e.g. "length CRC mismatch" (empty for kOk)

  bool ok() const { return status == TFRecordStatus::kOk; }
  // Header + data + footer; meaningful once the header checked out (kTruncatedRecord and later).
  uint64_t frame_bytes() const { return kTFRecordHeaderBytes + length + kTFRecordFooterBytes; }
};

// Checks the frame at the start of `bytes` (which may hold more after it, or only part of it).
TFRecordFrame tfrecord_decode(std::string_view bytes, uint64_t max_length = kTFRecordMaxLength);

struct TFRecordScan {
  std::vector<std::string> records;
  // A final record cut short (a writer killed mid-write): its byte offset, or -1 if none.
  int64_t truncated_at = -1;
};

// Splits a whole uncompressed stream into records. A CRC mismatch or a length over `max_length`
// is DataLoss "<what>: corrupt TFRecord at byte offset <n>: <problem>"; a truncated final record
// is reported in truncated_at, not thrown.
TFRecordScan tfrecord_split(std::string_view bytes, std::string_view what,
                            uint64_t max_length = kTFRecordMaxLength);

}  // namespace tern::format
