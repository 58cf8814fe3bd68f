// tf.train.Example / SequenceExample wire-format parsing and serialization.
#include "tern/data/example_proto.h"

#include <bit>
#include <cstring>

#include "tern/base/error.h"
#include "tern/format/proto_reader.h"
#include "tern/format/proto_wire.h"

namespace tern::data {

using format::ProtoReader;
using format::put_length_delimited;
using format::put_tag;
using format::put_varint;
using format::varint_size;
using format::WireType;

namespace {

static_assert(std::endian::native == std::endian::little, "float lists are copied as LE bytes");

// --- parsing ---

void parse_bytes_list(ProtoReader r, std::vector<std::string>& out) {
  while (!r.at_end()) {
    uint32_t field;
    WireType type;
    r.read_tag(&field, &type);
    if (field != 1) {
      r.skip(type);
      continue;
    }
    if (type != WireType::kLengthDelimited) r.fail("bytes_list value is not length-delimited");
    out.emplace_back(r.read_bytes());
  }
}

float float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void parse_float_list(ProtoReader r, std::vector<float>& out) {
  while (!r.at_end()) {
    uint32_t field;
    WireType type;
    r.read_tag(&field, &type);
    if (field != 1) {
      r.skip(type);
      continue;
    }
    if (type == WireType::kFixed32) {
      out.push_back(float_from_bits(r.read_fixed32()));
    } else if (type == WireType::kLengthDelimited) {
      const size_t start = r.offset();
      std::string_view packed = r.read_bytes();
      if (packed.size() % 4 != 0) {
        r.fail_at(start,
                  str_cat("packed float_list of ", packed.size(), " bytes (not a multiple of 4)"));
      }
      const size_t n = packed.size() / 4;
      const size_t base = out.size();
      out.resize(base + n);
      if (n > 0) std::memcpy(out.data() + base, packed.data(), packed.size());  // little-endian
    } else {
      r.fail(str_cat("float_list value with wire type ", static_cast<int>(type)));
    }
  }
}

void parse_int64_list(ProtoReader r, std::vector<int64_t>& out) {
  while (!r.at_end()) {
    uint32_t field;
    WireType type;
    r.read_tag(&field, &type);
    if (field != 1) {
      r.skip(type);
      continue;
    }
    if (type == WireType::kVarint) {
      out.push_back(static_cast<int64_t>(r.read_varint()));
    } else if (type == WireType::kLengthDelimited) {
      ProtoReader packed = r.read_message();
      while (!packed.at_end()) out.push_back(static_cast<int64_t>(packed.read_varint()));
    } else {
      r.fail(str_cat("int64_list value with wire type ", static_cast<int>(type)));
    }
  }
}

// Merges one Feature message into `f`: a list of the same kind appends, another kind replaces
// (oneof semantics).
void parse_feature(ProtoReader r, Feature& f) {
  while (!r.at_end()) {
    uint32_t field;
    WireType type;
    r.read_tag(&field, &type);
    if (field < 1 || field > 3) {
      r.skip(type);
      continue;
    }
    const FeatureKind kind = field == 1   ? FeatureKind::kBytes
                             : field == 2 ? FeatureKind::kFloat
                                          : FeatureKind::kInt64;
    if (type != WireType::kLengthDelimited) {
      r.fail(str_cat(feature_kind_name(kind), " is not length-delimited"));
    }
    if (f.kind != kind) f = Feature{.kind = kind};
    ProtoReader list = r.read_message();
    if (kind == FeatureKind::kBytes) parse_bytes_list(list, f.bytes_list);
    if (kind == FeatureKind::kFloat) parse_float_list(list, f.float_list);
    if (kind == FeatureKind::kInt64) parse_int64_list(list, f.int64_list);
  }
}

// One map entry {key = 1, value = 2}: finds the key first so errors in the value can name it,
// then merges every value field into the entry's value.
template <typename ParseValue>
void parse_map_entry(ProtoReader entry, std::string_view label, ParseValue&& parse_value) {
  std::string_view key;
  ProtoReader scan = entry;
  while (!scan.at_end()) {
    uint32_t field;
    WireType type;
    scan.read_tag(&field, &type);
    if (field == 1 && type == WireType::kLengthDelimited) {
      key = scan.read_bytes();
    } else {
      scan.skip(type);
    }
  }
  ProtoReader values = entry.in(label, key);
  bool any_value = false;
  while (!values.at_end()) {
    uint32_t field;
    WireType type;
    values.read_tag(&field, &type);
    if (field == 2) {
      if (type != WireType::kLengthDelimited) values.fail("map value is not length-delimited");
      parse_value(key, values.read_message(), any_value);
      any_value = true;
    } else if (field == 1 && type != WireType::kLengthDelimited) {
      values.fail("map key is not length-delimited");
    } else {
      values.skip(type);
    }
  }
  if (!any_value) parse_value(key, ProtoReader({}, values.offset(), values.what()), false);
}

// Calls parse(message) for every field-1 submessage of `r`, in order; other fields are skipped.
// `what` names field 1 in the error when it is not length-delimited.
template <typename Parse>
void for_each_field1_message(ProtoReader r, std::string_view what, Parse&& parse) {
  while (!r.at_end()) {
    uint32_t field;
    WireType type;
    r.read_tag(&field, &type);
    if (field != 1) {
      r.skip(type);
      continue;
    }
    if (type != WireType::kLengthDelimited) r.fail(str_cat(what, " is not length-delimited"));
    parse(r.read_message());
  }
}

// Features { map<string, Feature> feature = 1; }, merged into `out`.
void parse_features(ProtoReader r, Features& out) {
  for_each_field1_message(r, "feature map entry", [&](ProtoReader entry) {
    parse_map_entry(entry, "feature", [&](std::string_view key, ProtoReader value, bool merge) {
      Feature& f = out[std::string(key)];
      if (!merge) f = Feature{};
      parse_feature(value, f);
    });
  });
}

// FeatureList { repeated Feature feature = 1; }
void parse_feature_list(ProtoReader r, std::vector<Feature>& out) {
  for_each_field1_message(r, "feature_list step",
                          [&](ProtoReader step) { parse_feature(step, out.emplace_back()); });
}

// FeatureLists { map<string, FeatureList> feature_list = 1; }
void parse_feature_lists(ProtoReader r, FeatureLists& out) {
  for_each_field1_message(r, "feature_list map entry", [&](ProtoReader entry) {
    parse_map_entry(entry, "feature_list",
                    [&](std::string_view key, ProtoReader value, bool merge) {
                      std::vector<Feature>& steps = out[std::string(key)];
                      if (!merge) steps.clear();
                      parse_feature_list(value, steps);
                    });
  });
}

// --- serialization ---

std::string serialize_features(const Features& features) {
  std::string out;
  for (const auto& [key, feature] : features) {
    std::string entry;
    put_length_delimited(entry, 1, key);
    put_length_delimited(entry, 2, serialize_feature(feature));
    put_length_delimited(out, 1, entry);
  }
  return out;
}

}  // namespace

std::string_view feature_kind_name(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kBytes:
      return "bytes_list";
    case FeatureKind::kFloat:
      return "float_list";
    case FeatureKind::kInt64:
      return "int64_list";
    case FeatureKind::kNone:
      break;
  }
  return "none";
}

