// The protocol-buffer wire format by hand (no protoc), writing side: wire types, varints, tags,
// fixed32/64 and length-delimited fields, as free functions appending to a string and as
// ProtoWriter, which builds one message. Reading is proto_reader.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tern/format/little_endian.h"

namespace tern::format {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,  // proto2 groups: read_tag accepts them, nothing else does
  kEndGroup = 4,
  kFixed32 = 5,
};

// Field numbers are 1 .. 2^29 - 1.
inline constexpr uint64_t kMaxFieldNumber = 0x1fffffff;

// --- appending to a string ---
void put_varint(std::string& out, uint64_t value);
// Bytes put_varint writes for `value` (1 .. 10).
size_t varint_size(uint64_t value);
void put_tag(std::string& out, uint32_t field, WireType type);
// Tag, length, bytes.
void put_length_delimited(std::string& out, uint32_t field, std::string_view bytes);

// --- one message ---
class ProtoWriter {
 public:
  void add_varint(uint32_t field, uint64_t value);
  void add_int64(uint32_t field, int64_t value) { add_varint(field, static_cast<uint64_t>(value)); }
  void add_double(uint32_t field, double value);
  void add_float(uint32_t field, float value);
  void add_bytes(uint32_t field, std::string_view value) {
    put_length_delimited(buf_, field, value);
  }
  // A nested message, already encoded.
  void add_message(uint32_t field, const ProtoWriter& message) {
    add_bytes(field, message.bytes());
  }
  // `repeated double` in packed form.
  void add_packed_doubles(uint32_t field, std::span<const double> values);
  const std::string& bytes() const { return buf_; }

 private:
  std::string buf_;
};

}  // namespace tern::format
