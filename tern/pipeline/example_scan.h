// Walking a serialized tf.train.Example in place, for compute_statistics: every feature's key
// and values as views into the record's bytes, nothing allocated. It reads what
// tern/data/example_proto.h parses, by the same protobuf rules: unknown fields skipped, the
// Example's features (field 1) merged when repeated, a map entry's value messages merged, a list
// of another kind replacing the earlier one (oneof), packed or unpacked scalars. Keeping the last
// entry of a repeated key is the caller's part (entries come in wire order). Malformed bytes are a
// DataLoss from ProtoReader naming `what` and the byte offset.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "tern/format/proto_reader.h"

namespace tern::pipeline {

static_assert(std::endian::native == std::endian::little, "packed floats are read as LE bytes");

enum class ValueKind : uint8_t { kNone, kBytes, kFloat, kInt64 };

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