Feature Feature::bytes(std::vector<std::string> values) {
  return Feature{.kind = FeatureKind::kBytes, .bytes_list = std::move(values)};
}
Feature Feature::floats(std::vector<float> values) {
  return Feature{.kind = FeatureKind::kFloat, .float_list = std::move(values)};
}
Feature Feature::int64s(std::vector<int64_t> values) {
  return Feature{.kind = FeatureKind::kInt64, .int64_list = std::move(values)};
}

size_t Feature::size() const {
  switch (kind) {
    case FeatureKind::kBytes:
      return bytes_list.size();
    case FeatureKind::kFloat:
      return float_list.size();
    case FeatureKind::kInt64:
      return int64_list.size();
    case FeatureKind::kNone:
      break;
  }
  return 0;
}

Example parse_example_proto(std::string_view bytes, std::string_view what) {
  Example out;
  for_each_field1_message(ProtoReader(bytes, 0, what), "features",
                          [&](ProtoReader features) { parse_features(features, out.features); });
  return out;
}

SequenceExample parse_sequence_example_proto(std::string_view bytes, std::string_view what) {
  SequenceExample out;
  ProtoReader r(bytes, 0, what);
  while (!r.at_end()) {
    uint32_t field;
    WireType type;
    r.read_tag(&field, &type);
    if (field != 1 && field != 2) {
      r.skip(type);
      continue;
    }
    if (type != WireType::kLengthDelimited) {
      r.fail(field == 1 ? "context is not length-delimited"
                        : "feature_lists is not length-delimited");
    }
    if (field == 1) parse_features(r.read_message(), out.context);
    if (field == 2) parse_feature_lists(r.read_message(), out.feature_lists);
  }
  return out;
}

bool looks_like_sequence_example(std::string_view bytes) {
  try {
    ProtoReader r(bytes, 0, "message");
    while (!r.at_end()) {
      uint32_t field;
      WireType type;
      r.read_tag(&field, &type);
      if (field == 2 && type == WireType::kLengthDelimited) return true;
      r.skip(type);
    }
  } catch (const Error&) {
    return false;
  }
  return false;
}

std::string serialize_feature(const Feature& feature) {
  std::string list;
  switch (feature.kind) {
    case FeatureKind::kBytes:
      for (const std::string& v : feature.bytes_list) put_length_delimited(list, 1, v);
      break;
    case FeatureKind::kFloat:
      if (!feature.float_list.empty()) {
        put_tag(list, 1, WireType::kLengthDelimited);
        put_varint(list, feature.float_list.size() * 4);
        const size_t base = list.size();
        list.resize(base + feature.float_list.size() * 4);
        std::memcpy(list.data() + base, feature.float_list.data(), feature.float_list.size() * 4);
      }
      break;
    case FeatureKind::kInt64:
      if (!feature.int64_list.empty()) {
        size_t n = 0;
        for (int64_t v : feature.int64_list) n += varint_size(static_cast<uint64_t>(v));
        put_tag(list, 1, WireType::kLengthDelimited);
        put_varint(list, n);
        for (int64_t v : feature.int64_list) put_varint(list, static_cast<uint64_t>(v));
      }
      break;
    case FeatureKind::kNone:
      return {};
  }
  std::string out;
  put_length_delimited(out, static_cast<uint32_t>(feature.kind), list);
  return out;
}

std::string serialize_example(const Example& example) {
  std::string out;
  if (!example.features.empty()) put_length_delimited(out, 1, serialize_features(example.features));
  return out;
}

std::string serialize_sequence_example(const SequenceExample& example) {
  std::string out;
  if (!example.context.empty()) put_length_delimited(out, 1, serialize_features(example.context));
  if (!example.feature_lists.empty()) {
    std::string lists;
    for (const auto& [key, steps] : example.feature_lists) {
      std::string list;
      for (const Feature& f : steps) put_length_delimited(list, 1, serialize_feature(f));
      std::string entry;
      put_length_delimited(entry, 1, key);
      put_length_delimited(entry, 2, list);
      put_length_delimited(lists, 1, entry);
    }
    put_length_delimited(out, 2, lists);
  }
  return out;
}

}  // namespace tern::data
