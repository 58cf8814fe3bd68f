// Tests for zip, concatenate, unbatch, shard, interleave, cache, padded_batch and list_files,
// including exact resume through each.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "tern/data/test_util.h"

namespace tern::data {
namespace {

using testing::iota;
using testing::scalars;
using testing::values_of;

std::vector<int64_t> resume_tail(const DatasetPtr& ds, int64_t cut) {
  Iterator it = ds->make_iterator();
  it.take(cut);
  Iterator resumed = ds->make_iterator();
  resumed.restore_state(it.save_state());
  return scalars(resumed.take());
}

void check_resume(const DatasetPtr& ds) {
  std::vector<int64_t> full = values_of(ds);
  for (int64_t cut = 0; cut <= static_cast<int64_t>(full.size()); ++cut) {
    EXPECT_EQ(resume_tail(ds, cut), std::vector<int64_t>(full.begin() + cut, full.end())) << cut;
  }
}

TEST(Zip, TuplesAndEndsWithTheShortest) {
  DatasetPtr ds = zip({range(5), range(10, 13)});
  EXPECT_EQ(ds->cardinality(), 3);
  std::vector<Element> all = ds->make_iterator().take();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(scalars(all, 0), iota(0, 3));
  EXPECT_EQ(scalars(all, 1), iota(10, 13));
  EXPECT_EQ(zip({range(3)->repeat(), range(4)})->cardinality(), 4);
  check_resume(zip({range(5)->shuffle(5, 1), range(4)}));
  Iterator it = ds->make_iterator();
  it.take();
  EXPECT_EQ(it.stats()[1].stage, "Zip[0]/Range");
}

TEST(Concatenate, BackToBackWithDtypeCheck) {
  DatasetPtr ds = range(3)->concatenate(range(10, 12));
  EXPECT_EQ(values_of(ds), (std::vector<int64_t>{0, 1, 2, 10, 11}));
  EXPECT_EQ(ds->cardinality(), 5);
  check_resume(ds);
  DatasetPtr bad = range(2)->concatenate(from_tensors({Tensor::scalar(DType::kF32, 1)}));
  Iterator it = bad->make_iterator();
  it.take(2);
  EXPECT_TERN_ERROR(it.next(), ErrorCode::kInvalidArgument, "(f32) but the first yields (i64)");
}

TEST(Unbatch, InvertsBatch) {
  EXPECT_EQ(values_of(range(10)->batch(3)->unbatch()), iota(0, 10));
  check_resume(range(10)->batch(4)->unbatch());
  EXPECT_TERN_ERROR(range(3)->unbatch()->make_iterator().next(), ErrorCode::kInvalidArgument,
                    "no leading dimension");
}

TEST(Shard, CoversTheInputOnce) {
  std::vector<int64_t> all;
  for (int64_t i = 0; i < 3; ++i) {
    DatasetPtr s = range(11)->shard(3, i);
    std::vector<int64_t> part = values_of(s);
    EXPECT_EQ(static_cast<int64_t>(part.size()), s->cardinality());
    all.insert(all.end(), part.begin(), part.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, iota(0, 11));
  EXPECT_EQ(values_of(range(11)->shard(3, 1)), (std::vector<int64_t>{1, 4, 7, 10}));
  check_resume(range(11)->shard(3, 2));
  EXPECT_TERN_ERROR(range(3)->shard(2, 2), ErrorCode::kInvalidArgument, "index 2");
}

DatasetPtr tens(const Element& e) {
  const int64_t base = static_cast<int64_t>(e[0].get(0)) * 10;
  return range(base, base + 3 + static_cast<int64_t>(e[0].get(0)) % 2);
}

TEST(Interleave, CycleAndBlockOrder) {
  // Inputs 0..3 give 0,1,2 | 10,11,12,13 | 20,21,22 | 30,31,32,33. As in tf.data, an exhausted
  // slot moves the cycle on; it is refilled when the cycle comes back to it.
  EXPECT_EQ(values_of(range(4)->interleave(tens, {.cycle_length = 2, .block_length = 1})),
            (std::vector<int64_t>{0, 10, 1, 11, 2, 12, 13, 20, 21, 30, 22, 31, 32, 33}));
  EXPECT_EQ(values_of(range(4)->interleave(tens, {.cycle_length = 2, .block_length = 2})),
            (std::vector<int64_t>{0, 1, 10, 11, 2, 12, 13, 20, 21, 22, 30, 31, 32, 33}));
  EXPECT_EQ(values_of(range(2)->interleave(tens, {.cycle_length = 1})),
            (std::vector<int64_t>{0, 1, 2, 10, 11, 12, 13}));
  check_resume(range(5)->interleave(tens, {.cycle_length = 3, .block_length = 2}));
}

TEST(Cache, SecondPassReadsTheCopy) {
  std::atomic<int> calls{0};
  DatasetPtr ds = range(5)
                      ->map([&calls](Element e) {
                        ++calls;
                        return e;
                      })
                      ->cache();
  EXPECT_EQ(values_of(ds->repeat(3)),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4}));
  EXPECT_EQ(calls.load(), 5);
  EXPECT_EQ(values_of(ds), iota(0, 5));
  EXPECT_EQ(calls.load(), 5);
}

TEST(Cache, ResumesWhileFillingAndWhileReading) {
  auto make = [] { return range(6)->shuffle(6, 2)->cache()->repeat(2); };
  std::vector<int64_t> full = values_of(make());
  for (int64_t cut : {0, 3, 6, 8, 12}) {
    // A fresh dataset per side: the restored one starts with an empty cache, as in a new process.
    DatasetPtr saved_side = make(), restored_side = make();
    Iterator it = saved_side->make_iterator();
    it.take(cut);
    Iterator resumed = restored_side->make_iterator();
    resumed.restore_state(it.save_state());
    EXPECT_EQ(scalars(resumed.take()), std::vector<int64_t>(full.begin() + cut, full.end())) << cut;
  }
}

TEST(PaddedBatch, PadsToTheLargestOrAFixedShape) {
  std::vector<Element> rows;
  for (int n = 1; n <= 3; ++n) {
    Tensor t(DType::kI32, Shape{n});
    for (int i = 0; i < n; ++i) t.set(i, n * 10 + i);
    rows.push_back({t, Tensor::full(DType::kF32, Shape{n, 2}, n)});
  }
  std::vector<Element> batches = from_elements(rows)->padded_batch(2)->make_iterator().take();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0][0].shape(), Shape({2, 2}));
  EXPECT_EQ(batches[0][0].to_doubles(), (std::vector<double>{10, 0, 20, 21}));
  EXPECT_EQ(batches[0][1].shape(), Shape({2, 2, 2}));
  EXPECT_EQ(batches[0][1].to_doubles(), (std::vector<double>{1, 1, 0, 0, 2, 2, 2, 2}));
  EXPECT_EQ(batches[1][0].to_doubles(), (std::vector<double>{30, 31, 32}));
  PaddedBatchOptions fixed{.padded_shapes = {{5}, {-1, 3}}, .padding_values = {-1, 9}};
  Element b = from_elements(rows)->padded_batch(3, fixed)->make_iterator().next().value();
  EXPECT_EQ(b[0].shape(), Shape({3, 5}));
  EXPECT_EQ(b[0].to_doubles(),
            (std::vector<double>{10, -1, -1, -1, -1, 20, 21, -1, -1, -1, 30, 31, 32, -1, -1}));
  EXPECT_EQ(b[1].shape(), Shape({3, 3, 3}));
  EXPECT_EQ(b[1].get(0), 1);
  EXPECT_EQ(b[1].get(2), 9);
  PaddedBatchOptions too_small{.padded_shapes = {{2}, {-1, -1}}};
  EXPECT_TERN_ERROR(from_elements(rows)->padded_batch(3, too_small)->make_iterator().next(),
                    ErrorCode::kInvalidArgument, "larger than the padded dim 2");
}

