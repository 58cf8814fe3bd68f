// Tests for parsing tf.train.Example / SequenceExample records into tensors: FixedLen shapes and
// defaults, VarLen dense/padded/ragged, bytes and raw bytes, batches, errors naming the record and
// feature, and parse_example over a TFRecord file with 1 and 4 map threads.
#include "tern/data/example_parser.h"

#include <gtest/gtest.h>

#include "tern/data/example_dataset.h"
#include "tern/data/test_util.h"

namespace tern::data {
namespace {

using testing::TempDir;

std::string record(int64_t i) {
  Example ex;
  std::vector<float> image;
  for (int k = 0; k < 6; ++k) image.push_back(static_cast<float>(i * 10 + k));
  ex.features["image"] = Feature::floats(image);
  ex.features["label"] = Feature::int64s({i % 3});
  std::vector<int64_t> tokens;
  for (int64_t k = 0; k < i % 4; ++k) tokens.push_back(100 + k);
  ex.features["tokens"] = Feature::int64s(tokens);
  ex.features["name"] = Feature::bytes({"n" + std::to_string(i)});
  return serialize_example(ex);
}

std::vector<double> values(const Tensor& t) {
  return t.to_doubles();
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ExampleParser, FixedLenShapesDtypesAndDefaults) {
  std::vector<FeatureSpec> specs = {
      fixed_len_feature("image", FeatureKind::kFloat, {2, 3}),
      fixed_len_feature("label", FeatureKind::kInt64),
      fixed_len_feature("weight", FeatureKind::kFloat, {}, {0.5}),
      fixed_len_feature("pair", FeatureKind::kInt64, {2}, {7, 8}),
  };
  specs[1].dtype = DType::kU8;
  Element e = parse_example_record(record(2), specs, 2);
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].type().to_string(), "f32[2, 3]");
  EXPECT_EQ(values(e[0]), (std::vector<double>{20, 21, 22, 23, 24, 25}));
  EXPECT_EQ(e[1].type().to_string(), "u8[]");
  EXPECT_EQ(e[1].get(0), 2);
  EXPECT_EQ(e[2].get(0), 0.5);
  EXPECT_EQ(values(e[3]), (std::vector<double>{7, 8}));
  EXPECT_EQ(feature_output_names(specs),
            (std::vector<std::string>{"image", "label", "weight", "pair"}));
}

TEST(ExampleParser, VarLenDensePaddedAndRagged) {
  FeatureSpec dense = var_len_feature("tokens", FeatureKind::kInt64);
  FeatureSpec padded = dense;
  padded.pad_to = 5;
  padded.padding_value = -1;
  FeatureSpec ragged = var_len_feature("tokens", FeatureKind::kInt64, true);
  ragged.dtype = DType::kI32;
  EXPECT_EQ(values(parse_example_record(record(3), {dense})[0]),
            (std::vector<double>{100, 101, 102}));
  EXPECT_EQ(parse_example_record(record(0), {dense})[0].type().to_string(), "i64[0]");
  EXPECT_EQ(values(parse_example_record(record(2), {padded})[0]),
            (std::vector<double>{100, 101, -1, -1, -1}));
  Element r = parse_example_record(record(3), {ragged});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].type().to_string(), "i32[3]");
  EXPECT_EQ(r[1].type().to_string(), "i64[]");
  EXPECT_EQ(r[1].get(0), 3);
  // A missing VarLen feature is empty.
  EXPECT_EQ(parse_example_record("", {dense})[0].num_elements(), 0);
  EXPECT_EQ(feature_output_names({ragged}),
            (std::vector<std::string>{"tokens.values", "tokens.row_lengths"}));
}

TEST(ExampleParser, BytesAndRawBytes) {
  Example ex;
  ex.features["raw"] = Feature::bytes({std::string("\x01\x00\x02\x00\x03\x00", 6)});
  ex.features["words"] = Feature::bytes({"ab", "", "cde"});
  ex.features["img"] = Feature::bytes({std::string("\x05\x06\x07\x08", 4)});
  const std::string bytes = serialize_example(ex);
  FeatureSpec raw = fixed_len_feature("raw", FeatureKind::kBytes, {3});
  raw.dtype = DType::kI32;
  EXPECT_NE(error_of([&] { parse_example_record(bytes, {raw}, 4); }).find("6 for i32[3] (12 bytes"),
            std::string::npos);
  raw.shape = {3};
  raw.dtype = DType::kU8;
  EXPECT_NE(error_of([&] { parse_example_record(bytes, {raw}); }).find("raw bytes of length 6"),
            std::string::npos);
  FeatureSpec img = fixed_len_feature("img", FeatureKind::kBytes, {2, 2});
  EXPECT_EQ(values(parse_example_record(bytes, {img})[0]), (std::vector<double>{5, 6, 7, 8}));
  Element one = parse_example_record(bytes, {fixed_len_feature("img", FeatureKind::kBytes)});
  EXPECT_EQ(tensor_bytes(one[0]), "\x05\x06\x07\x08");
  Element words = parse_example_record(bytes, {var_len_feature("words", FeatureKind::kBytes)});
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(tensor_bytes(words[0]), "abcde");
  EXPECT_EQ(values(words[1]), (std::vector<double>{2, 0, 3}));
}

