// The protocol-buffer wire format by hand, reading side: ProtoReader walks one message held in
// memory, checking every varint, fixed-width value and length against the bytes left. Malformed
// input is a DataLoss "<what>[, <label> '<key>']: <problem> at byte offset <n>", the offset counted
// from the start of the outermost buffer. Two ways to walk: tag by tag (read_tag, then read_* or
// skip), or field by field (next). Groups (wire types 3 and 4) are rejected: proto3 has none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tern/format/proto_wire.h"

namespace tern::format {

// One field as next() returns it.
struct ProtoField {
  uint32_t number = 0;
  WireType type = WireType::kVarint;
  uint64_t value = 0;         // kVarint, or the bits of kFixed64 / kFixed32
  std::string_view payload;   // kLengthDelimited
  size_t offset = 0;          // absolute offset of the tag
  size_t payload_offset = 0;  // absolute offset of the payload
  double as_double() const;   // kFixed64 bits
  float as_float() const;     // kFixed32 bits
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
  // DataLoss for a varint cut short, longer than 10 bytes, or over 64 bits.
  uint64_t read_varint();
  uint32_t read_fixed32();
  uint64_t read_fixed64();
  // The payload of a length-delimited field.
  std::string_view read_bytes();
  // A reader over the payload of a length-delimited field (offsets stay absolute, the context
  // is inherited).
  ProtoReader read_message();
  // Skips the value of a field of wire type `type` (groups are DataLoss).
  void skip(WireType type);

  // The next field (tag and value), or false at the end. Groups are DataLoss.
  bool next(ProtoField& field);
  // A reader over a length-delimited field that next() returned from this reader.
  ProtoReader nested(const ProtoField& field) const;
  // Appends the values of a `repeated double` field, packed or not; DataLoss for anything else.
  void append_doubles(const ProtoField& field, std::vector<double>& out) const;

  // A copy whose errors also name `label` and `key`, e.g. "feature 'image'" (both must outlive it).
  ProtoReader in(std::string_view label, std::string_view key) const;
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

}  // namespace tern::format
