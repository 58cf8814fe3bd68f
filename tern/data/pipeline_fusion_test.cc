// How pipeline specs are built into stages: consecutive maps fused into one map stage (same draws
// as apart, same results on any thread count), describe_pipeline, and errors naming the transform
// whose function failed.
#include <gtest/gtest.h>

#include "tern/data/pipeline_spec.h"
#include "tern/data/test_util.h"
#include "tests/support/idx_writer.h"

namespace tern::data {
namespace {

using testing::TempDir;

TEST(PipelineFusion, ConsecutiveMapsRunAsOneStageWithTheSameDraws) {
  TempDir dir;
  std::vector<uint8_t> pixels(16 * 36);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7);
  std::vector<uint8_t> labels(16, 1);
  ::tern::testing::write_idx_u8(dir.file("i.idx"), {16, 6, 6}, pixels);
  ::tern::testing::write_idx_u8(dir.file("l.idx"), {16}, labels);
  const std::vector<std::string> files = {dir.file("i.idx"), dir.file("l.idx")};
  PipelineSpec fused;
  fused.source.kind = SourceKind::kIdx;
  ElementFnSpec crop{.kind = ElementFnKind::kRandomCrop, .height = 4, .width = 4};
  ElementFnSpec flip{.kind = ElementFnKind::kRandomFlip};
  ElementFnSpec scale{.kind = ElementFnKind::kScale};
  fused.transforms = {map_transform(crop, 0), map_transform(flip, 2), map_transform(scale, 0)};
  fused.transforms[0].seed = 4;
  fused.transforms[1].seed = 5;
  EXPECT_EQ(describe_pipeline(fused, PipelineMode::kTrain),
            (std::vector<std::string>{"idx", "map(random_crop+random_flip+scale)"}));
  EXPECT_EQ(describe_pipeline(fused, PipelineMode::kEval),
            (std::vector<std::string>{"idx", "map(random_crop+scale)"}));
  // A take between the maps keeps them apart; the draws stay the same.
  PipelineSpec apart = fused;
  TransformSpec take;
  take.kind = TransformKind::kTake;
  take.size = 100;
  apart.transforms.insert(apart.transforms.begin() + 1, take);
  EXPECT_EQ(
      describe_pipeline(apart, PipelineMode::kTrain),
      (std::vector<std::string>{"idx", "map(random_crop)", "take(100)", "map(random_flip+scale)"}));
  for (PipelineMode mode : {PipelineMode::kTrain, PipelineMode::kEval}) {
    std::vector<Element> a = build_input_pipeline(fused, files, mode)->make_iterator(3).take();
    std::vector<Element> b = build_input_pipeline(apart, files, mode)->make_iterator(3).take();
    ASSERT_EQ(a.size(), 16u);
    ASSERT_EQ(b.size(), 16u);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(element_signature(a[i]), "(f32[4, 4, 1], i64[])");
      EXPECT_TRUE(bitwise_equal(a[i][0], b[i][0])) << i;
    }
  }
  // The fused stage runs on the widest thread count of its maps.
  Iterator it = build_input_pipeline(fused, files, PipelineMode::kTrain)->make_iterator();
  it.take();
  EXPECT_NE(it.stats_report().find("ParallelMap"), std::string::npos) << it.stats_report();
  // An error names the transform whose function failed, not the first of the stage.
  fused.transforms[1].origin = "cfg.toml:9 (data.transforms[1])";
  fused.transforms[1].fns[0].component = 5;
  Iterator bad = build_input_pipeline(fused, files, PipelineMode::kTrain)->make_iterator();
  EXPECT_TERN_ERROR(bad.next(), ErrorCode::kInvalidArgument,
                    "cfg.toml:9 (data.transforms[1]): random_flip: component 5");
}

}  // namespace
}  // namespace tern::data