TEST(ExampleParser, ErrorsNameRecordAndFeature) {
  auto spec = [](FeatureSpec s) { return std::vector<FeatureSpec>{s}; };
  std::string msg = error_of([&] {
    parse_example_record(record(1), spec(fixed_len_feature("missing", FeatureKind::kFloat)), 17);
  });
  EXPECT_NE(msg.find("tf.train.Example record 17, feature 'missing': required feature is missing"),
            std::string::npos)
      << msg;
  msg = error_of([&] {
    parse_example_record(record(1), spec(fixed_len_feature("label", FeatureKind::kFloat)), 5);
  });
  EXPECT_NE(msg.find("record 5, feature 'label': expected float_list, got int64_list"),
            std::string::npos)
      << msg;
  msg = error_of([&] {
    parse_example_record(record(1), spec(fixed_len_feature("image", FeatureKind::kFloat, {5})));
  });
  EXPECT_NE(msg.find("expected 5 values for shape [5], got 6"), std::string::npos) << msg;
  FeatureSpec narrow = fixed_len_feature("image", FeatureKind::kFloat, {6});
  narrow.dtype = DType::kI32;
  msg = error_of([&] { parse_example_record(record(1), {narrow}); });
  EXPECT_NE(msg.find("float_list values cannot become i32"), std::string::npos) << msg;
  // Bad-input report F13: bytes reinterpreted as bool loaded bytes other than 0 and 1 as bool.
  FeatureSpec as_bool = fixed_len_feature("image", FeatureKind::kBytes, {6});
  as_bool.dtype = DType::kBool;
  msg = error_of([&] { parse_example_record(record(1), {as_bool}); });
  EXPECT_NE(msg.find("bytes_list values cannot become bool"), std::string::npos) << msg;
  Example big;
  big.features["v"] = Feature::int64s({1, 256});
  FeatureSpec u8 = var_len_feature("v", FeatureKind::kInt64);
  u8.dtype = DType::kU8;
  msg = error_of([&] { parse_example_record(serialize_example(big), {u8}, 9); });
  EXPECT_NE(msg.find("record 9, feature 'v': value 256 (index 1) does not fit in u8"),
            std::string::npos)
      << msg;
  FeatureSpec padded = var_len_feature("tokens", FeatureKind::kInt64);
  padded.pad_to = 2;
  msg = error_of([&] { parse_example_record(record(3), {padded}); });
  EXPECT_NE(msg.find("3 values exceed pad_to 2"), std::string::npos) << msg;
  msg = error_of([&] {
    parse_example_record(record(1), {fixed_len_feature("a", FeatureKind::kInt64),
                                     fixed_len_feature("a", FeatureKind::kInt64)});
  });
  EXPECT_NE(msg.find("feature 'a' is listed twice"), std::string::npos) << msg;
  try {
    parse_example_record(record(1).substr(0, 20),
                         spec(fixed_len_feature("label", FeatureKind::kInt64)), 8);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_NE(std::string(e.what()).find("record 8"), std::string::npos) << e.what();
  }
}

TEST(ExampleParser, BatchParsing) {
  std::vector<std::string> recs = {record(1), record(2), record(3)};
  std::vector<std::string_view> views(recs.begin(), recs.end());
  FeatureSpec ragged = var_len_feature("tokens", FeatureKind::kInt64, true);
  Element b = parse_example_batch(views, {fixed_len_feature("label", FeatureKind::kInt64),
                                          var_len_feature("tokens", FeatureKind::kInt64),
                                          fixed_len_feature("name", FeatureKind::kBytes)});
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(values(b[0]), (std::vector<double>{1, 2, 0}));
  EXPECT_EQ(b[1].type().to_string(), "i64[3, 3]");
  EXPECT_EQ(values(b[1]), (std::vector<double>{100, 0, 0, 100, 101, 0, 100, 101, 102}));
  EXPECT_EQ(b[2].type().to_string(), "u8[3, 2]");
  Element r = parse_example_batch(views, {ragged});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(values(r[0]), (std::vector<double>{100, 100, 101, 100, 101, 102}));
  EXPECT_EQ(values(r[1]), (std::vector<double>{1, 2, 3}));
  recs.push_back(record(10));  // name "n10" is longer
  views.assign(recs.begin(), recs.end());
  std::string msg = error_of(
      [&] { parse_example_batch(views, {fixed_len_feature("name", FeatureKind::kBytes)}, 40); });
  EXPECT_NE(msg.find("record 43, feature 'name'"), std::string::npos) << msg;
}

