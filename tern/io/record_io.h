// TFRecord framing (FORMATS.md §3.1) for files tern writes itself, such as TensorBoard event
// files: u64 length, u32 masked CRC32C of the length bytes, data, u32 masked CRC32C of the data.
// Uncompressed only; tern/data reads and writes compressed TFRecord datasets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tern::io {

// One framed record.
std::string encode_record(std::string_view data);

struct RecordScan {
  std::vector<std::string> records;
  // A final record cut short (a writer killed mid-write): its byte offset, or -1 if none.
  int64_t truncated_at = -1;
};

// Splits `bytes` into records. A CRC mismatch or an impossible length is DataLoss naming `what`
// and the byte offset; a truncated final record is reported in truncated_at, not thrown.
RecordScan decode_records(std::string_view bytes, const std::string& what);

}  // namespace tern::io
