// Tests for the tf.train.Example / SequenceExample wire format: docs/formats.md vectors, bytes made
// by protoc from the .proto definitions, packed and unpacked scalars, merging rules, and malformed
// input as DataLoss naming the feature and byte offset.
#include "tern/data/example_proto.h"

#include <gtest/gtest.h>

#include "tern/base/error.h"

namespace tern::data {
namespace {

std::string unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// protoc --encode=tensorflow.Example of
//   features { feature { key: "image" value { float_list { value: [0.5, -2.25, 1e10] } } }
//              feature { key: "label" value { int64_list { value: [-3, 300] } } }
//              feature { key: "name"  value { bytes_list { value: ["ab", ""] } } } }
constexpr std::string_view kProtocExample =
    "0a480a190a05696d6167651210120e0a0c0000003f000010c0f90215500a190a056c6162656c12101a0e0a0cfdff"
    "ffffffffffffff01ac020a100a046e616d6512080a060a0261620a00";
// protoc --encode=tensorflow.SequenceExample of
//   context { feature { key: "id" value { int64_list { value: [7] } } } }
//   feature_lists { feature_list { key: "frames" value { [1.5, 2], [-1, 0], [4, 8] (floats) } }
//                   feature_list { key: "tokens" value { [1, 2], [3] (int64s) } } }
constexpr std::string_view kProtocSequence =
    "0a0d0a0b0a02696412051a030a010712510a340a066672616d6573122a0a0c120a0a080000c03f000000400a0c12"
    "0a0a08000080bf000000000a0c120a0a0800008040000000410a190a06746f6b656e73120f0a061a040a0201020a"
    "051a030a0103";

TEST(ExampleProto, FormatVectors) {
  Example ex;
  ex.features["x"] = Feature::int64s({1});
  EXPECT_EQ(hex(serialize_example(ex)), "0a0c0a0a0a017812051a030a0101");
  EXPECT_EQ(parse_example_proto(unhex("0a0c0a0a0a017812051a030a0101")), ex);
  EXPECT_EQ(hex(serialize_feature(Feature::floats({1.5f}))), "12060a040000c03f");
}

TEST(ExampleProto, ParsesProtocBytesAndSerializesTheSame) {
  const std::string bytes = unhex(kProtocExample);
  Example ex = parse_example_proto(bytes);
  ASSERT_EQ(ex.features.size(), 3u);
  EXPECT_EQ(ex.features["image"], Feature::floats({0.5f, -2.25f, 1e10f}));
  EXPECT_EQ(ex.features["label"], Feature::int64s({-3, 300}));
  EXPECT_EQ(ex.features["name"], Feature::bytes({"ab", ""}));
  EXPECT_EQ(serialize_example(ex), bytes);  // keys in order: protobuf's deterministic output
  EXPECT_FALSE(looks_like_sequence_example(bytes));
}

TEST(ExampleProto, SequenceExampleMatchesProtoc) {
  const std::string bytes = unhex(kProtocSequence);
  SequenceExample ex = parse_sequence_example_proto(bytes);
  EXPECT_EQ(ex.context["id"], Feature::int64s({7}));
  ASSERT_EQ(ex.feature_lists["frames"].size(), 3u);
  EXPECT_EQ(ex.feature_lists["frames"][2], Feature::floats({4, 8}));
  ASSERT_EQ(ex.feature_lists["tokens"].size(), 2u);
  EXPECT_EQ(ex.feature_lists["tokens"][0], Feature::int64s({1, 2}));
  EXPECT_EQ(serialize_sequence_example(ex), bytes);
  EXPECT_TRUE(looks_like_sequence_example(bytes));
  EXPECT_EQ(parse_sequence_example_proto(serialize_sequence_example(ex)), ex);
}

TEST(ExampleProto, UnpackedScalarsAndUnknownFields) {
  // Feature{int64_list{1, 2 unpacked}}, then an unknown varint field 9 inside the list, then an
  // unknown length-delimited field 7 in the Feature.
  std::string feature = unhex("1a060801080248053a0178");
  // float_list with two unpacked fixed32 values (1.5, -1).
  std::string floats = unhex("120a0d0000c03f0d000080bf");
  Example ex;
  std::string entry_a =
      unhex("0a0161") + "\x12" + std::string(1, static_cast<char>(feature.size())) + feature;
  std::string entry_b =
      unhex("0a0162") + "\x12" + std::string(1, static_cast<char>(floats.size())) + floats;
  std::string features = "\x0a" + std::string(1, static_cast<char>(entry_a.size())) + entry_a +
                         "\x0a" + std::string(1, static_cast<char>(entry_b.size())) + entry_b;
  std::string bytes = "\x0a" + std::string(1, static_cast<char>(features.size())) + features +
                      unhex("2001");  // unknown top-level field 4
  ex = parse_example_proto(bytes);
  EXPECT_EQ(ex.features["a"], Feature::int64s({1, 2}));
  EXPECT_EQ(ex.features["b"], Feature::floats({1.5f, -1.0f}));
}

TEST(ExampleProto, MergingRules) {
  // Two int64_list fields in one Feature append; a float_list after them replaces (oneof).
  std::string feature = unhex("1a030a01011a030a0102");
  std::string entry =
      unhex("0a0178") + "\x12" + std::string(1, static_cast<char>(feature.size())) + feature;
  std::string msg = "\x0a" + std::string(1, static_cast<char>(entry.size() + 2)) + "\x0a" +
                    std::string(1, static_cast<char>(entry.size())) + entry;
  EXPECT_EQ(parse_example_proto(msg).features["x"], Feature::int64s({1, 2}));
  feature += unhex("12060a040000c03f");
  entry = unhex("0a0178") + "\x12" + std::string(1, static_cast<char>(feature.size())) + feature;
  msg = "\x0a" + std::string(1, static_cast<char>(entry.size() + 2)) + "\x0a" +
        std::string(1, static_cast<char>(entry.size())) + entry;
  EXPECT_EQ(parse_example_proto(msg).features["x"], Feature::floats({1.5f}));
  // Two map entries with the same key: the last wins; two `features` fields merge.
  Example a, b;
  a.features["k"] = Feature::int64s({1});
  a.features["only_a"] = Feature::int64s({5});
  b.features["k"] = Feature::int64s({2});
  Example merged = parse_example_proto(serialize_example(a) + serialize_example(b));
  EXPECT_EQ(merged.features["k"], Feature::int64s({2}));
  EXPECT_EQ(merged.features["only_a"], Feature::int64s({5}));
}

TEST(ExampleProto, ExtremeValuesRoundTrip) {
  Example ex;
  ex.features["i"] = Feature::int64s({INT64_MIN, -1, 0, INT64_MAX});
  ex.features["f"] = Feature::floats({-0.0f, 3.4e38f, 1e-45f});
  ex.features["b"] = Feature::bytes({std::string("\0\xff", 2), std::string(300, 'x')});
  ex.features["empty"] = Feature::int64s({});
  ex.features["none"] = Feature{};
  EXPECT_EQ(parse_example_proto(serialize_example(ex)), ex);
  EXPECT_EQ(parse_example_proto(""), Example{});
  EXPECT_EQ(serialize_example(Example{}), "");
}

std::string error_of(std::string_view bytes) {
  try {
    parse_example_proto(bytes, "tf.train.Example record 3");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
    return e.what();
  }
  return "";
}

TEST(ExampleProto, MalformedInputIsDataLossWithOffset) {
  const std::string good = unhex(kProtocExample);
  // Cut inside the label's int64 list (byte 40): the error names the feature and an offset.
  std::string msg = error_of(good.substr(0, 40));
  EXPECT_NE(msg.find("record 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("byte offset"), std::string::npos) << msg;
  // A length that runs past the end of the value, inside feature 'label'.
  std::string bad = good;
  bad[41] = '\x7f';  // the label's int64_list length
  msg = error_of(bad);
  EXPECT_NE(msg.find("feature 'label'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at byte offset 41"), std::string::npos) << msg;
  EXPECT_NE(error_of(unhex("0a0c0a0a0a0178120512030a0101")).find("not a multiple of 4"),
            std::string::npos);  // packed floats of 1 byte
  EXPECT_NE(error_of(unhex("10ffffffffffffffffff7f")).find("varint"), std::string::npos);
  EXPECT_NE(error_of(unhex("13")).find("group"), std::string::npos);
  EXPECT_NE(error_of(unhex("00")).find("field number 0"), std::string::npos);
  EXPECT_NE(error_of(unhex("0e")).find("wire type 6"), std::string::npos);
  EXPECT_NE(error_of(unhex("10")).find("truncated varint at byte offset 1"), std::string::npos);
}

TEST(ExampleProto, EveryPrefixAndByteFlipParsesOrFailsCleanly) {
  for (std::string_view vec : {kProtocExample, kProtocSequence}) {
    const std::string good = unhex(vec);
    for (size_t n = 0; n < good.size(); ++n) {
      for (int seq = 0; seq < 2; ++seq) {
        try {
          if (seq)
            parse_sequence_example_proto(good.substr(0, n));
          else
            parse_example_proto(good.substr(0, n));
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
        }
      }
    }
    for (size_t i = 0; i < good.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        std::string bad = good;
        bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
        try {
          parse_sequence_example_proto(bad);
          parse_example_proto(bad);
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tern::data
