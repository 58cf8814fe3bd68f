// The one-line pipeline language: each stage becomes the source or TransformSpec it names,
// consecutive image stages run as one parallel map when built, the result equals a hand-written
// spec element for element, and mistakes name the stage and its position.
#include "tern/data/pipeline_line.h"

#include <gtest/gtest.h>

#include "tern/data/convert.h"
#include "tern/data/pipeline_bench.h"
#include "tern/data/test_util.h"
#include "tests/support/idx_writer.h"

namespace tern::data {
namespace {

using ::tern::testing::write_idx_u8;
using testing::TempDir;

// 12 images of 6x5, label i % 3.
void write_idx(const TempDir& dir) {
  std::vector<uint8_t> images, labels;
  for (int i = 0; i < 12; ++i) {
    labels.push_back(static_cast<uint8_t>(i % 3));
    for (int p = 0; p < 30; ++p) images.push_back(static_cast<uint8_t>(i * 20 + p * 3));
  }
  write_idx_u8(dir.file("images.idx"), {12, 6, 5}, images);
  write_idx_u8(dir.file("labels.idx"), {12}, labels);
}

std::vector<Element> all_elements(const PipelineSpec& spec, const std::vector<std::string>& inputs,
                                  uint64_t epoch = 0) {
  return build_input_pipeline(spec, inputs, PipelineMode::kTrain)->make_iterator(epoch).take();
}

void expect_same_elements(const std::vector<Element>& a, const std::vector<Element>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size()) << i;
    for (size_t k = 0; k < a[i].size(); ++k) EXPECT_TRUE(bitwise_equal(a[i][k], b[i][k])) << i;
  }
}

TEST(PipelineLine, StagesBecomeTransformsAndImageStagesOneMap) {
  TempDir dir;
  write_idx(dir);
  convert_image_dataset(
      dir.file("images.idx"), dir.file("folder"),
      {.labels = dir.file("labels.idx"), .height = 12, .width = 12, .channels = 3});
  PipelineLine p = parse_pipeline_line("images " + dir.file("folder") +
                                           " | shuffle 8 | decode | crop 8 8 | flip | normalize "
                                           "mean=0.5 std=0.25 | batch 5 | prefetch",
                                       {.map_threads = 2, .seed = 3});
  EXPECT_EQ(p.inputs, std::vector<std::string>{dir.file("folder")});
  EXPECT_EQ(p.spec.source.kind, SourceKind::kImageDir);
  EXPECT_FALSE(p.spec.source.decode);
  ASSERT_EQ(p.spec.transforms.size(), 7u);
  const TransformSpec& crop = p.spec.transforms[2];
  EXPECT_EQ(crop.kind, TransformKind::kMap);
  EXPECT_EQ(crop.fns[0].kind, ElementFnKind::kRandomCrop);
  EXPECT_EQ(crop.num_parallel_calls, 2);
  EXPECT_EQ(crop.seed, 3u + 2);
  EXPECT_EQ(crop.origin, "pipeline stage 4 'crop 8 8'");
  EXPECT_EQ(p.spec.transforms[1].fns[0].kind, ElementFnKind::kReadImage);
  EXPECT_EQ(p.spec.transforms[0].seed, 3u);  // shuffle: the options' seed
  EXPECT_EQ(describe_pipeline(p.spec, PipelineMode::kTrain),
            (std::vector<std::string>{"image_dir", "shuffle(8)",
                                      "map(read_image+random_crop+random_flip+normalize)",
                                      "batch(5)", "prefetch(autotune)"}));
  EXPECT_TRUE(yields_batches(p.spec, PipelineMode::kTrain));
  DatasetPtr ds = build_input_pipeline(p.spec, p.inputs, PipelineMode::kTrain);
  PipelineBenchResult r = bench_input_pipeline(ds, true, 2);
  EXPECT_EQ(r.rows, 24);
  EXPECT_EQ(r.batches, 6);
  EXPECT_NE(r.stats.find("ParallelMap"), std::string::npos) << r.stats;
  std::vector<Element> a = ds->make_iterator().take();
  EXPECT_EQ(element_signature(a[0]), "(f32[5, 8, 8, 3], i64[5])");
  // Out of the canonical order too: one map.
  PipelineLine q = parse_pipeline_line("idx " + dir.file("images.idx") + " | flip | crop 4 4");
  EXPECT_EQ(describe_pipeline(q.spec, PipelineMode::kTrain),
            (std::vector<std::string>{"idx", "map(random_flip+random_crop)"}));
  EXPECT_EQ(
      element_signature(
          *build_input_pipeline(q.spec, q.inputs, PipelineMode::kTrain)->make_iterator().next()),
      "(u8[4, 4, 1])");
  EXPECT_FALSE(yields_batches(q.spec, PipelineMode::kTrain));
}

