// Tests for the fast Example batch parser: on canonical records it equals the general parser
// bitwise; every non-canonical form (missing features, unknown features, unpacked lists,
// repeated keys, wrong lengths, malformed bytes) is declined, and parse_example_batch then gives
// the general parser's result or its exact error.
#include "tern/data/example_fast_parse.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>

#include "tern/data/example_proto.h"
#include "tern/format/proto_wire.h"

namespace tern::data {
namespace {

std::vector<FeatureSpec> specs() {
  FeatureSpec image = fixed_len_feature("image", FeatureKind::kBytes, {4, 3, 1});
  image.dtype = DType::kU8;
  return {image, fixed_len_feature("label", FeatureKind::kInt64),
          fixed_len_feature("box", FeatureKind::kFloat, {2, 2}),
          fixed_len_feature("ids", FeatureKind::kInt64, {3})};
}

Example example(std::mt19937_64& rng) {
  Example ex;
  std::string pixels(12, '\0');
  for (char& c : pixels) c = static_cast<char>(rng() % 256);
  ex.features["image"] = Feature::bytes({pixels});
  // Negative and large labels: 10-byte varints.
  ex.features["label"] = Feature::int64s({static_cast<int64_t>(rng()) >> (rng() % 64)});
  std::uniform_real_distribution<float> u(-5, 5);
  ex.features["box"] = Feature::floats({u(rng), u(rng), u(rng), u(rng)});
  ex.features["ids"] = Feature::int64s({-1, 0, static_cast<int64_t>(rng() % 100000)});
  return ex;
}

void expect_equal(const Element& a, const Element& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].type(), b[i].type()) << "component " << i;
    EXPECT_EQ(std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].nbytes()), 0) << "component " << i;
  }
}

// The length of an Example's Features payload (the record is tag 0x0a, a length varint, then the
// payload).
size_t features_payload_size(const std::string& record) {
  size_t n = 0;
  for (size_t i = 1, shift = 0; i < record.size(); ++i, shift += 7) {
    n |= static_cast<size_t>(record[i] & 0x7f) << shift;
    if ((record[i] & 0x80) == 0) break;
  }
  return n;
}

std::vector<std::string_view> views(const std::vector<std::string>& records) {
  return {records.begin(), records.end()};
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ExampleFastParse, CanonicalRecordsEqualTheGeneralParser) {
  std::mt19937_64 rng(7);
  std::vector<std::string> records;
  for (int i = 0; i < 50; ++i) records.push_back(serialize_example(example(rng)));
  Element fast;
  ASSERT_TRUE(parse_example_batch_fast(views(records), specs(), &fast));
  expect_equal(fast, parse_example_batch_general(views(records), specs(), 0));
  expect_equal(parse_example_batch(views(records), specs(), 0), fast);
  EXPECT_EQ(fast[0].shape(), Shape({50, 4, 3, 1}));
  EXPECT_EQ(fast[1].shape(), Shape({50}));
  EXPECT_EQ(fast[2].shape(), Shape({50, 2, 2}));
}

// One record changed by `edit` (the others canonical): the fast path declines, and
// parse_example_batch agrees with the general parser, in its result or in its error.
void expect_declined_and_general(const std::function<void(Example&)>& edit,
                                 std::vector<FeatureSpec> s = specs()) {
  std::mt19937_64 rng(11);
  std::vector<std::string> records;
  for (int i = 0; i < 4; ++i) {
    Example ex = example(rng);
    if (i == 2) edit(ex);
    records.push_back(serialize_example(ex));
  }
  Element fast;
  EXPECT_FALSE(parse_example_batch_fast(views(records), s, &fast));
  std::string general_error, error;
  Element general, got;
  general_error = error_of([&] { general = parse_example_batch_general(views(records), s, 0); });
  error = error_of([&] { got = parse_example_batch(views(records), s, 0); });
  EXPECT_EQ(error, general_error);
  if (general_error.empty()) expect_equal(got, general);
}

TEST(ExampleFastParse, UnusedFeaturesAreCheckedAndSkipped) {
  std::mt19937_64 rng(9);
  std::vector<std::string> records;
  for (int i = 0; i < 8; ++i) {
    Example ex = example(rng);
    ex.features["image/format"] = Feature::bytes({"raw", ""});
    ex.features["image/height"] = Feature::int64s({28, -3});
    ex.features["scores"] = Feature::floats({0.5f, -1.0f});
    ex.features["empty"] = Feature::int64s({});
    records.push_back(serialize_example(ex));
  }
  Element fast;
  ASSERT_TRUE(parse_example_batch_fast(views(records), specs(), &fast));
  expect_equal(fast, parse_example_batch_general(views(records), specs(), 0));
}

