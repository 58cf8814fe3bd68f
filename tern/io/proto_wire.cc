// Protobuf wire format encoding and checked decoding.
#include "tern/io/proto_wire.h"

#include <cstring>

#include "tern/base/error.h"

namespace tern::io {

void ProtoWriter::put_varint(uint64_t v) {
  while (v >= 0x80) {
    buf_ += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf_ += static_cast<char>(v);
}

void ProtoWriter::put_fixed(uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) buf_ += static_cast<char>((v >> (8 * i)) & 0xff);
}

void ProtoWriter::put_key(uint32_t field, WireType type) {
  put_varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(type));
}

void ProtoWriter::add_varint(uint32_t field, uint64_t value) {
  put_key(field, WireType::kVarint);
  put_varint(value);
}

void ProtoWriter::add_double(uint32_t field, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  put_key(field, WireType::kFixed64);
  put_fixed(bits, 8);
}

void ProtoWriter::add_float(uint32_t field, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  put_key(field, WireType::kFixed32);
  put_fixed(bits, 4);
}

void ProtoWriter::add_bytes(uint32_t field, std::string_view value) {
  put_key(field, WireType::kLengthDelimited);
  put_varint(value.size());
  buf_.append(value);
}

void ProtoWriter::add_packed_doubles(uint32_t field, std::span<const double> values) {
  put_key(field, WireType::kLengthDelimited);
  put_varint(values.size() * 8);
  for (double v : values) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    put_fixed(bits, 8);
  }
}

double ProtoField::as_double() const {
  double d;
  std::memcpy(&d, &value, 8);
  return d;
}

float ProtoField::as_float() const {
  uint32_t bits = static_cast<uint32_t>(value);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint64_t ProtoReader::get_varint() {
  uint64_t v = 0;
  size_t start = pos_;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size()) {
      throw_error(ErrorCode::kDataLoss, what_, ": varint at byte offset ", start,
                  " runs past the end");
    }
    uint8_t b = static_cast<uint8_t>(data_[pos_++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  throw_error(ErrorCode::kDataLoss, what_, ": varint at byte offset ", start,
              " is longer than 10 bytes");
}

bool ProtoReader::next(ProtoField& f) {
  if (pos_ >= data_.size()) return false;
  size_t start = pos_;
  uint64_t key = get_varint();
  f.number = static_cast<uint32_t>(key >> 3);
  if (f.number == 0 || (key >> 3) > 0x1fffffff) {
    throw_error(ErrorCode::kDataLoss, what_, ": invalid field number at byte offset ", start);
  }
  f.payload = {};
  f.value = 0;
  auto fixed = [&](int bytes) {
    if (data_.size() - pos_ < static_cast<size_t>(bytes)) {
      throw_error(ErrorCode::kDataLoss, what_, ": field ", f.number, " at byte offset ", start,
                  " runs past the end");
    }
    for (int i = 0; i < bytes; ++i)
      f.value |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i);
    pos_ += static_cast<size_t>(bytes);
  };
  switch (key & 7) {
    case 0:
      f.type = WireType::kVarint;
      f.value = get_varint();
      break;
    case 1:
      f.type = WireType::kFixed64;
      fixed(8);
      break;
    case 5:
      f.type = WireType::kFixed32;
      fixed(4);
      break;
    case 2: {
      f.type = WireType::kLengthDelimited;
      uint64_t n = get_varint();
      if (n > data_.size() - pos_) {
        throw_error(ErrorCode::kDataLoss, what_, ": field ", f.number, " at byte offset ", start,
                    " claims ", n, " bytes but ", data_.size() - pos_, " remain");
      }
      f.payload = data_.substr(pos_, n);
      pos_ += n;
      break;
    }
    default:
      throw_error(ErrorCode::kDataLoss, what_, ": unsupported wire type ", key & 7, " for field ",
                  f.number, " at byte offset ", start);
  }
  return true;
}

void append_doubles(const ProtoField& f, const std::string& what, std::vector<double>& out) {
  if (f.type == WireType::kFixed64) {
    out.push_back(f.as_double());
    return;
  }
  if (f.type != WireType::kLengthDelimited || f.payload.size() % 8 != 0) {
    throw_error(ErrorCode::kDataLoss, what, ": field ", f.number, " is not a repeated double");
  }
  for (size_t i = 0; i < f.payload.size(); i += 8) {
    double d;
    std::memcpy(&d, f.payload.data() + i, 8);
    out.push_back(d);
  }
}

}  // namespace tern::io
