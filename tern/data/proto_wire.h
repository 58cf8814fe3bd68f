// Protocol-buffer wire format by hand (no protoc): varints, tags, fixed32/64 and length-delimited
// fields. ProtoReader walks one message held in memory, checking every length against the bytes
// left; malformed input is a DataLoss naming what is being parsed and the byte offset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tern::data {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

class ProtoReader {
 public:
  // `data` is the message; `base_offset` is where it sits in the enclosing buffer (for error
  // messages); `what` names the message, e.g. "tf.train.Example record 3" (must outlive this).
  ProtoReader(std::string_view data, size_t base_offset, std::string_view what)
      : data_(data), base_(base_offset), what_(what) {}

  bool at_end() const { return pos_ >= data_.size(); }
  // Reads the next tag. DataLoss for a field number 0 or a wire type that does not exist.
  void read_tag(uint32_t* field, WireType* type);
  uint64_t read_varint();
  uint32_t read_fixed32();
  uint64_t read_fixed64();
  // The payload of a length-delimited field.
  std::string_view read_bytes();
  // A reader over the payload of a length-delimited field (offsets stay absolute, the context
  // is inherited).
  ProtoReader read_message();
  // A copy whose errors also name `label` and `key`, e.g. "feature 'image'" (both must outlive it).
  ProtoReader in(std::string_view label, std::string_view key) const;
  // Skips the value of a field of wire type `type` (groups are rejected: proto3 has none).
  void skip(WireType type);

  // Absolute offset of the next byte.
  size_t offset() const { return base_ + pos_; }
  std::string_view what() const { return what_; }
  // Throws DataLoss "<what>[, <label> '<key>']: <message> at byte offset <offset>".
  [[noreturn]] void fail(std::string_view message) const;
  [[noreturn]] void fail_at(size_t absolute_offset, std::string_view message) const;

 private:
  std::string_view data_;
  size_t pos_ = 0;
  size_t base_;
  std::string_view what_;
  std::string_view label_;
  std::string_view key_;
};

// --- writing ---
void put_varint(std::string& out, uint64_t value);
size_t varint_size(uint64_t value);
void put_tag(std::string& out, uint32_t field, WireType type);
void put_fixed32(std::string& out, uint32_t value);
// Tag, length, bytes.
void put_length_delimited(std::string& out, uint32_t field, std::string_view bytes);

}  // namespace tern::data
