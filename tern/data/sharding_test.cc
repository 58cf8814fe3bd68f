// Data-parallel input: element and file sharding cover the data exactly once across 1-4 workers,
// the policy falls back to elements with fewer files than workers, per-worker seeds and batches,
// uneven shards, and the worker's training form of a pipeline spec.
#include "tern/data/sharding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include "tern/data/image_codec.h"
#include "tern/data/test_util.h"

namespace tern::data {
namespace {

using testing::TempDir;

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Component `k` of every element of every worker's dataset, in order, one list per worker.
std::vector<std::vector<int64_t>> per_worker(int64_t n,
                                             const std::function<DatasetPtr(WorkerShard)>& make,
                                             size_t k = 0, uint64_t epoch = 0) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(testing::scalars(make({n, i})->make_iterator(epoch).take(), k));
  return out;
}

// The workers' values together, sorted (a multiset: a repeat would show).
std::vector<int64_t> joined(const std::vector<std::vector<int64_t>>& parts) {
  std::vector<int64_t> all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return sorted(all);
}

// `files` TFRecord files of `per_file` Examples {image: 4 bytes [2, 2, 1], label: i}, labels
// 0, 1, ... in file-name order.
std::vector<std::string> write_records(const TempDir& dir, int files, int per_file) {
  for (int f = 0; f < files; ++f) {
    TFRecordWriter w(dir.file("r" + std::to_string(f) + ".tfrecord"));
    for (int i = f * per_file; i < (f + 1) * per_file; ++i) {
      Example ex;
      ex.features["image"] = Feature::bytes({std::string(4, static_cast<char>(i))});
      ex.features["label"] = Feature::int64s({i});
      w.write(serialize_example(ex));
    }
    w.close();
  }
  return {dir.file("r*.tfrecord")};
}

// Shuffle, parse, a random flip, batch 12 (global).
PipelineSpec record_spec() {
  PipelineSpec spec;
  spec.source.kind = SourceKind::kTFRecord;
  spec.source.seed = 5;
  spec.source.parallel_reads = 2;
  spec.source.features = {fixed_len_feature("image", FeatureKind::kBytes, {2, 2, 1}),
                          fixed_len_feature("label", FeatureKind::kInt64)};
  spec.source.features[0].dtype = DType::kU8;
  ElementFnSpec flip;
  flip.kind = ElementFnKind::kRandomFlip;
  spec.transforms = {shuffle_transform(8, 3), parse_transform(0), map_transform(flip, 0),
                     batch_transform(12)};
  spec.transforms[2].seed = 9;
  return spec;
}

// The labels of a batched (image, label) pipeline.
std::vector<int64_t> batch_labels(const DatasetPtr& ds, uint64_t epoch) {
  std::vector<int64_t> out;
  Iterator it = ds->make_iterator(epoch);
  while (auto b = it.next()) {
    for (int64_t i = 0; i < (*b)[1].num_elements(); ++i)
      out.push_back(static_cast<int64_t>((*b)[1].get(i)));
  }
  return out;
}

TEST(WorkerShard, ElementShardingCoversEveryElementOnce) {
  for (int64_t elements : {0, 1, 7, 10, 12}) {
    for (int64_t n = 1; n <= 4; ++n) {
      auto parts = per_worker(
          n, [&](WorkerShard s) { return shard_elements(range(0, elements), s).dataset; });
      EXPECT_EQ(joined(parts), testing::iota(0, elements)) << elements << " over " << n;
      for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(static_cast<int64_t>(parts[static_cast<size_t>(i)].size()),
                  worker_elements(elements, {n, i}));
    }
  }
  EXPECT_EQ(shard_elements(range(0, 4), {}).policy, ShardPolicy::kNone);
  EXPECT_EQ(shard_elements(range(0, 4), {3, 1}).description, "worker 1/3 reads every 3rd element");
  EXPECT_TERN_ERROR(validate_worker_shard({2, 2}), ErrorCode::kInvalidArgument,
                    "index 2 is outside [0, 2)");
  EXPECT_TERN_ERROR(validate_worker_shard({0, 0}), ErrorCode::kInvalidArgument,
                    "num_workers must be >= 1");
}

TEST(WorkerShard, IdxRowsAreShardedBeforeAnythingElse) {
  TempDir dir;
  std::string images = {0, 0, 0x08, 3, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 1};
  std::string labels = {0, 0, 0x08, 1, 0, 0, 0, 7};
  for (char i = 0; i < 7; ++i) {
    images += static_cast<char>(10 + i);
    labels += i;
  }
  testing::write_file(dir.file("i.idx"), images);
  testing::write_file(dir.file("l.idx"), labels);
  SourceSpec idx;
  idx.kind = SourceKind::kIdx;
  const std::vector<std::string> inputs = {dir.file("i.idx"), dir.file("l.idx")};
  for (int64_t n = 1; n <= 4; ++n) {
    auto parts = per_worker(
        n, [&](WorkerShard s) { return build_sharded_source(idx, inputs, s).dataset; }, 1);
    EXPECT_EQ(joined(parts), testing::iota(0, 7));
    EXPECT_EQ(parts[0][0], 0);
    if (n > 1) {
      EXPECT_EQ(parts[1][0], 1);  // rows i % n == index
    }
    EXPECT_EQ(count_worker_elements(idx, inputs, {n, n - 1}), worker_elements(7, {n, n - 1}));
  }
  Element row = build_sharded_source(idx, inputs, {2, 1}).dataset->make_iterator().take()[1];
  EXPECT_EQ(row[0].get(0), 13);  // image row 3 with label 3
  EXPECT_EQ(row[1].get(0), 3);
  EXPECT_EQ(build_sharded_source(idx, inputs, {2, 1}).policy, ShardPolicy::kElement);
}

TEST(WorkerShard, PolicyFilesForRecordSourcesWithEnoughFiles) {
  EXPECT_EQ(choose_shard_policy(SourceKind::kTFRecord, 6, {1, 0}), ShardPolicy::kNone);
  EXPECT_EQ(choose_shard_policy(SourceKind::kTFRecord, 6, {2, 1}), ShardPolicy::kFile);
  EXPECT_EQ(choose_shard_policy(SourceKind::kCsv, 4, {4, 3}), ShardPolicy::kFile);
  EXPECT_EQ(choose_shard_policy(SourceKind::kTFRecord, 3, {4, 0}), ShardPolicy::kElement);
  EXPECT_EQ(choose_shard_policy(SourceKind::kImageDir, 100, {2, 0}), ShardPolicy::kElement);
  EXPECT_EQ(choose_shard_policy(SourceKind::kIdx, 2, {2, 0}), ShardPolicy::kElement);
  EXPECT_EQ(choose_shard_policy(SourceKind::kFiles, 9, {2, 0}), ShardPolicy::kElement);
}

TEST(WorkerShard, FileShardingReadsFilesRoundRobin) {
  TempDir dir;
  const std::vector<std::string> inputs = write_records(dir, 6, 5);
  SourceSpec source = record_spec().source;
  ShardedSource w1 = build_sharded_source(source, inputs, {2, 1});
  EXPECT_EQ(w1.policy, ShardPolicy::kFile);
  EXPECT_EQ(w1.files_total, 6);
  EXPECT_EQ(w1.files, (std::vector<std::string>{dir.file("r1.tfrecord"), dir.file("r3.tfrecord"),
                                                dir.file("r5.tfrecord")}));
  EXPECT_EQ(w1.description, "worker 1/2 reads 3 of 6 files");
  ShardedSource w3 = build_sharded_source(source, inputs, {4, 3});
  EXPECT_EQ(w3.files, std::vector<std::string>{dir.file("r3.tfrecord")});
  EXPECT_EQ(count_worker_elements(source, inputs, {4, 3}), 5);
  EXPECT_EQ(count_worker_elements(source, inputs, {4, 1}), 10);  // r1 and r5
  for (int64_t n = 1; n <= 4; ++n) {
    for (uint64_t epoch : {0, 1}) {
      std::vector<std::vector<int64_t>> labels;
      for (int64_t i = 0; i < n; ++i) {
        const PipelineSpec spec = worker_pipeline(record_spec(), {n, i});
        labels.push_back(
            batch_labels(apply_transforms(build_sharded_source(source, inputs, {n, i}).dataset,
                                          spec, PipelineMode::kTrain),
                         epoch));
      }
      EXPECT_EQ(joined(labels), testing::iota(0, 30)) << n << " workers, epoch " << epoch;
    }
  }
}

TEST(WorkerShard, FewerFilesThanWorkersShardsRecords) {
  TempDir dir;
  const std::vector<std::string> inputs = write_records(dir, 2, 9);
  SourceSpec source = record_spec().source;
  ShardedSource w = build_sharded_source(source, inputs, {4, 2});
  EXPECT_EQ(w.policy, ShardPolicy::kElement);
  EXPECT_EQ(w.description, "worker 2/4 reads every 4th element (2 files, fewer than 4 workers)");
  EXPECT_EQ(count_worker_elements(source, inputs, {4, 2}), 4);  // of 18: 5, 5, 4, 4
  for (int64_t n : {3, 4}) {
    // Each epoch reshuffles the file order with the one global seed, so the workers' strides
    // still partition that epoch's record order.
    for (uint64_t epoch : {0, 1, 2}) {
      std::vector<std::vector<int64_t>> labels;
      for (int64_t i = 0; i < n; ++i) {
        labels.push_back(batch_labels(
            apply_transforms(build_sharded_source(source, inputs, {n, i}).dataset,
                             worker_pipeline(record_spec(), {n, i}), PipelineMode::kTrain),
            epoch));
      }
      EXPECT_EQ(joined(labels), testing::iota(0, 18)) << n << " workers, epoch " << epoch;
    }
  }
}

TEST(WorkerShard, ImageDirShardsPathsAfterTheSplit) {
  TempDir dir;
  for (std::string cls : {"cat", "dog"}) {
    std::filesystem::create_directories(dir.file("root/" + cls));
    for (int i = 0; i < 6; ++i) {
      Tensor img(DType::kU8, Shape{2, 2, 1});
      for (int64_t k = 0; k < 4; ++k)
        img.data<uint8_t>()[k] = static_cast<uint8_t>((cls == "cat" ? 0 : 100) + i);
      write_file_bytes(dir.file("root/" + cls + "/" + std::to_string(i) + ".png"), encode_png(img));
    }
  }
  SourceSpec s;
  s.kind = SourceKind::kImageDir;
  s.image_height = s.image_width = 2;
  s.channels = 1;
  s.validation_split = 0.25;
  s.seed = 11;
  const std::vector<std::string> inputs = {dir.file("root")};
  auto pixels = [&](const DatasetPtr& ds, uint64_t epoch) {
    std::vector<int64_t> out;
    for (const Element& e : ds->make_iterator(epoch).take())
      out.push_back(static_cast<int64_t>(e[0].get(0)));
    return out;
  };
  const std::vector<int64_t> all = sorted(pixels(build_source(s, inputs, PipelineMode::kTrain), 0));
  ASSERT_EQ(all.size(), 9u);  // 12 files, 3 held out
  for (int64_t n = 1; n <= 4; ++n) {
    std::vector<std::vector<int64_t>> parts;
    for (int64_t i = 0; i < n; ++i) {
      ShardedSource part = build_sharded_source(s, inputs, {n, i});
      EXPECT_EQ(part.policy, n == 1 ? ShardPolicy::kNone : ShardPolicy::kElement);
      parts.push_back(pixels(part.dataset, 1));
    }
    EXPECT_EQ(joined(parts), all) << n << " workers";
  }
  // One worker keeps today's order.
  EXPECT_EQ(pixels(build_sharded_source(s, inputs, {}).dataset, 2),
            pixels(build_source(s, inputs, PipelineMode::kTrain), 2));
}

TEST(WorkerShard, WorkerSeedsDifferByRankAndKeepRankZero) {
  for (uint64_t seed : {0ULL, 1ULL, 42ULL, ~0ULL}) {
    EXPECT_EQ(worker_seed(seed, {}), seed);
    EXPECT_EQ(worker_seed(seed, {4, 0}), seed);
    std::set<uint64_t> seeds = {seed};
    for (int64_t r = 1; r < 8; ++r) seeds.insert(worker_seed(seed, {8, r}));
    EXPECT_EQ(seeds.size(), 8u);
    EXPECT_EQ(worker_seed(seed, {8, 3}), worker_seed(seed, {4, 3}));  // the rank decides
  }
  EXPECT_NE(worker_seed(1, {2, 1}), worker_seed(2, {2, 1}));
}

TEST(WorkerShard, WorkerPipelineDividesTheBatchAndMixesSeeds) {
  PipelineSpec spec = record_spec();
  TransformSpec eval_batch = batch_transform(6);
  eval_batch.apply_to = ApplyTo::kEval;
  spec.transforms.push_back(eval_batch);
  EXPECT_EQ(worker_pipeline(spec, {}).transforms, spec.transforms);  // one worker: unchanged
  const PipelineSpec w1 = worker_pipeline(spec, {2, 1});
  EXPECT_EQ(w1.transforms[0].seed, worker_seed(3, {2, 1}));  // shuffle
  EXPECT_NE(w1.transforms[0].seed, 3u);
  EXPECT_EQ(w1.transforms[2].seed, worker_seed(9, {2, 1}));  // random map
  EXPECT_EQ(w1.transforms[3].size, 6);                       // global 12 / 2 workers
  EXPECT_EQ(w1.transforms[4].size, 6);                       // evaluation only: untouched
  EXPECT_EQ(worker_pipeline(spec, {2, 0}).transforms[0].seed, 3u);

  spec.transforms[3].origin = "cfg.toml:12 (data.transforms[3])";
  EXPECT_TERN_ERROR(
      worker_pipeline(spec, {5, 0}), ErrorCode::kInvalidArgument,
      "cfg.toml:12 (data.transforms[3]): batch size 12 is not divisible by 5 workers");
}

TEST(WorkerShard, LocalBatchIsTheGlobalBatchOverTheWorkers) {
  EXPECT_EQ(local_batch_size(128, {}, "training.batch_size"), 128);
  EXPECT_EQ(local_batch_size(128, {4, 1}, "training.batch_size"), 32);
  EXPECT_EQ(local_batch_size(3, {3, 2}, "training.batch_size"), 1);
  EXPECT_TERN_ERROR(local_batch_size(100, {3, 0}, "training.batch_size"),
                    ErrorCode::kInvalidArgument, "training.batch_size 100 is not divisible by 3");
  EXPECT_TERN_ERROR(local_batch_size(2, {4, 0}, "training.batch_size"), ErrorCode::kInvalidArgument,
                    "2 is not divisible by 4 workers");
}

TEST(WorkerShard, WorkerBatchesReportUnevenShards) {
  std::vector<int64_t> batches;
  for (int64_t r = 0; r < 4; ++r) batches.push_back(worker_batches(10, {4, r}, 1, false));
  EXPECT_EQ(batches, (std::vector<int64_t>{3, 3, 2, 2}));
  batches.clear();
  for (int64_t r = 0; r < 4; ++r) batches.push_back(worker_batches(10, {4, r}, 2, false));
  EXPECT_EQ(batches, (std::vector<int64_t>{2, 2, 1, 1}));
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_EQ(worker_batches(10, {4, r}, 2, true), 1);  // 3, 3, 2, 2 elements: one full batch
    EXPECT_EQ(worker_batches(16, {4, r}, 2, false), 2);
  }
  EXPECT_EQ(worker_batches(0, {2, 1}, 4, false), 0);
  EXPECT_EQ(worker_batches(60000, {}, 128, false), 469);
  // Bad-input report F13: n + batch - 1 overflowed for batch_size = 2^63-1 (UBSan).
  EXPECT_EQ(worker_batches(60000, {}, std::numeric_limits<int64_t>::max(), false), 1);
}

TEST(WorkerShard, WorkerRowsOfATensor) {
  Tensor t = Tensor::from_vector<int64_t>(Shape{5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor w1 = worker_rows(t, {2, 1});
  ASSERT_EQ(w1.shape(), (Shape{2, 2}));
  EXPECT_EQ(w1.get(0), 2);
  EXPECT_EQ(w1.get(3), 7);
  EXPECT_EQ(worker_rows(t, {3, 2}).shape(), (Shape{1, 2}));
  EXPECT_EQ(worker_rows(t, {8, 6}).shape(), (Shape{0, 2}));
  EXPECT_EQ(worker_rows(t, {}).raw_data(), t.raw_data());  // one worker: the tensor itself
}

}  // namespace
}  // namespace tern::data
