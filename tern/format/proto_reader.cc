// ProtoReader: bounds-checked varint, tag, fixed-width and length-delimited reads with errors that
// name the byte offset; next() and append_doubles() on top of them.
#include "tern/format/proto_reader.h"

#include <bit>

#include "tern/base/error.h"
#include "tern/base/strings.h"
#include "tern/format/little_endian.h"

namespace tern::format {

double ProtoField::as_double() const {
  return std::bit_cast<double>(value);
}

float ProtoField::as_float() const {
  return std::bit_cast<float>(static_cast<uint32_t>(value));
}

void ProtoReader::fail(std::string_view message) const {
  fail_at(offset(), message);
}

void ProtoReader::fail_at(size_t absolute_offset, std::string_view message) const {
  if (label_.empty()) {
    throw_error(ErrorCode::kDataLoss, what_, ": ", message, " at byte offset ", absolute_offset);
  }
  throw_error(ErrorCode::kDataLoss, what_, ", ", label_, " '", printable(key_), "': ", message,
              " at byte offset ", absolute_offset);
}

ProtoReader ProtoReader::in(std::string_view label, std::string_view key) const {
  ProtoReader r = *this;
  r.label_ = label;
  r.key_ = key;
  return r;
}

uint64_t ProtoReader::read_varint() {
  const size_t start = offset();
  uint64_t value = 0;
  for (int i = 0;; ++i) {
    if (pos_ >= data_.size()) fail_at(start, "truncated varint");
    const uint8_t b = static_cast<uint8_t>(data_[pos_++]);
    // The 10th byte holds bit 63 only: anything more is an overflow or an 11th byte.
    if (i == 9 && b > 1) {
      fail_at(start, (b & 0x80) ? "varint longer than 10 bytes" : "varint longer than 64 bits");
    }
    value |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) return value;
  }
}

void ProtoReader::read_tag(uint32_t* field, WireType* type) {
  const size_t start = offset();
  const uint64_t tag = read_varint();
  const uint64_t number = tag >> 3;
  const uint64_t wire = tag & 7;
  if (number == 0 || number > kMaxFieldNumber) {
    fail_at(start, str_cat("invalid field number ", number));
  }
  if (wire > 5) fail_at(start, str_cat("invalid wire type ", wire, " for field ", number));
  *field = static_cast<uint32_t>(number);
  *type = static_cast<WireType>(wire);
}

uint32_t ProtoReader::read_fixed32() {
  if (data_.size() - pos_ < 4) fail("truncated fixed32");
  const uint32_t v = load_fixed32(data_.data() + pos_);
  pos_ += 4;
  return v;
}

uint64_t ProtoReader::read_fixed64() {
  if (data_.size() - pos_ < 8) fail("truncated fixed64");
  const uint64_t v = load_fixed64(data_.data() + pos_);
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
  ProtoReader r = *this;
  r.data_ = payload;
  r.pos_ = 0;
  r.base_ = offset() - payload.size();
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

bool ProtoReader::next(ProtoField& f) {
  if (at_end()) return false;
  f = ProtoField{};
  f.offset = offset();
  read_tag(&f.number, &f.type);
  switch (f.type) {
    case WireType::kVarint:
      f.value = read_varint();
      break;
    case WireType::kFixed64:
      f.value = read_fixed64();
      break;
    case WireType::kFixed32:
      f.value = read_fixed32();
      break;
    case WireType::kLengthDelimited:
      f.payload = read_bytes();
      f.payload_offset = offset() - f.payload.size();
      break;
    case WireType::kStartGroup:
    case WireType::kEndGroup:
      fail_at(f.offset, str_cat("unsupported group field ", f.number));
  }
  return true;
}

ProtoReader ProtoReader::nested(const ProtoField& f) const {
  ProtoReader r = *this;
  r.data_ = f.payload;
  r.pos_ = 0;
  r.base_ = f.payload_offset;
  return r;
}

void ProtoReader::append_doubles(const ProtoField& f, std::vector<double>& out) const {
  if (f.type == WireType::kFixed64) {
    out.push_back(f.as_double());
    return;
  }
  if (f.type != WireType::kLengthDelimited || f.payload.size() % 8 != 0) {
    fail_at(f.offset, str_cat("field ", f.number, " is not a repeated double"));
  }
  for (size_t i = 0; i < f.payload.size(); i += 8) {
    out.push_back(std::bit_cast<double>(load_fixed64(f.payload.data() + i)));
  }
}

}  // namespace tern::format
