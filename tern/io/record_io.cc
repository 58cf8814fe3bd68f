// TFRecord framing: encoding and checked decoding.
#include "tern/io/record_io.h"

#include "tern/base/error.h"
#include "tern/io/crc32c.h"

namespace tern::io {
namespace {

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t get_le(std::string_view s, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(s[pos + i])) << (8 * i);
  return v;
}

}  // namespace

std::string encode_record(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_le(out, data.size(), 8);
  put_le(out, mask_crc(crc32c(out)), 4);
  out.append(data);
  put_le(out, mask_crc(crc32c(data)), 4);
  return out;
}

RecordScan decode_records(std::string_view bytes, const std::string& what) {
  RecordScan scan;
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < 12) {
      scan.truncated_at = static_cast<int64_t>(pos);
      break;
    }
    uint64_t length = get_le(bytes, pos, 8);
    uint32_t stored = static_cast<uint32_t>(get_le(bytes, pos + 8, 4));
    if (mask_crc(crc32c(bytes.substr(pos, 8))) != stored) {
      throw_error(ErrorCode::kDataLoss, "record file '", what,
                  "': length CRC mismatch at byte offset ", pos);
    }
    if (length > bytes.size() - pos - 12 || bytes.size() - pos - 12 - length < 4) {
      scan.truncated_at = static_cast<int64_t>(pos);
      break;
    }
    std::string_view data = bytes.substr(pos + 12, length);
    uint32_t data_crc = static_cast<uint32_t>(get_le(bytes, pos + 12 + length, 4));
    if (mask_crc(crc32c(data)) != data_crc) {
      throw_error(ErrorCode::kDataLoss, "record file '", what,
                  "': data CRC mismatch in the record at byte offset ", pos, " (", length,
                  " bytes)");
    }
    scan.records.emplace_back(data);
    pos += 12 + length + 4;
  }
  return scan;
}

}  // namespace tern::io
