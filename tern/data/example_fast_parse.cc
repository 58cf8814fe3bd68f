// Fast path of parse_example_batch: a bounds-checked wire scan of canonical tf.train.Examples
// writing each spec'd feature straight into its row of the batch tensor.
#include "tern/data/example_fast_parse.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace tern::data {
namespace {

constexpr uint32_t kWireVarint = 0, kWireLen = 2, kWireFixed32 = 5;

// A read position in a message; every read checks the bounds and reports failure.
struct Cursor {
  const uint8_t* p;
  const uint8_t* end;

  explicit Cursor(std::string_view s)
      : p(reinterpret_cast<const uint8_t*>(s.data())), end(p + s.size()) {}
  bool done() const { return p == end; }

  bool varint(uint64_t* v) {
    uint64_t out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) return false;
      uint8_t b = *p++;
      if (shift == 63 && b > 1) return false;  // beyond 64 bits
      out |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *v = out;
        return true;
      }
    }
    return false;  // more than 10 bytes
  }
  bool tag(uint32_t* field, uint32_t* wire) {
    uint64_t t;
    if (!varint(&t) || (t >> 3) == 0 || (t >> 3) > 0x1fffffff) return false;
    *field = static_cast<uint32_t>(t >> 3);
    *wire = static_cast<uint32_t>(t & 7);
    return true;
  }
  bool bytes(std::string_view* s) {
    uint64_t n;
    if (!varint(&n) || n > static_cast<uint64_t>(end - p)) return false;
    *s = std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
    p += n;
    return true;
  }
  // The next field must be `field` with wire type `wire` (length-delimited: its payload).
  bool expect_len(uint32_t field, std::string_view* s) {
    uint32_t f, w;
    return tag(&f, &w) && f == field && w == kWireLen && bytes(s);
  }
};

// Where each spec's values go.
struct Target {
  const FeatureSpec* spec;
  char* base;            // the batch tensor's data
  size_t row_bytes = 0;  // bytes per row
  int64_t count = 0;     // values per row
};

// A Feature message holding exactly one list: the value bytes of that list's only field.
bool single_list(std::string_view feature, uint32_t* list_field, std::string_view* list) {
  Cursor c(feature);
  if (c.done()) return false;
  uint32_t f, w;
  if (!c.tag(&f, &w) || w != kWireLen || f < 1 || f > 3 || !c.bytes(list) || !c.done())
    return false;
  *list_field = f;
  return true;
}

// A feature no spec asks for must still be one the general parser reads without error (it parses
// every feature): accepted here only in plain forms, a single list field whose entries are all
// well-formed (bytes values; floats packed or fixed32; int64s packed or varints).
bool well_formed_unused_feature(std::string_view feature) {
  uint32_t list_field;
  std::string_view list;
  if (!single_list(feature, &list_field, &list)) return false;
  Cursor c(list);
  while (!c.done()) {
    uint32_t f, w;
    if (!c.tag(&f, &w) || f != 1) return false;
    if (w == kWireLen) {
      std::string_view v;
      if (!c.bytes(&v)) return false;
      if (list_field == 2 && v.size() % 4 != 0) return false;
      if (list_field == 3) {
        Cursor packed(v);
        uint64_t x;
        while (!packed.done()) {
          if (!packed.varint(&x)) return false;
        }
      }
    } else if (list_field == 2 && w == kWireFixed32) {
      if (c.end - c.p < 4) return false;
      c.p += 4;
    } else if (list_field == 3 && w == kWireVarint) {
      uint64_t x;
      if (!c.varint(&x)) return false;
    } else {
      return false;
    }
  }
  return true;
}

bool store_row(const Target& t, std::string_view feature, size_t row) {
  uint32_t list_field;
  std::string_view list;
  if (!single_list(feature, &list_field, &list)) return false;
  Cursor c(list);
  char* dst = t.base + row * t.row_bytes;
  switch (t.spec->kind) {
    case FeatureKind::kBytes: {  // BytesList { repeated bytes value = 1; }: exactly one value
      std::string_view v;
      if (list_field != 1 || !c.expect_len(1, &v) || !c.done() || v.size() != t.row_bytes)
        return false;
      if (t.row_bytes > 0) std::memcpy(dst, v.data(), t.row_bytes);
      return true;
    }
    case FeatureKind::kFloat: {  // FloatList { repeated float value = 1 [packed]; }
      std::string_view v;
      if (list_field != 2 || !c.expect_len(1, &v) || !c.done() || v.size() != t.row_bytes)
        return false;
      if (t.row_bytes > 0) std::memcpy(dst, v.data(), t.row_bytes);  // little-endian f32
      return true;
    }
    case FeatureKind::kInt64: {  // Int64List { repeated int64 value = 1 [packed]; }
      std::string_view v;
      if (list_field != 3 || !c.expect_len(1, &v) || !c.done()) return false;
      Cursor values(v);
      auto* out = reinterpret_cast<int64_t*>(dst);
      for (int64_t k = 0; k < t.count; ++k) {
        uint64_t x;
        if (!values.varint(&x)) return false;
        out[k] = static_cast<int64_t>(x);
      }
      return values.done();
    }
    case FeatureKind::kNone:
      break;
  }
  return false;
}

