// Walking a serialized tf.train.Example in place, for compute_statistics: every feature's key
// and values as views into the record's bytes, nothing allocated. Two walks:
//   - scan_canonical_example: the form every writer produces (serialize_example, TensorFlow):
//     each map entry is its key then one value, each Feature at most one list, scalars packed.
//     Inline byte reads, every length checked, the whole record checked before anything is
//     used; it declines (returns false) on anything else, malformed bytes included.
//   - for_each_feature_entry / entry_kind / for_each_value: everything tern/data/example_proto.h
//     parses, by the same protobuf rules: unknown fields skipped, the Example's features (field
//     1) merged when repeated, a map entry's value messages merged, a list of another kind
//     replacing the earlier one (oneof), packed or unpacked scalars. Malformed bytes are a
//     DataLoss from ProtoReader naming `what` and the byte offset.
// Keeping the last entry of a repeated key is the caller's part (entries come in wire order).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "tern/format/proto_reader.h"

namespace tern::pipeline {

static_assert(std::endian::native == std::endian::little, "packed floats are read as LE bytes");

enum class ValueKind : uint8_t { kNone, kBytes, kFloat, kInt64 };

// --- the canonical form ---

namespace wire {

// A varint at p (advanced past it); false if cut short or longer than 10 bytes.
inline bool varint(const char*& p, const char* end, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70 && p < end; shift += 7) {
    const auto b = static_cast<uint8_t>(*p++);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

// The tag byte `tag` (fields 1..15), then a length and that many bytes.
inline bool field(const char*& p, const char* end, char tag, std::string_view* out) {
  if (p >= end || *p != tag) return false;
  ++p;
  uint64_t n;
  if (!varint(p, end, &n) || n > static_cast<uint64_t>(end - p)) return false;
  *out = std::string_view(p, static_cast<size_t>(n));
  p += n;
  return true;
}

}  // namespace wire

// A feature as scan_canonical_example found it: its list message (already checked).
struct CanonicalEntry {
  std::string_view key;
  ValueKind kind = ValueKind::kNone;
  std::string_view list;
};

// Checks a list message of `kind` in canonical form: bytes: (1, value)*; float: empty or one
// packed field (a multiple of 4 bytes); int64: empty or one packed field of whole varints.
inline bool canonical_list(ValueKind kind, std::string_view list) {
  const char* p = list.data();
  const char* end = p + list.size();
  std::string_view v;
  if (kind == ValueKind::kBytes) {
    while (p < end)
      if (!wire::field(p, end, 0x0a, &v)) return false;
    return true;
  }
  if (p == end) return true;
  if (!wire::field(p, end, 0x0a, &v) || p != end) return false;
  if (kind == ValueKind::kFloat) return v.size() % 4 == 0;
  const char* q = v.data();
  const char* vend = q + v.size();
  uint64_t x;
  while (q < vend)
    if (!wire::varint(q, vend, &x)) return false;
  return true;
}

// Calls on_entry(CanonicalEntry) for each feature of a canonical record and returns true; false
// (having called nothing) when the record is in any other form.
template <typename Fn>
bool scan_canonical_example(std::string_view record, Fn&& on_entry) {
  // Checked in full first, so that a record declined half-way has not been half used.
  for (int pass = 0; pass < 2; ++pass) {
    const char* p = record.data();
    const char* end = p + record.size();
    while (p < end) {
      std::string_view features;
      if (!wire::field(p, end, 0x0a, &features)) return false;
      const char* f = features.data();
      const char* fend = f + features.size();
      while (f < fend) {
        std::string_view entry, feature;
        CanonicalEntry e;
        if (!wire::field(f, fend, 0x0a, &entry)) return false;
        const char* q = entry.data();
        const char* qend = q + entry.size();
        if (!wire::field(q, qend, 0x0a, &e.key) || !wire::field(q, qend, 0x12, &feature) ||
            q != qend)
          return false;
        if (!feature.empty()) {
          const char* r = feature.data();
          const char* rend = r + feature.size();
          const char tag = *r;
          if (tag != 0x0a && tag != 0x12 && tag != 0x1a) return false;
          if (!wire::field(r, rend, tag, &e.list) || r != rend) return false;
          e.kind = static_cast<ValueKind>(tag >> 3);
          if (pass == 0 && !canonical_list(e.kind, e.list)) return false;
        }
        if (pass == 1) on_entry(e);
      }
    }
  }
  return true;
}

// The values of a list scan_canonical_example returned.
template <typename OnBytes, typename OnFloat, typename OnInt>
void for_each_canonical_value(const CanonicalEntry& e, OnBytes&& on_bytes, OnFloat&& on_float,
                              OnInt&& on_int) {
  const char* p = e.list.data();
  const char* end = p + e.list.size();
  std::string_view v;
  if (e.kind == ValueKind::kBytes) {
    while (wire::field(p, end, 0x0a, &v)) on_bytes(v);
    return;
  }
  if (e.kind == ValueKind::kNone || !wire::field(p, end, 0x0a, &v)) return;
  if (e.kind == ValueKind::kFloat) {
    for (size_t i = 0; i + 4 <= v.size(); i += 4) {
      float x;
      std::memcpy(&x, v.data() + i, 4);  // little-endian (as example_proto.cc)
      on_float(x);
    }
    return;
  }
  const char* q = v.data();
  const char* vend = q + v.size();
  uint64_t x;
  while (q < vend && wire::varint(q, vend, &x)) on_int(static_cast<int64_t>(x));
}

// --- any form ---

// Calls fn(key, entry) for each feature map entry, in wire order; `entry` reads the entry's
// fields (the key, field 1, and the value messages, field 2).
template <typename Fn>
void for_each_feature_entry(std::string_view record, size_t base_offset, std::string_view what,
                            Fn&& fn) {
  using format::WireType;
  format::ProtoReader example(record, base_offset, what);
  format::ProtoField f;
  while (example.next(f)) {
    if (f.number != 1) continue;
    if (f.type != WireType::kLengthDelimited)
      example.fail_at(f.offset, "features is not length-delimited");
    format::ProtoReader features = example.nested(f);
    format::ProtoField e;
    while (features.next(e)) {
      if (e.number != 1) continue;
      if (e.type != WireType::kLengthDelimited)
        features.fail_at(e.offset, "feature map entry is not length-delimited");
      format::ProtoReader entry = features.nested(e);
      std::string_view key;
      format::ProtoReader scan = entry;
      format::ProtoField k;
      while (scan.next(k)) {
        if (k.number != 1) continue;
        if (k.type != WireType::kLengthDelimited)
          scan.fail_at(k.offset, "map key is not length-delimited");
        key = k.payload;
      }
      fn(key, entry);
    }
  }
}

// The kind a feature entry ends with, and the offset where the run of lists of that kind starts
// (lists before it were replaced by a list of another kind).
struct EntryKind {
  ValueKind kind = ValueKind::kNone;
  size_t run_start = 0;
};

inline EntryKind entry_kind(format::ProtoReader entry) {
  using format::WireType;
  EntryKind out;
  format::ProtoField v;
  while (entry.next(v)) {
    if (v.number != 2) continue;
    if (v.type != WireType::kLengthDelimited)
      entry.fail_at(v.offset, "map value is not length-delimited");
    format::ProtoReader feature = entry.nested(v);
    format::ProtoField l;
    while (feature.next(l)) {
      if (l.number < 1 || l.number > 3) continue;
      const auto kind = static_cast<ValueKind>(l.number);
      if (l.type != WireType::kLengthDelimited)
        feature.fail_at(l.offset, "a value list is not length-delimited");
      if (kind != out.kind) out = {kind, l.offset};
    }
  }
  return out;
}

// Calls on_bytes(view), on_float(float) or on_int(int64_t) for each value of the entry's final
// kind (`k` from entry_kind).
template <typename OnBytes, typename OnFloat, typename OnInt>
void for_each_value(format::ProtoReader entry, const EntryKind& k, OnBytes&& on_bytes,
                    OnFloat&& on_float, OnInt&& on_int) {
  using format::WireType;
  if (k.kind == ValueKind::kNone) return;
  format::ProtoField v;
  while (entry.next(v)) {
    if (v.number != 2) continue;
    format::ProtoReader feature = entry.nested(v);
    format::ProtoField l;
    while (feature.next(l)) {
      if (static_cast<ValueKind>(l.number) != k.kind || l.offset < k.run_start) continue;
      format::ProtoReader list = feature.nested(l);
      format::ProtoField x;
      while (list.next(x)) {
        if (x.number != 1) continue;
        switch (k.kind) {
          case ValueKind::kBytes:
            if (x.type != WireType::kLengthDelimited)
              list.fail_at(x.offset, "bytes_list value is not length-delimited");
            on_bytes(x.payload);
            break;
          case ValueKind::kFloat:
            if (x.type == WireType::kFixed32) {
              on_float(x.as_float());
            } else if (x.type == WireType::kLengthDelimited) {
              if (x.payload.size() % 4 != 0)
                list.fail_at(x.offset, "packed float_list length is not a multiple of 4");
              for (size_t i = 0; i < x.payload.size(); i += 4) {
                float f;
                std::memcpy(&f, x.payload.data() + i, 4);  // little-endian (as example_proto.cc)
                on_float(f);
              }
            } else {
              list.fail_at(x.offset, "float_list value of another wire type");
            }
            break;
          case ValueKind::kInt64:
            if (x.type == WireType::kVarint) {
              on_int(static_cast<int64_t>(x.value));
            } else if (x.type == WireType::kLengthDelimited) {
              format::ProtoReader packed = list.nested(x);
              while (!packed.at_end()) on_int(static_cast<int64_t>(packed.read_varint()));
            } else {
              list.fail_at(x.offset, "int64_list value of another wire type");
            }
            break;
          case ValueKind::kNone:
            break;
        }
      }
    }
  }
}

}  // namespace tern::pipeline