TEST(ListFiles, SortedOrSeededShuffle) {
  testing::TempDir dir;
  for (const char* n : {"b.rec", "a.rec", "c.rec", "skip.txt"})
    testing::write_file(dir.file(n), "x");
  std::vector<std::string> names;
  for (const Element& e : list_files({dir.path() + "/*.rec"})->make_iterator().take()) {
    names.push_back(tensor_bytes(e[0]));
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{dir.file("a.rec"), dir.file("b.rec"), dir.file("c.rec")}));
  auto shuffled = [&](uint64_t seed, uint64_t epoch) {
    std::vector<std::string> out;
    for (const Element& e : list_files({dir.path() + "/*"}, seed)->make_iterator(epoch).take()) {
      out.push_back(tensor_bytes(e[0]));
    }
    return out;
  };
  EXPECT_EQ(shuffled(3, 0), shuffled(3, 0));
  EXPECT_EQ(shuffled(3, 0).size(), 4u);
  EXPECT_TERN_ERROR(list_files({dir.path() + "/*.none"}), ErrorCode::kNotFound, "*.none");
}

TEST(ListFiles, InterleavedTFRecordShards) {
  testing::TempDir dir;
  for (int f = 0; f < 3; ++f) {
    TFRecordWriter w(dir.file("shard-" + std::to_string(f)));
    for (int i = 0; i < 4; ++i) w.write(std::to_string(f * 100 + i));
  }
  DatasetPtr ds =
      list_files({dir.path() + "/shard-*"})
          ->interleave([](const Element& e) { return tfrecord_dataset({tensor_bytes(e[0])}); },
                       {.cycle_length = 3})
          ->map([](Element e) {
            return Element{Tensor::scalar(DType::kI64, std::stod(tensor_bytes(e[0])))};
          });
  EXPECT_EQ(values_of(ds),
            (std::vector<int64_t>{0, 100, 200, 1, 101, 201, 2, 102, 202, 3, 103, 203}));
  check_resume(ds);
}

}  // namespace
}  // namespace tern::data
