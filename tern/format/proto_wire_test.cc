// The protobuf wire format: varint encodings at their edges, writers against the docs/formats.md
// vectors, and ProtoReader on malformed input (overlong and truncated varints, bad tags, lengths
// and fixed-width values past the end, groups), each a DataLoss naming the byte offset.
#include "tern/format/proto_wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "tern/format/proto_reader.h"
#include "tern/format/test_util.h"

namespace tern::format {
namespace {

using testing::data_loss;
using testing::unhex;

std::string varint(uint64_t v) {
  std::string out;
  put_varint(out, v);
  return out;
}

uint64_t read_one_varint(std::string_view bytes) {
  ProtoReader r(bytes, 0, "msg");
  const uint64_t v = r.read_varint();
  EXPECT_TRUE(r.at_end());
  return v;
}

TEST(Varint, EncodesAndDecodesTheEdges) {
  const uint64_t kMax = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(varint(0), unhex("00"));
  EXPECT_EQ(varint(127), unhex("7f"));
  EXPECT_EQ(varint(128), unhex("80 01"));
  EXPECT_EQ(varint(300), unhex("ac 02"));
  EXPECT_EQ(varint(kMax), unhex("ff ff ff ff ff ff ff ff ff 01"));
  // int64 -1 is ten bytes (two's complement), as docs/formats.md ("protobuf wire format") says.
  ProtoWriter w;
  w.add_int64(1, -1);
  EXPECT_EQ(w.bytes(), unhex("08 ff ff ff ff ff ff ff ff ff 01"));
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{16383},
                     uint64_t{16384}, uint64_t{1} << 35, uint64_t{1} << 63, kMax}) {
    EXPECT_EQ(varint_size(v), varint(v).size()) << v;
    EXPECT_EQ(read_one_varint(varint(v)), v) << v;
  }
  // A non-minimal encoding still means its value (protobuf parsers accept it).
  EXPECT_EQ(read_one_varint(unhex("80 00")), 0u);
}

TEST(Varint, OverlongAndTruncatedAreDataLoss) {
  auto read = [](std::string_view hex, size_t base) {
    const std::string bytes = unhex(hex);
    return data_loss([&] { ProtoReader(bytes, base, "msg").read_varint(); });
  };
  // Ten bytes whose last one carries more than bit 63.
  EXPECT_EQ(read("ff ff ff ff ff ff ff ff ff 02", 0),
            "msg: varint longer than 64 bits at byte offset 0");
  // An eleventh byte.
  EXPECT_EQ(read("80 80 80 80 80 80 80 80 80 80 00", 0),
            "msg: varint longer than 10 bytes at byte offset 0");
  EXPECT_EQ(read("80 80", 40), "msg: truncated varint at byte offset 40");
  EXPECT_EQ(read("", 7), "msg: truncated varint at byte offset 7");
}

TEST(ProtoWriter, BuildsTheFormatsEventVector) {
  // Event{wall_time=1.0, step=3, summary{value{tag:"loss", simple_value:0.5}}}
  ProtoWriter value, summary, event;
  value.add_bytes(1, "loss");
  value.add_float(2, 0.5f);
  summary.add_message(1, value);
  event.add_double(1, 1.0);
  event.add_int64(2, 3);
  event.add_message(5, summary);
  EXPECT_EQ(event.bytes(),
            unhex("09 00 00 00 00 00 00 f0 3f 10 03 2a 0d 0a 0b 0a 04 6c 6f 73 73 15 "
                  "00 00 00 3f"));
  ProtoWriter packed;
  packed.add_packed_doubles(6, std::vector<double>{1.0, -2.0});
  EXPECT_EQ(packed.bytes(), unhex("32 10 00 00 00 00 00 00 f0 3f 00 00 00 00 00 00 00 c0"));
}

TEST(ProtoWriter, FreeFunctionsBuildTheFormatsExampleVector) {
  // Example{features{feature{key:"x" value{int64_list{value:[1]}}}}}
  std::string int64_list, feature, entry, features, example;
  put_tag(int64_list, 1, WireType::kLengthDelimited);  // packed: length 1, then the varint 1
  put_varint(int64_list, 1);
  put_varint(int64_list, 1);
  put_length_delimited(feature, 3, int64_list);
  put_length_delimited(entry, 1, "x");
  put_length_delimited(entry, 2, feature);
  put_length_delimited(features, 1, entry);
  put_length_delimited(example, 1, features);
  EXPECT_EQ(example, unhex("0a 0c 0a 0a 0a 01 78 12 05 1a 03 0a 01 01"));
}

