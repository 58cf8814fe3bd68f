// ProtoReader and the wire-format writers.
#include "tern/data/proto_wire.h"

#include "tern/base/error.h"

namespace tern::data {

void ProtoReader::fail(std::string_view message) const {
  fail_at(offset(), message);
}

void ProtoReader::fail_at(size_t absolute_offset, std::string_view message) const {
  if (label_.empty()) {
    throw_error(ErrorCode::kDataLoss, what_, ": ", message, " at byte offset ", absolute_offset);
  }
  throw_error(ErrorCode::kDataLoss, what_, ", ", label_, " '", key_, "': ", message,
              " at byte offset ", absolute_offset);
}

ProtoReader ProtoReader::in(std::string_view label, std::string_view key) const {
  ProtoReader r = *this;
  r.label_ = label;
  r.key_ = key;
  return r;
}

uint64_t ProtoReader::read_varint() {
  const size_t start = pos_;
  uint64_t value = 0;
  for (int i = 0; i < 10; ++i) {
    if (pos_ >= data_.size()) fail_at(base_ + start, "truncated varint");
    const uint8_t b = static_cast<uint8_t>(data_[pos_++]);
    if (i == 9 && b > 1) fail_at(base_ + start, "varint longer than 64 bits");
    value |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) return value;
  }
  fail_at(base_ + start, "varint longer than 10 bytes");
}

void ProtoReader::read_tag(uint32_t* field, WireType* type) {
  const size_t start = offset();
  const uint64_t tag = read_varint();
  const uint64_t number = tag >> 3;
  const uint64_t wire = tag & 7;
  if (number == 0 || number > 0x1fffffff) fail_at(start, str_cat("invalid field number ", number));
  if (wire > 5) fail_at(start, str_cat("invalid wire type ", wire, " for field ", number));
  *field = static_cast<uint32_t>(number);
  *type = static_cast<WireType>(wire);
}

uint32_t ProtoReader::read_fixed32() {
  if (data_.size() - pos_ < 4) fail("truncated fixed32");
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
  pos_ += 4;
  return v;
}

uint64_t ProtoReader::read_fixed64() {
  if (data_.size() - pos_ < 8) fail("truncated fixed64");
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
  pos_ += 8;
  return v;
}

std::string_view ProtoReader::read_bytes() {
  const size_t start = offset();
  const uint64_t n = read_varint();
  if (n > data_.size() - pos_) {
    fail_at(start, str_cat("length ", n, " runs past the end of the message (", data_.size() - pos_,
                           " bytes left)"));
  }
  std::string_view out = data_.substr(pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return out;
}

ProtoReader ProtoReader::read_message() {
  std::string_view payload = read_bytes();
  ProtoReader r(payload, offset() - payload.size(), what_);
  r.label_ = label_;
  r.key_ = key_;
  return r;
}

void ProtoReader::skip(WireType type) {
  switch (type) {
    case WireType::kVarint:
      read_varint();
      return;
    case WireType::kFixed64:
      read_fixed64();
      return;
    case WireType::kLengthDelimited:
      read_bytes();
      return;
    case WireType::kFixed32:
      read_fixed32();
      return;
    case WireType::kStartGroup:
    case WireType::kEndGroup:
      break;
  }
  fail("unsupported group field");
}

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

void put_fixed32(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void put_length_delimited(std::string& out, uint32_t field, std::string_view bytes) {
  put_tag(out, field, WireType::kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

}  // namespace tern::data
