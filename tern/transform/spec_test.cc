// The [transform] spec: every op's keys and defaults, the rendering the artifact stores read back to
// the same spec, and errors naming file:line and the key (unknown keys with a did-you-mean, keys of
// another op, bad values, conflicts across features).
#include "tern/transform/spec.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tern/transform/test_util.h"

namespace tern::transform {
namespace {

constexpr const char* kSpec = R"([pipeline]
name = "autos"   # another table of a pipeline file: ignored

[transform]
label = "fuel"

[[transform.features]]
input = "price"
op = "z_score"

[[transform.features]]
name = "hp_0_1"
input = "hp"
op = "scale_to_0_1"
default = 100

[[transform.features]]
input = "make"
op = "vocabulary"
top_k = 10
frequency_threshold = 2
num_oov_buckets = 3
output = "index"

[[transform.features]]
input = "weight"
op = "bucketize"
num_buckets = 4

[[transform.features]]
input = "style"
op = "hash"
hash_buckets = 8

[[transform.features]]
inputs = ["make", "style"]
op = "cross"
hash_buckets = 16
)";

// The message of the SpecError parse_transform_spec throws for `text`.
std::string spec_error(const std::string& text) {
  try {
    parse_transform_spec(text, "t.toml");
  } catch (const SpecError& e) {
    return e.what();
  }
  return "no error";
}

// A one-feature spec with `body` as its entry.
std::string one(const std::string& body) {
  return "[transform]\n[[transform.features]]\n" + body;
}

TEST(TransformSpec, ReadsEveryOpWithDefaults) {
  TransformSpec s = parse_transform_spec(kSpec, "p.toml");
  EXPECT_EQ(s.label, "fuel");
  ASSERT_EQ(s.features.size(), 6u);
  const FeatureTransform& z = s.features[0];
  EXPECT_EQ(z.name, "price");
  EXPECT_EQ(z.op, TransformOp::kZScore);
  EXPECT_EQ(z.kind, RawKind::kNumeric);
  EXPECT_TRUE(z.default_is_mean);
  EXPECT_EQ(z.length, 1);
  EXPECT_EQ(z.line, 7);
  EXPECT_EQ(s.features[1].name, "hp_0_1");
  EXPECT_FALSE(s.features[1].default_is_mean);
  EXPECT_EQ(s.features[1].default_value, 100);
  const FeatureTransform& v = s.features[2];
  EXPECT_EQ(v.kind, RawKind::kCategorical);
  EXPECT_EQ(v.top_k, 10);
  EXPECT_EQ(v.frequency_threshold, 2);
  EXPECT_EQ(v.num_oov_buckets, 3);
  EXPECT_EQ(v.output, OutputForm::kIndex);
  EXPECT_EQ(s.features[3].num_buckets, 4);
  EXPECT_EQ(s.features[3].output, OutputForm::kOneHot);
  EXPECT_EQ(s.features[4].hash_buckets, 8);
  EXPECT_EQ(s.features[5].name, "make_x_style");
  EXPECT_EQ(s.features[5].inputs, (std::vector<std::string>{"make", "style"}));
  // Raw features in order of first use, each once.
  std::vector<std::string> raw;
  for (const auto& r : s.raw_features()) raw.push_back(r.name);
  EXPECT_EQ(raw, (std::vector<std::string>{"price", "hp", "make", "weight", "style"}));
  // Vocabulary defaults.
  TransformSpec d = parse_transform_spec(one("input = \"m\"\nop = \"vocabulary\"\n"), "d.toml");
  EXPECT_EQ(d.features[0].top_k, 0);
  EXPECT_EQ(d.features[0].frequency_threshold, 1);
  EXPECT_EQ(d.features[0].num_oov_buckets, 1);
}

TEST(TransformSpec, ImagesAndVectors) {
  TransformSpec s = parse_transform_spec(
      one("input = \"image/encoded\"\nop = \"scale_to_0_1\"\nshape = [28, 28, 1]\n"
          "[[transform.features]]\ninput = \"v\"\nop = \"z_score\"\nlength = 3\n"),
      "i.toml");
  EXPECT_EQ(s.features[0].kind, RawKind::kImage);
  EXPECT_EQ(s.features[0].shape, (std::vector<int64_t>{28, 28, 1}));
  EXPECT_EQ(s.features[1].kind, RawKind::kNumeric);
  EXPECT_EQ(s.features[1].length, 3);
}

TEST(TransformSpec, RenderingReadsBackToTheSameSpec) {
  TransformSpec s = parse_transform_spec(kSpec, "p.toml");
  EXPECT_EQ(s.toml.find("[pipeline]"), std::string::npos) << s.toml;
  TransformSpec again = parse_transform_spec(s.toml, "transform.toml");
  EXPECT_EQ(again.label, s.label);
  ASSERT_EQ(again.features.size(), s.features.size());
  for (size_t i = 0; i < s.features.size(); ++i) {
    FeatureTransform a = again.features[i], b = s.features[i];
    a.line = b.line = 0;  // the rendering lays the entries out anew
    EXPECT_EQ(a, b) << i;
  }
  EXPECT_EQ(again.toml, s.toml);
}

TEST(TransformSpec, ReadsTheFileAndNamesItInErrors) {
  testing::TempDir dir;
  std::ofstream(dir / "p.toml") << kSpec;
  EXPECT_EQ(read_transform_spec(dir / "p.toml").features.size(), 6u);
  std::ofstream(dir / "bad.toml") << one("input = \"x\"\nop = \"z_scor\"\n");
  try {
    read_transform_spec(dir / "bad.toml");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "bad.toml:4: key 'transform.features[0].op' is "
                                               "'z_scor'"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("did you mean 'z_score'"), std::string::npos);
  }
  EXPECT_THROW(read_transform_spec(dir / "missing.toml"), Error);
}

