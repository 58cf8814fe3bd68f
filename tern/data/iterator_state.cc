// StateWriter / StateReader: the iterator-state blob encoding.
#include "tern/data/iterator_state.h"

#include <cstring>

#include "tern/base/checked_math.h"
#include "tern/base/error.h"
#include "tern/format/crc32c.h"

namespace tern::data {
namespace {

constexpr std::string_view kMagic = "TERNITR1";
enum Tag : uint8_t { kTagInt = 1, kTagString = 2, kTagTensor = 3 };

std::string_view tag_name(uint8_t tag) {
  switch (tag) {
    case kTagInt:
      return "int";
    case kTagString:
      return "string";
    case kTagTensor:
      return "tensor";
  }
  return "unknown";
}

void append_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

// An element's origin as bytes: per position its kind (u8), index (u64) and file (u64 length and
// the path; kSameFile: the previous position's file; 0: none).
constexpr uint64_t kSameFile = ~uint64_t{0};

std::string encode_origin(const ElementOrigin& origin) {
  std::string out;
  append_u64(out, origin.size());
  int32_t previous = -2;
  for (size_t i = 0; i < origin.size(); ++i) {
    const SourcePosition& p = origin[i];
    out.push_back(static_cast<char>(p.kind));
    append_u64(out, static_cast<uint64_t>(p.index));
    if (p.file == previous) {
      append_u64(out, kSameFile);
    } else {
      const std::string path = p.file >= 0 ? source_file_name(p.file) : std::string();
      append_u64(out, path.size());
      out += path;
    }
    previous = p.file;
  }
  return out;
}

ElementOrigin decode_origin(std::string_view bytes) {
  size_t pos = 0;
  auto take = [&](size_t n) {
    if (n > bytes.size() - pos) {
      throw_error(ErrorCode::kDataLoss, "iterator state: element origin runs past its end (",
                  bytes.size(), " bytes)");
    }
    std::string_view out = bytes.substr(pos, n);
    pos += n;
    return out;
  };
  auto u64 = [&] {
    std::string_view b = take(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= static_cast<uint64_t>(static_cast<unsigned char>(b[i])) << (8 * i);
    return v;
  };
  const uint64_t n = u64();
  if (n > bytes.size()) throw_error(ErrorCode::kDataLoss, "iterator state: origin of ", n, " rows");
  ElementOrigin origin;
  int32_t file = -1;
  for (uint64_t i = 0; i < n; ++i) {
    const auto kind = static_cast<uint8_t>(take(1)[0]);
    if (kind == 0 || kind > static_cast<uint8_t>(SourcePosition::Kind::kElement)) {
      throw_error(ErrorCode::kDataLoss, "iterator state: origin position kind ",
                  static_cast<int>(kind));
    }
    const auto index = static_cast<int64_t>(u64());
    const uint64_t len = u64();
    if (len != kSameFile) file = len == 0 ? -1 : source_file_id(take(len));
    origin.push_back({static_cast<SourcePosition::Kind>(kind), file, index});
  }
  if (pos != bytes.size())
    throw_error(ErrorCode::kDataLoss, "iterator state: origin has extra bytes");
  return origin;
}

}  // namespace

// --- writer ---

StateWriter::StateWriter() : buf_(kMagic) {}

void StateWriter::put_u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<char>(v >> (8 * i)));
}

void StateWriter::put_bytes(const void* data, size_t n) {
  buf_.append(static_cast<const char*>(data), n);
}

void StateWriter::begin_entry(uint8_t tag, std::string_view key) {
  std::string full = prefix_ + std::string(key);
  buf_.push_back(static_cast<char>(tag));
  put_u64(full.size());
  put_bytes(full.data(), full.size());
}

void StateWriter::write_int(std::string_view key, int64_t value) {
  begin_entry(kTagInt, key);
  put_u64(static_cast<uint64_t>(value));
}

void StateWriter::write_string(std::string_view key, std::string_view value) {
  begin_entry(kTagString, key);
  put_u64(value.size());
  put_bytes(value.data(), value.size());
}

void StateWriter::write_tensor(std::string_view key, const Tensor& value) {
  TERN_CHECK(value.defined(), "iterator state: undefined tensor at ", key);
  begin_entry(kTagTensor, key);
  buf_.push_back(static_cast<char>(value.dtype()));
  put_u64(static_cast<uint64_t>(value.rank()));
  for (int64_t d : value.shape().dims()) put_u64(static_cast<uint64_t>(d));
  put_bytes(value.raw_data(), value.nbytes());
}

void StateWriter::write_element(std::string_view key, const Element& value) {
  Scope scope(*this, key);
  write_int("size", static_cast<int64_t>(value.size()));
  for (const Tensor& t : value) write_tensor("c", t);
  if (!value.origin.empty()) write_string("origin", encode_origin(value.origin));
}

void StateWriter::write_elements(std::string_view key, const std::vector<Element>& values) {
  Scope scope(*this, key);
  write_int("count", static_cast<int64_t>(values.size()));
  for (const Element& e : values) write_element("e", e);
}

StateWriter::Scope::Scope(StateWriter& w, std::string_view name) : w_(w), saved_(w.prefix_.size()) {
  w_.prefix_ += name;
  w_.prefix_ += '/';
}
StateWriter::Scope::~Scope() {
  w_.prefix_.resize(saved_);
}

std::string StateWriter::finish() const {
  std::string out = buf_;
  uint32_t crc = format::crc32c_mask(format::crc32c(out));
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(crc >> (8 * i)));
  return out;
}

// --- reader ---