TEST(ProtoReader, NextReturnsEveryFieldWithAbsoluteOffsets) {
  ProtoWriter inner, msg;
  inner.add_varint(3, 300);
  msg.add_double(1, 2.5);
  msg.add_float(2, -0.25f);
  msg.add_message(4, inner);
  msg.add_packed_doubles(6, std::vector<double>{1.5, 3.0});
  msg.add_double(6, 4.0);  // the same repeated field, unpacked
  ProtoReader r(msg.bytes(), 100, "msg");
  ProtoField f;
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.number, 1u);
  EXPECT_EQ(f.type, WireType::kFixed64);
  EXPECT_EQ(f.as_double(), 2.5);
  EXPECT_EQ(f.offset, 100u);
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.type, WireType::kFixed32);
  EXPECT_EQ(f.as_float(), -0.25f);
  EXPECT_EQ(f.offset, 109u);
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f.number, 4u);
  EXPECT_EQ(f.payload_offset, 116u);
  ProtoReader n = r.nested(f);
  ProtoField g;
  ASSERT_TRUE(n.next(g));
  EXPECT_EQ(g.number, 3u);
  EXPECT_EQ(g.value, 300u);
  EXPECT_EQ(g.offset, 116u);
  EXPECT_FALSE(n.next(g));
  std::vector<double> doubles;
  while (r.next(f)) r.append_doubles(f, doubles);
  EXPECT_EQ(doubles, (std::vector<double>{1.5, 3.0, 4.0}));
}

TEST(ProtoReader, MalformedFieldsNameTheByteOffset) {
  auto walk = [](std::string_view hex) {
    const std::string bytes = unhex(hex);
    return data_loss([&] {
      ProtoReader r(bytes, 0, "msg");
      ProtoField f;
      while (r.next(f)) {
      }
    });
  };
  EXPECT_EQ(walk("08 01 00 01"), "msg: invalid field number 0 at byte offset 2");
  EXPECT_EQ(walk("0e 01"), "msg: invalid wire type 6 for field 1 at byte offset 0");
  // Field number 2^29 (one past the largest) with wire type 0.
  EXPECT_EQ(walk("80 80 80 80 10 00"), "msg: invalid field number 536870912 at byte offset 0");
  EXPECT_EQ(walk("08 01 0a 05 61 62"),
            "msg: length 5 runs past the end of the message (2 bytes left) at byte offset 3");
  EXPECT_EQ(walk("09 00 00 00"), "msg: truncated fixed64 at byte offset 1");
  EXPECT_EQ(walk("15 00 00"), "msg: truncated fixed32 at byte offset 1");
  EXPECT_EQ(walk("08 01 0b 00"), "msg: unsupported group field 1 at byte offset 2");
  EXPECT_EQ(walk("08 80"), "msg: truncated varint at byte offset 1");
}

TEST(ProtoReader, TagByTagReadsNestedMessagesWithContext) {
  // field 1 = message{ field 2 = bytes "ab", field 3 = truncated varint }
  const std::string bytes = unhex("0a 05 12 02 61 62 18");
  ProtoReader r(bytes, 10, "record 3");
  uint32_t field;
  WireType type;
  r.read_tag(&field, &type);
  EXPECT_EQ(field, 1u);
  EXPECT_EQ(type, WireType::kLengthDelimited);
  ProtoReader m = r.read_message().in("feature", "image");
  EXPECT_TRUE(r.at_end());
  EXPECT_EQ(m.offset(), 12u);
  m.read_tag(&field, &type);
  EXPECT_EQ(m.read_bytes(), "ab");
  m.read_tag(&field, &type);
  EXPECT_EQ(field, 3u);
  EXPECT_EQ(data_loss([&] { m.skip(type); }),
            "record 3, feature 'image': truncated varint at byte offset 17");
  const std::string group = unhex("0b");
  ProtoReader g(group, 0, "msg");
  g.read_tag(&field, &type);
  EXPECT_EQ(type, WireType::kStartGroup);
  EXPECT_EQ(data_loss([&] { g.skip(type); }), "msg: unsupported group field at byte offset 1");
}

TEST(ProtoReader, AppendDoublesRejectsOtherShapes) {
  ProtoWriter w;
  w.add_bytes(6, "1234567");  // 7 bytes: not a packed double list
  ProtoReader r(w.bytes(), 0, "histogram");
  ProtoField f;
  ASSERT_TRUE(r.next(f));
  std::vector<double> out;
  EXPECT_EQ(data_loss([&] { r.append_doubles(f, out); }),
            "histogram: field 6 is not a repeated double at byte offset 0");
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace tern::format