TEST(PipelineLine, EqualsTheHandWrittenSpecElementForElement) {
  TempDir dir;
  write_idx(dir);
  const std::vector<std::string> files = {dir.file("images.idx"), dir.file("labels.idx")};
  PipelineLine p = parse_pipeline_line(
      "idx " + files[0] + " " + files[1] +
          " | shuffle 6 seed=9 | crop 4 4 | brightness 0.2 | normalize mean=0.5 std=0.25 | "
          "batch 4 drop_remainder | prefetch 2",
      {.map_threads = 3, .seed = 40});
  PipelineSpec spec;
  spec.source.kind = SourceKind::kIdx;
  spec.transforms.push_back(shuffle_transform(6, 9));
  ElementFnSpec crop{.kind = ElementFnKind::kRandomCrop, .height = 4, .width = 4};
  ElementFnSpec brightness{.kind = ElementFnKind::kRandomBrightness, .max_delta = 0.2f};
  ElementFnSpec normalize{.kind = ElementFnKind::kNormalize, .mean = {0.5f}, .stddev = {0.25f}};
  for (const ElementFnSpec& f : {crop, brightness, normalize}) {
    spec.transforms.push_back(map_transform(f, 3));
    spec.transforms.back().seed = 40 + spec.transforms.size() - 1;
  }
  spec.transforms.push_back(batch_transform(4, true));
  spec.transforms.push_back(prefetch_transform(2));
  ASSERT_EQ(p.spec.transforms.size(), spec.transforms.size());
  for (size_t i = 0; i < spec.transforms.size(); ++i) {
    TransformSpec t = p.spec.transforms[i];
    t.origin = spec.transforms[i].origin;
    EXPECT_EQ(t, spec.transforms[i]) << i << ": " << p.spec.transforms[i].origin;
  }
  expect_same_elements(all_elements(p.spec, p.inputs, 1), all_elements(spec, files, 1));
  // Random draws depend on the seed, not on the thread count.
  for (auto& t : spec.transforms) t.num_parallel_calls = 0;
  expect_same_elements(all_elements(p.spec, p.inputs, 1), all_elements(spec, files, 1));
  p.spec.transforms[2].seed += 1;  // brightness
  EXPECT_FALSE(
      bitwise_equal(all_elements(p.spec, p.inputs, 1)[0][0], all_elements(spec, files, 1)[0][0]));
}

TEST(PipelineLine, TFRecordParseExampleInfersTheFeatures) {
  TempDir dir;
  write_idx(dir);
  convert_image_dataset(dir.file("images.idx"), dir.file("i.tfrecord"),
                        {.labels = dir.file("labels.idx"), .compression = "gzip"});
  PipelineLine p = parse_pipeline_line(
      "tfrecord " + dir.file("i.tfrecord") +
      " compression=gzip | parse_example image/encoded image/class/label | decode | batch 4");
  ASSERT_EQ(p.spec.source.features.size(), 2u);
  EXPECT_EQ(p.spec.source.features[0].name, "image/encoded");
  EXPECT_EQ(p.spec.transforms[1].fns[0].kind, ElementFnKind::kDecodeImage);
  std::vector<Element> b = all_elements(p.spec, p.inputs);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(element_signature(b[0]), "(u8[4, 6, 5, 1], i64[4])");
}

TEST(PipelineLine, MistakesNameTheStageAndItsPosition) {
  TempDir dir;
  write_idx(dir);
  const std::string idx = "idx " + dir.file("images.idx");
  EXPECT_TERN_ERROR(parse_pipeline_line(idx + " | zoom 2"), ErrorCode::kInvalidArgument,
                    "pipeline stage 2 'zoom 2': unknown stage 'zoom' (stages: parse_example");
  EXPECT_TERN_ERROR(parse_pipeline_line(idx + " | batch 4 | crop 4"), ErrorCode::kInvalidArgument,
                    "pipeline stage 3 'crop 4': expected 2 arguments, got 1");
  EXPECT_TERN_ERROR(parse_pipeline_line(idx + " | batch x"), ErrorCode::kInvalidArgument,
                    "pipeline stage 2 'batch x': 'x' is not an integer");
  EXPECT_TERN_ERROR(parse_pipeline_line(idx + " | shuffle 4 sed=1"), ErrorCode::kInvalidArgument,
                    "pipeline stage 2 'shuffle 4 sed=1': unknown option 'sed' (options: seed)");
  EXPECT_TERN_ERROR(parse_pipeline_line("batch 4"), ErrorCode::kInvalidArgument,
                    "pipeline stage 1 'batch 4': the first stage must be a source");
  EXPECT_TERN_ERROR(parse_pipeline_line(idx + " | | batch 4"), ErrorCode::kInvalidArgument,
                    "pipeline stage 2 is empty");
  EXPECT_TERN_ERROR(parse_pipeline_line(idx + " | decode"), ErrorCode::kInvalidArgument,
                    "already hold decoded images");
  EXPECT_TERN_ERROR(parse_pipeline_line("images " + dir.path() + " | crop 4 4"),
                    ErrorCode::kInvalidArgument,
                    "pipeline stage 2 'crop 4 4': the elements hold "
                    "file paths or encoded images; add 'decode' first");
  EXPECT_TERN_ERROR(parse_pipeline_line(idx + " | crop 0 4"), ErrorCode::kInvalidArgument,
                    "pipeline stage 2 'crop 0 4': random_crop needs a positive height");
  EXPECT_TERN_ERROR(parse_pipeline_line(idx + " | idx x"), ErrorCode::kInvalidArgument,
                    "a second source");
  // Build errors name the stage too.
  PipelineLine p = parse_pipeline_line(idx + " | crop 9 9");
  Iterator it = build_input_pipeline(p.spec, p.inputs, PipelineMode::kTrain)->make_iterator();
  EXPECT_TERN_ERROR(it.next(), ErrorCode::kInvalidArgument,
                    "pipeline stage 2 'crop 9 9': random_crop");
}

}  // namespace
}  // namespace tern::data