TEST(ExampleParser, SequenceExample) {
  SequenceExample ex;
  ex.context["id"] = Feature::int64s({7});
  ex.feature_lists["frames"] = {Feature::floats({1, 2}), Feature::floats({3, 4}),
                                Feature::floats({5, 6})};
  ex.feature_lists["tokens"] = {Feature::int64s({1, 2}), Feature::int64s({}), Feature::int64s({3})};
  SequenceExampleSpec spec;
  spec.context = {fixed_len_feature("id", FeatureKind::kInt64)};
  spec.sequence = {
      {.name = "frames", .shape = {2}},
      {.name = "tokens", .kind = FeatureKind::kInt64, .dtype = DType::kI64, .var_len = true},
      {.name = "absent", .allow_missing = true}};
  Element e = parse_sequence_example_record(serialize_sequence_example(ex), spec, 0);
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0].get(0), 7);
  EXPECT_EQ(e[1].type().to_string(), "f32[3, 2]");
  EXPECT_EQ(values(e[1]), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values(e[2]), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(values(e[3]), (std::vector<double>{2, 0, 1}));
  EXPECT_EQ(e[4].type().to_string(), "f32[0]");
  EXPECT_EQ(
      sequence_output_names(spec),
      (std::vector<std::string>{"id", "frames", "tokens.values", "tokens.row_lengths", "absent"}));
  spec.sequence[2].allow_missing = false;
  EXPECT_NE(error_of([&] {
              parse_sequence_example_record(serialize_sequence_example(ex), spec, 4);
            }).find("record 4, feature_list 'absent': required feature_list is missing"),
            std::string::npos);
  spec.sequence[2].allow_missing = true;
  ex.feature_lists["frames"][1] = Feature::floats({3});
  EXPECT_NE(error_of([&] {
              parse_sequence_example_record(serialize_sequence_example(ex), spec, 4);
            }).find("feature_list 'frames' step 1: expected 2 values"),
            std::string::npos);
}

// TFRecord file -> parse_example -> batch, the same with 1 and 4 map threads; errors name the
// record's index.
TEST(ExampleDataset, ParsesTFRecordFilesDeterministically) {
  TempDir dir;
  const std::string path = dir.file("train.tfrecord");
  {
    TFRecordWriter w(path, Compression::kGzip);
    for (int64_t i = 0; i < 50; ++i) w.write(record(i));
    w.write("\x0a\x05\x0a\x03");  // record 50: truncated Features
    w.close();
  }
  std::vector<FeatureSpec> specs = {fixed_len_feature("image", FeatureKind::kFloat, {2, 3}),
                                    fixed_len_feature("label", FeatureKind::kInt64)};
  auto run = [&](int64_t threads) {
    DatasetPtr ds = parse_example(tfrecord_dataset({path}, {.compression = Compression::kGzip}),
                                  specs, {.num_parallel_calls = threads})
                        ->take(50)
                        ->batch(8);
    return ds->make_iterator().take();
  };
  std::vector<Element> one = run(0), four = run(4);
  ASSERT_EQ(one.size(), 7u);
  ASSERT_EQ(four.size(), 7u);
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(one[i][0], four[i][0]));
    EXPECT_TRUE(bitwise_equal(one[i][1], four[i][1]));
  }
  EXPECT_EQ(one[0][0].type().to_string(), "f32[8, 2, 3]");
  EXPECT_EQ(one[6][1].type().to_string(), "i64[2]");
  EXPECT_EQ(one[1][0].get(0), 80);  // record 8, first value
  Iterator it = parse_example(tfrecord_dataset({path}, {.compression = Compression::kGzip}), specs)
                    ->skip(50)
                    ->make_iterator();
  std::string msg = error_of([&] { it.next(); });
  EXPECT_NE(msg.find("tf.train.Example at " + path + " record 50"), std::string::npos) << msg;
}

TEST(ExampleDataset, BatchedParsingAndStateRestore) {
  std::vector<Element> recs;
  for (int64_t i = 0; i < 10; ++i) recs.push_back({bytes_tensor(record(i))});
  FeatureSpec ragged = var_len_feature("tokens", FeatureKind::kInt64, true);
  DatasetPtr ds = parse_example_batched(from_elements(recs), 4,
                                        {fixed_len_feature("label", FeatureKind::kInt64), ragged});
  std::vector<Element> all = ds->make_iterator().take();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(values(all[0][0]), (std::vector<double>{0, 1, 2, 0}));
  EXPECT_EQ(values(all[0][2]), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(values(all[2][2]), (std::vector<double>{0, 1}));
  Iterator it = ds->make_iterator();
  it.next();
  std::string state = it.save_state();
  Iterator resumed = ds->make_iterator();
  resumed.restore_state(state);
  std::optional<Element> second = resumed.next();
  ASSERT_TRUE(second);
  EXPECT_TRUE(bitwise_equal((*second)[1], all[1][1]));
}

}  // namespace
}  // namespace tern::data