// The Features entry of `key` with one int64 value: feature { key, Feature { int64_list } }.
std::string int64_entry(const std::string& key, int64_t v) {
  std::string packed, list, feature, entry;
  format::put_varint(packed, static_cast<uint64_t>(v));
  format::put_length_delimited(list, 1, packed);   // Int64List.value, packed
  format::put_length_delimited(feature, 3, list);  // Feature.int64_list
  format::put_length_delimited(entry, 1, key);
  format::put_length_delimited(entry, 2, feature);
  std::string out;
  format::put_length_delimited(out, 1, entry);  // Features.feature
  return out;
}

// Bad-input report F7: each unused key was searched linearly among the record's earlier ones, so
// one record of 300k unused features took 93-120 s (the per-record parser: 0.5 s). Linear now:
// 300k keys parse far inside the bound, which the quadratic search needed ~45 G key comparisons
// to exceed; a key repeated after thousands of others is still found (and declined).
TEST(ExampleFastParse, ManyUnusedFeaturesParseInLinearTime) {
  std::mt19937_64 rng(11);
  const std::string canonical = serialize_example(example(rng));
  // The Features payload of the canonical record: after its tag byte and length varint.
  std::string features = canonical.substr(canonical.size() - features_payload_size(canonical));
  std::string many;
  constexpr int kUnused = 300000;
  for (int i = 0; i < kUnused; ++i) many += int64_entry("k" + std::to_string(i), i);
  auto record = [&](const std::string& extra) {
    std::string out;
    format::put_length_delimited(out, 1, features + extra);
    return out;
  };
  const std::vector<std::string> records = {canonical, record(many)};
  const auto start = std::chrono::steady_clock::now();
  Element fast;
  ASSERT_TRUE(parse_example_batch_fast(views(records), specs(), &fast));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0) << "300k unused features: quadratic again?";
  expect_equal(fast, parse_example_batch_general(views(records), specs(), 0));
  // A key repeated far down the list: declined to the general parser, which merges it.
  const std::vector<std::string> repeated = {record(many + int64_entry("k123", 7))};
  EXPECT_FALSE(parse_example_batch_fast(views(repeated), specs(), &fast));
}

TEST(ExampleFastParse, NonCanonicalRecordsGoToTheGeneralParser) {
  // Missing feature with a default, and without one (an error naming record 2).
  std::vector<FeatureSpec> with_default = specs();
  with_default[1].default_value = {-7};
  expect_declined_and_general([](Example& ex) { ex.features.erase("label"); }, with_default);
  expect_declined_and_general([](Example& ex) { ex.features.erase("label"); });
  // An unused feature with no list (kind none): declined (the fast path takes plain lists only).
  expect_declined_and_general([](Example& ex) { ex.features["extra"] = Feature{}; });
  // Wrong kind, wrong count, wrong byte length: the general parser's errors.
  expect_declined_and_general([](Example& ex) { ex.features["label"] = Feature::floats({1}); });
  expect_declined_and_general([](Example& ex) { ex.features["ids"] = Feature::int64s({1, 2}); });
  expect_declined_and_general([](Example& ex) { ex.features["image"] = Feature::bytes({"ab"}); });
  expect_declined_and_general([](Example& ex) {
    ex.features["image"] = Feature::bytes({"abcdefghijkl", "x"});
  });
}

TEST(ExampleFastParse, WireFormsTheGeneralParserMergesAreDeclined) {
  std::mt19937_64 rng(3);
  std::string good = serialize_example(example(rng));
  std::vector<FeatureSpec> s = specs();
  auto check = [&](const std::string& bad) {
    std::vector<std::string> records = {good, bad};
    Element fast;
    EXPECT_FALSE(parse_example_batch_fast(views(records), s, &fast));
    Element general, got;
    std::string general_error =
        error_of([&] { general = parse_example_batch_general(views(records), s, 0); });
    EXPECT_EQ(error_of([&] { got = parse_example_batch(views(records), s, 0); }), general_error);
    if (general_error.empty()) expect_equal(got, general);
  };
  check(good + good);                        // `features` twice: protobuf merges the maps
  check(good.substr(0, good.size() - 1));    // truncated
  check(good + std::string("\x10\x01", 2));  // an unknown top-level varint field
  check(std::string("\x0a\x00", 2));         // empty Features: every feature missing
  std::string garbage = good;
  garbage[3] = static_cast<char>(0xff);  // a corrupted length or tag
  check(garbage);
}

TEST(ExampleFastParse, UnsupportedSpecsAreDeclined) {
  std::mt19937_64 rng(5);
  std::vector<std::string> records = {serialize_example(example(rng))};
  Element out;
  std::vector<FeatureSpec> s = specs();
  s[1].dtype = DType::kI32;  // a converting dtype
  EXPECT_FALSE(parse_example_batch_fast(views(records), s, &out));
  s = specs();
  s.push_back(var_len_feature("ids2", FeatureKind::kInt64));
  EXPECT_FALSE(parse_example_batch_fast(views(records), s, &out));
}

}  // namespace
}  // namespace tern::data
