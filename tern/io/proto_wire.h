// The protobuf wire format, by hand (no protoc): enough to write and read TensorBoard's Event
// and Summary messages. Fields are (number << 3 | wire type) keys followed by a varint, a fixed
// 64/32-bit value or a length-delimited payload.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tern::io {

enum class WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

class ProtoWriter {
 public:
  void add_varint(uint32_t field, uint64_t value);
  void add_int64(uint32_t field, int64_t value) { add_varint(field, static_cast<uint64_t>(value)); }
  void add_double(uint32_t field, double value);
  void add_float(uint32_t field, float value);
  void add_bytes(uint32_t field, std::string_view value);
  // A nested message, already encoded.
  void add_message(uint32_t field, const ProtoWriter& message) {
    add_bytes(field, message.bytes());
  }
  // `repeated double` in packed form.
  void add_packed_doubles(uint32_t field, std::span<const double> values);
  const std::string& bytes() const { return buf_; }

 private:
  void put_key(uint32_t field, WireType type);
  void put_varint(uint64_t v);
  void put_fixed(uint64_t v, int bytes);
  std::string buf_;
};

struct ProtoField {
  uint32_t number = 0;
  WireType type = WireType::kVarint;
  uint64_t value = 0;        // varint or fixed bits
  std::string_view payload;  // length-delimited
  double as_double() const;  // fixed64 bits
  float as_float() const;    // fixed32 bits
};

// Reads fields one by one; malformed input (bad varint, length past the end, unknown wire type)
// is DataLoss naming `what` and the byte offset.
class ProtoReader {
 public:
  ProtoReader(std::string_view data, std::string what) : data_(data), what_(std::move(what)) {}
  // The next field, or false at the end.
  bool next(ProtoField& field);
  const std::string& what() const { return what_; }

 private:
  uint64_t get_varint();
  std::string_view data_;
  size_t pos_ = 0;
  std::string what_;
};

// Appends the values of a `repeated double` field (packed or not) to `out`.
void append_doubles(const ProtoField& field, const std::string& what, std::vector<double>& out);

}  // namespace tern::io