// The keys of one record's features that no spec asks for, to find a repeated one: a short
// vector searched linearly (the usual case: none or a few), a hash set past kFew. Before, every
// key was searched linearly among the earlier ones: quadratic, 93-120 s for one 5.9 MB record with
// 300k such features (bad-input report F7).
class UnusedKeys {
 public:
  static constexpr size_t kFew = 16;
  void clear() {
    few_.clear();
    if (!many_.empty()) many_.clear();
  }
  // False if `key` was already there.
  bool insert(std::string_view key) {
    if (many_.empty()) {
      if (std::find(few_.begin(), few_.end(), key) != few_.end()) return false;
      few_.push_back(key);
      if (few_.size() > kFew) many_.insert(few_.begin(), few_.end());
      return true;
    }
    return many_.insert(key).second;
  }

 private:
  std::vector<std::string_view> few_;
  std::unordered_set<std::string_view> many_;
};

// One record: Example { Features features = 1; }, Features { map<string, Feature> feature = 1; }.
bool parse_record(std::string_view record, const std::vector<Target>& targets, size_t row,
                  std::vector<char>& seen, UnusedKeys& unused) {
  Cursor c(record);
  std::string_view features;
  if (!c.expect_len(1, &features) || !c.done()) return false;
  std::fill(seen.begin(), seen.end(), 0);
  unused.clear();
  Cursor fc(features);
  while (!fc.done()) {
    std::string_view entry, key, value;
    if (!fc.expect_len(1, &entry)) return false;
    Cursor ec(entry);
    if (!ec.expect_len(1, &key) || !ec.expect_len(2, &value) || !ec.done()) return false;
    size_t j = 0;
    while (j < targets.size() && targets[j].spec->name != key) ++j;
    if (j == targets.size()) {  // a feature no spec asks for: checked, not stored
      if (!unused.insert(key)) return false;
      if (!well_formed_unused_feature(value)) return false;
      continue;
    }
    if (seen[j]) return false;  // repeated: the general parser merges
    seen[j] = 1;
    if (!store_row(targets[j], value, row)) return false;
  }
  for (char s : seen) {
    if (!s) return false;  // missing: defaults are the general parser's business
  }
  return true;
}

bool fast_spec(const FeatureSpec& s) {
  if (s.var_len) return false;
  switch (s.kind) {
    case FeatureKind::kBytes:
      return !s.shape.empty();
    case FeatureKind::kInt64:
      return s.dtype == DType::kI64;
    case FeatureKind::kFloat:
      return s.dtype == DType::kF32;
    case FeatureKind::kNone:
      break;
  }
  return false;
}

}  // namespace

bool parse_example_batch_fast(const std::vector<std::string_view>& records,
                              const std::vector<FeatureSpec>& specs, Element* out) {
  if (records.empty() || specs.empty()) return false;
  for (const FeatureSpec& s : specs) {
    if (!fast_spec(s)) return false;
  }
  const int64_t b = static_cast<int64_t>(records.size());
  Element batch;
  std::vector<Target> targets;
  for (const FeatureSpec& s : specs) {
    std::vector<int64_t> dims = {b};
    dims.insert(dims.end(), s.shape.begin(), s.shape.end());
    batch.emplace_back(s.dtype, Shape(dims));
    Target t{&s, static_cast<char*>(batch.back().raw_data())};
    t.count = 1;
    for (int64_t d : s.shape) t.count *= d;
    t.row_bytes = static_cast<size_t>(t.count) * dtype_size(s.dtype);
    targets.push_back(t);
  }
  std::vector<char> seen(specs.size());
  UnusedKeys unused;
  for (size_t i = 0; i < records.size(); ++i) {
    if (!parse_record(records[i], targets, i, seen, unused)) return false;
  }
  *out = std::move(batch);
  return true;
}

}  // namespace tern::data