StateReader::StateReader(std::string_view blob) {
  if (blob.size() < kMagic.size() + 4 || blob.substr(0, kMagic.size()) != kMagic) {
    throw_error(ErrorCode::kDataLoss, "iterator state: not an iterator-state blob (", blob.size(),
                " bytes, bad header)");
  }
  const size_t body = blob.size() - 4;
  uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) {
    stored |= static_cast<uint32_t>(static_cast<unsigned char>(blob[body + i])) << (8 * i);
  }
  if (format::crc32c_unmask(stored) != format::crc32c(blob.data(), body)) {
    throw_error(ErrorCode::kDataLoss, "iterator state: checksum mismatch over ", body, " bytes");
  }
  data_ = blob.substr(0, body);
  pos_ = kMagic.size();
}

uint64_t StateReader::get_u64() {
  std::string_view b = get_bytes(8);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(b[i])) << (8 * i);
  return v;
}

std::string_view StateReader::get_bytes(uint64_t n) {
  if (n > data_.size() - pos_) {
    throw_error(ErrorCode::kDataLoss, "iterator state: entry runs past the end at byte offset ",
                pos_, " (needs ", n, " bytes, ", data_.size() - pos_, " left)");
  }
  std::string_view out = data_.substr(pos_, n);
  pos_ += n;
  return out;
}

void StateReader::begin_entry(uint8_t tag, std::string_view key) {
  const std::string want = prefix_ + std::string(key);
  if (pos_ >= data_.size()) {
    throw_error(ErrorCode::kInvalidArgument,
                "iterator state does not match the pipeline: ", "expected ", tag_name(tag), " '",
                want, "' but the state ends");
  }
  const size_t at = pos_;
  const uint8_t got_tag = static_cast<uint8_t>(get_bytes(1)[0]);
  std::string_view got = get_bytes(get_u64());
  if (got_tag != tag || got != want) {
    throw_error(ErrorCode::kInvalidArgument,
                "iterator state does not match the pipeline: ", "expected ", tag_name(tag), " '",
                want, "' but found ", tag_name(got_tag), " '", got, "' at byte offset ", at);
  }
}

bool StateReader::next_key_is(std::string_view key) const {
  size_t at = pos_ + 1;  // past the tag
  if (pos_ >= data_.size() || data_.size() - at < 8) return false;
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i)
    len |= static_cast<uint64_t>(static_cast<unsigned char>(data_[at + i])) << (8 * i);
  at += 8;
  if (len != prefix_.size() + key.size() || len > data_.size() - at) return false;
  return data_.substr(at, prefix_.size()) == prefix_ &&
         data_.substr(at + prefix_.size(), key.size()) == key;
}

int64_t StateReader::read_int(std::string_view key) {
  begin_entry(kTagInt, key);
  return static_cast<int64_t>(get_u64());
}

std::string StateReader::read_string(std::string_view key) {
  begin_entry(kTagString, key);
  return std::string(get_bytes(get_u64()));
}

Tensor StateReader::read_tensor(std::string_view key) {
  begin_entry(kTagTensor, key);
  const uint8_t code = static_cast<uint8_t>(get_bytes(1)[0]);
  if (code > static_cast<uint8_t>(DType::kBool)) {
    throw_error(ErrorCode::kDataLoss, "iterator state: tensor '", prefix_, key, "' has dtype code ",
                static_cast<int>(code));
  }
  const uint64_t rank = get_u64();
  if (rank > 64) {
    throw_error(ErrorCode::kDataLoss, "iterator state: tensor '", prefix_, key, "' has rank ",
                rank);
  }
  std::vector<int64_t> dims;
  int64_t bytes = static_cast<int64_t>(dtype_size(static_cast<DType>(code)));
  for (uint64_t i = 0; i < rank; ++i) {
    const int64_t d = static_cast<int64_t>(get_u64());
    if (d < 0) throw_error(ErrorCode::kDataLoss, "iterator state: negative dim in '", key, "'");
    bytes = checked_mul(bytes, d, "iterator state tensor size");
    dims.push_back(d);
  }
  std::string_view payload = get_bytes(static_cast<uint64_t>(bytes));
  Tensor t(static_cast<DType>(code), Shape(std::move(dims)));
  if (!payload.empty()) std::memcpy(t.raw_data(), payload.data(), payload.size());
  return t;
}

Element StateReader::read_element(std::string_view key) {
  Scope scope(*this, key);
  const int64_t n = read_int("size");
  if (n < 0 || n > 1 << 20) throw_error(ErrorCode::kDataLoss, "iterator state: element size ", n);
  Element e;
  for (int64_t i = 0; i < n; ++i) e.push_back(read_tensor("c"));
  if (next_key_is("origin")) e.origin = decode_origin(read_string("origin"));
  return e;
}

std::vector<Element> StateReader::read_elements(std::string_view key) {
  Scope scope(*this, key);
  const int64_t n = read_int("count");
  if (n < 0) throw_error(ErrorCode::kDataLoss, "iterator state: element count ", n);
  std::vector<Element> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(read_element("e"));
  return out;
}

void StateReader::expect_end() const {
  if (pos_ != data_.size()) {
    throw_error(ErrorCode::kInvalidArgument,
                "iterator state does not match the pipeline: ", data_.size() - pos_,
                " bytes of state left over at byte offset ", pos_);
  }
}

StateReader::Scope::Scope(StateReader& r, std::string_view name) : r_(r), saved_(r.prefix_.size()) {
  r_.prefix_ += name;
  r_.prefix_ += '/';
}
StateReader::Scope::~Scope() {
  r_.prefix_.resize(saved_);
}

}  // namespace tern::data
