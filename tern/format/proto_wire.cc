// Protocol-buffer wire format: varint, tag and length-delimited writers and ProtoWriter.
#include "tern/format/proto_wire.h"

#include <bit>

namespace tern::format {

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

size_t varint_size(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

void put_tag(std::string& out, uint32_t field, WireType type) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(type));
}

void put_length_delimited(std::string& out, uint32_t field, std::string_view bytes) {
  put_tag(out, field, WireType::kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

void ProtoWriter::add_varint(uint32_t field, uint64_t value) {
  put_tag(buf_, field, WireType::kVarint);
  put_varint(buf_, value);
}

void ProtoWriter::add_double(uint32_t field, double value) {
  put_tag(buf_, field, WireType::kFixed64);
  put_fixed64(buf_, std::bit_cast<uint64_t>(value));
}

void ProtoWriter::add_float(uint32_t field, float value) {
  put_tag(buf_, field, WireType::kFixed32);
  put_fixed32(buf_, std::bit_cast<uint32_t>(value));
}

void ProtoWriter::add_packed_doubles(uint32_t field, std::span<const double> values) {
  put_tag(buf_, field, WireType::kLengthDelimited);
  put_varint(buf_, values.size() * 8);
  for (double v : values) put_fixed64(buf_, std::bit_cast<uint64_t>(v));
}

}  // namespace tern::format
