// TFRecordWriter: record framing with masked CRC32C.
#include "tern/data/tfrecord_writer.h"

#include "tern/data/crc32c.h"

namespace tern::data {
namespace {

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

}  // namespace

std::string tfrecord_frame(std::string_view record) {
  std::string out;
  out.reserve(record.size() + 16);
  put_le(out, record.size(), 8);
  put_le(out, crc32c_mask(crc32c(out.data(), 8)), 4);
  out.append(record);
  put_le(out, crc32c_mask(crc32c(record)), 4);
  return out;
}

TFRecordWriter::TFRecordWriter(const std::string& path, Compression compression)
    : out_(OutputStream::create(path, compression)) {}

void TFRecordWriter::write(std::string_view record) {
  std::string header;
  put_le(header, record.size(), 8);
  put_le(header, crc32c_mask(crc32c(header.data(), 8)), 4);
  std::string footer;
  put_le(footer, crc32c_mask(crc32c(record)), 4);
  out_->write(header);
  out_->write(record);
  out_->write(footer);
  ++records_;
}

}  // namespace tern::data