TEST(TransformSpec, ErrorsNameFileLineAndKey) {
  struct Case {
    std::string text, want;
  };
  const std::vector<Case> cases = {
      {"[model]\nx = 1\n", "t.toml: no [transform] table"},
      {"transform = 3\n", "t.toml:1: key 'transform' must be a table"},
      {"[transform]\nlabel = \"y\"\n", "needs [[transform.features]]"},
      {"[transform]\nlable = \"y\"\n[[transform.features]]\ninput = \"a\"\nop = \"identity\"\n",
       "t.toml:2: unknown key 'transform.lable' (did you mean 'transform.label'?)"},
      {one("input = \"a\"\nop = \"z_score\"\ntop_k = 3\n"),
       "t.toml:5: key 'transform.features[0].top_k' does not apply to op 'z_score'"},
      {one("input = \"a\"\nop = \"z_score\"\ndefalt = 3\n"),
       "t.toml:5: unknown key 'transform.features[0].defalt' (did you mean "
       "'transform.features[0].default'?)"},
      {one("input = \"a\"\n"), "t.toml:2: 'transform.features[0]': needs key 'op'"},
      {one("op = \"z_score\"\n"), "needs key 'input'"},
      {one("input = \"a\"\nop = \"vocabulary\"\ntop_k = -1\n"),
       "t.toml:5: key 'transform.features[0].top_k' must be >= 0, got -1"},
      {one("input = \"a\"\nop = \"vocabulary\"\noutput = \"onehot\"\n"),
       "key 'transform.features[0].output' is \"onehot\"; expected \"one_hot\" or \"index\""},
      {one("input = \"a\"\nop = \"bucketize\"\n"), "op 'bucketize' needs 'num_buckets'"},
      {one("input = \"a\"\nop = \"bucketize\"\nnum_buckets = 1\n"), "must be >= 2, got 1"},
      {one("input = \"a\"\nop = \"hash\"\n"), "op 'hash' needs 'hash_buckets'"},
      {one("inputs = [\"a\"]\nop = \"cross\"\nhash_buckets = 4\n"),
       "t.toml:3: key 'transform.features[0].inputs' must name two or more bytes features"},
      {one("input = \"a\"\nop = \"cross\"\nhash_buckets = 4\n"),
       "key 'transform.features[0].input' does not apply to op 'cross'"},
      {one("input = \"a\"\nop = \"z_score\"\ndefault = \"median\"\n"),
       "is \"median\"; expected \"mean\" or a number"},
      {one("input = \"a\"\nop = \"z_score\"\nshape = [28, 28]\n"),
       "must be [height, width, channels], got 2 dims"},
      {one("input = \"a\"\nop = \"z_score\"\nlength = 0\n"), "must be >= 1, got 0"},
      {one("input = \"a\"\nop = \"z_score\"\n[[transform.features]]\ninput = \"a\"\n"
           "op = \"identity\"\n"),
       "t.toml:5: 'transform.features[1]': output name 'a' is taken by the entry at line 2"},
      {one("input = \"a\"\nop = \"z_score\"\n[[transform.features]]\nname = \"b\"\n"
           "input = \"a\"\nop = \"hash\"\nhash_buckets = 3\n"),
       "feature 'a' is used as categorical here but as numeric"},
      {"[transform]\nlabel = \"a\"\n[[transform.features]]\ninput = \"a\"\nop = \"identity\"\n",
       "feature 'a' is the label"},
      {"[transform\n", "t.toml:1:"},
  };
  for (const Case& c : cases) {
    std::string err = spec_error(c.text);
    EXPECT_NE(err.find(c.want), std::string::npos) << "spec:\n" << c.text << "\nerror: " << err;
  }
}

}  // namespace
}  // namespace tern::transform
