// Tests for the fast Example batch parser: on canonical records it equals the general parser
// bitwise; every non-canonical form (missing features, unknown features, unpacked lists,
// repeated keys, wrong lengths, malformed bytes) is declined, and parse_example_batch then gives
// the general parser's result or its exact error.
#include "tern/data/example_fast_parse.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tern/data/example_proto.h"

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
