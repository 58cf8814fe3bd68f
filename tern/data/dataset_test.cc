// Tests for the sources and the sequential transforms: values, order, cardinality, errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "tern/data/test_util.h"

namespace tern::data {
namespace {

using testing::iota;
using testing::scalars;
using testing::values_of;

TEST(Sources, Range) {
  EXPECT_EQ(values_of(range(5)), iota(0, 5));
  EXPECT_EQ(values_of(range(2, 11, 3)), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(values_of(range(5, 0, -2)), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(range(2, 11, 3)->cardinality(), 3);
  EXPECT_EQ(range(5, 0, -2)->cardinality(), 3);
  EXPECT_EQ(range(3, 3)->cardinality(), 0);
  EXPECT_EQ(range(INT64_MIN, INT64_MAX)->cardinality(), INT64_MAX);
  EXPECT_TERN_ERROR(range(0, 3, 0), ErrorCode::kInvalidArgument, "step");
}

TEST(Sources, TensorSlices) {
  Tensor x = Tensor::from_values(DType::kF32, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor y = Tensor::from_values(DType::kI32, {3}, {7, 8, 9});
  DatasetPtr ds = from_tensor_slices({x, y});
  EXPECT_EQ(ds->cardinality(), 3);
  std::vector<Element> all = ds->make_iterator().take();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1][0].shape(), Shape({2}));
  EXPECT_EQ(all[1][0].to_doubles(), (std::vector<double>{3, 4}));
  EXPECT_EQ(all[2][1].shape(), Shape{});
  EXPECT_EQ(all[2][1].get(0), 9);
  EXPECT_TERN_ERROR(from_tensor_slices({x, Tensor(DType::kF32, {4})}), ErrorCode::kInvalidArgument,
                    "leading dim");
  EXPECT_TERN_ERROR(from_tensor_slices({Tensor::scalar(DType::kF32, 1)}),
                    ErrorCode::kInvalidArgument, "no leading dimension");
}

TEST(Sources, TensorsYieldsOnce) {
  DatasetPtr ds = from_tensors({Tensor::scalar(DType::kI64, 4)});
  EXPECT_EQ(ds->cardinality(), 1);
  EXPECT_EQ(values_of(ds), (std::vector<int64_t>{4}));
}

TEST(Sources, GeneratorRestartsPerIterator) {
  DatasetPtr ds = from_generator([] {
    auto i = std::make_shared<int64_t>(0);
    return [i]() -> std::optional<Element> {
      if (*i >= 4) return std::nullopt;
      return Element{Tensor::scalar(DType::kI64, static_cast<double>((*i)++ * 10))};
    };
  });
  EXPECT_EQ(ds->cardinality(), kUnknownCardinality);
  EXPECT_EQ(values_of(ds), (std::vector<int64_t>{0, 10, 20, 30}));
  EXPECT_EQ(values_of(ds), (std::vector<int64_t>{0, 10, 20, 30}));
}

TEST(Transforms, MapFilter) {
  DatasetPtr ds =
      range(10)
          ->map([](Element e) {
            return Element{Tensor::scalar(DType::kI64, e[0].get(0) * e[0].get(0))};
          })
          ->filter([](const Element& e) { return static_cast<int64_t>(e[0].get(0)) % 2 == 0; });
  EXPECT_EQ(values_of(ds), (std::vector<int64_t>{0, 4, 16, 36, 64}));
  EXPECT_EQ(ds->cardinality(), kUnknownCardinality);
  EXPECT_EQ(range(10)->map([](Element e) { return e; })->cardinality(), 10);
}

TEST(Transforms, BatchStacksAndDropsRemainder) {
  Tensor x = Tensor::from_values(DType::kF32, {5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  std::vector<Element> batches = from_tensor_slices({x})->batch(2)->make_iterator().take();
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0][0].shape(), Shape({2, 2}));
  EXPECT_EQ(batches[1][0].to_doubles(), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(batches[2][0].shape(), Shape({1, 2}));
  EXPECT_EQ(from_tensor_slices({x})->batch(2, true)->make_iterator().take().size(), 2u);
  EXPECT_EQ(from_tensor_slices({x})->batch(2)->cardinality(), 3);
  EXPECT_EQ(from_tensor_slices({x})->batch(2, true)->cardinality(), 2);
  EXPECT_EQ(range(3)->batch(8)->make_iterator().take()[0][0].shape(), Shape({3}));
}

TEST(Transforms, BatchRejectsMismatchedShapes) {
  int n = 0;
  DatasetPtr ds = from_generator([&n] {
                    n = 0;
                    return [&n]() -> std::optional<Element> {
                      if (n >= 2) return std::nullopt;
                      return Element{Tensor(DType::kF32, Shape{++n})};
                    };
                  })->batch(2);
  Iterator it = ds->make_iterator();
  EXPECT_TERN_ERROR(it.next(), ErrorCode::kInvalidArgument, "f32[2]");
}

TEST(Transforms, RepeatTakeSkip) {
  EXPECT_EQ(values_of(range(3)->repeat(2)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(range(3)->repeat(2)->cardinality(), 6);
  EXPECT_EQ(range(3)->repeat()->cardinality(), kInfiniteCardinality);
  EXPECT_EQ(values_of(range(3)->repeat()->take(7)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(range(3)->repeat()->take(7)->cardinality(), 7);
  EXPECT_EQ(values_of(range(6)->skip(4)), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(range(6)->skip(4)->cardinality(), 2);
  EXPECT_EQ(values_of(range(6)->skip(10)), std::vector<int64_t>{});
  EXPECT_EQ(values_of(range(6)->take(-1)), iota(0, 6));
  EXPECT_EQ(values_of(range(6)->skip(-1)), std::vector<int64_t>{});
  EXPECT_EQ(values_of(range(0)->repeat()), std::vector<int64_t>{});  // terminates
  EXPECT_EQ(values_of(range(4)->filter([](const Element&) { return false; })->repeat()),
            std::vector<int64_t>{});
}

TEST(Transforms, ExhaustedIteratorStaysExhausted) {
  Iterator it = range(2)->repeat(2)->make_iterator();
  EXPECT_EQ(it.take().size(), 4u);
  EXPECT_FALSE(it.next().has_value());
  EXPECT_FALSE(it.next().has_value());
}

TEST(Shuffle, IsAPermutationAndSeeded) {
  DatasetPtr ds = range(100)->shuffle(16, 7);
  std::vector<int64_t> a = values_of(ds);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, iota(0, 100));
  EXPECT_NE(a, iota(0, 100));
  EXPECT_EQ(a, values_of(range(100)->shuffle(16, 7)));  // same seed, same order
  EXPECT_NE(a, values_of(range(100)->shuffle(16, 8)));
  // A buffer of 1 does not shuffle.
  EXPECT_EQ(values_of(range(10)->shuffle(1, 7)), iota(0, 10));
}

TEST(Shuffle, ReshufflesEachEpochOnlyWhenAsked) {
  std::vector<int64_t> two = values_of(range(50)->shuffle(50, 3)->repeat(2));
  std::vector<int64_t> e0(two.begin(), two.begin() + 50), e1(two.begin() + 50, two.end());
  EXPECT_NE(e0, e1);
  std::vector<int64_t> fixed = values_of(range(50)->shuffle(50, 3, false)->repeat(2));
  EXPECT_EQ(std::vector<int64_t>(fixed.begin(), fixed.begin() + 50),
            std::vector<int64_t>(fixed.begin() + 50, fixed.end()));
  // Iterators made per epoch: the epoch number picks the order.
  DatasetPtr ds = range(50)->shuffle(50, 3);
  EXPECT_NE(values_of(ds, 0), values_of(ds, 1));
  EXPECT_EQ(values_of(ds, 1), values_of(ds, 1));
}

TEST(Shuffle, RejectsBadBuffer) {
  EXPECT_TERN_ERROR(range(3)->shuffle(0, 1), ErrorCode::kInvalidArgument, "buffer_size");
}

TEST(Iterator, StatsNameEveryStage) {
  Iterator it = range(10)->map([](Element e) { return e; })->batch(4)->make_iterator();
  it.take();
  std::vector<StageStats> stats = it.stats();
  ASSERT_EQ(stats.size(), 3u);
  EXPECT_EQ(stats[0].stage, "Batch");
  EXPECT_EQ(stats[0].elements, 3);
  EXPECT_EQ(stats[1].stage, "Batch/Map");
  EXPECT_EQ(stats[1].elements, 10);
  EXPECT_EQ(stats[2].stage, "Batch/Map/Range");
  EXPECT_NE(it.stats_report().find("Batch/Map/Range"), std::string::npos);
}

}  // namespace
}  // namespace tern::data
