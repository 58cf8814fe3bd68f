// make_training_data for a worker of a data-parallel run: the workers' training elements together
// are the single worker's (in-memory IDX tensors, an IDX pipeline with a validation split, a
// TFRecord pipeline over several files), each batching its share of training.batch_size;
// evaluation data stays whole; a batch the workers do not divide is an error naming the key.
#include "tern/config/training_data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "tern/data/example_proto.h"
#include "tern/data/iterator.h"
#include "tern/data/tfrecord_writer.h"
#include "tests/support/idx_writer.h"
#include "tests/support/random_tensor.h"

namespace tern::config {
namespace {

// One row of a batch: its first input value (unique per sample, as a u8 pixel) and its label.
using Row = std::pair<int64_t, int64_t>;

struct Epoch {
  std::vector<Row> rows;  // sorted
  int64_t batches = 0;
  int64_t largest_batch = 0;
};

Epoch read_epoch(const data::DatasetPtr& ds, uint64_t epoch = 0) {
  Epoch out;
  data::Iterator it = ds->make_iterator(epoch);
  while (auto b = it.next()) {
    const int64_t n = data::leading_dim(*b, "batch");
    const int64_t per_row = (*b)[0].num_elements() / n;
    for (int64_t r = 0; r < n; ++r) {
      const double x = (*b)[0].get(r * per_row);
      out.rows.emplace_back(std::lround(x * 255), static_cast<int64_t>((*b)[1].get(r)));
    }
    ++out.batches;
    out.largest_batch = std::max(out.largest_batch, n);
  }
  std::sort(out.rows.begin(), out.rows.end());
  return out;
}

std::vector<Row> joined(const std::vector<Epoch>& workers) {
  std::vector<Row> all;
  for (const Epoch& e : workers) all.insert(all.end(), e.rows.begin(), e.rows.end());
  std::sort(all.begin(), all.end());
  return all;
}

class WorkerData : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_worker_data";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  // n samples [2, 2] whose pixels all equal first + i, labels i % 4.
  void write_idx(const std::string& split, uint32_t n, int first) {
    std::vector<uint8_t> images, labels;
    for (uint32_t i = 0; i < n; ++i) {
      labels.push_back(static_cast<uint8_t>(i % 4));
      for (int p = 0; p < 4; ++p) images.push_back(static_cast<uint8_t>(first + i));
    }
    ::tern::testing::write_idx_u8(dir_ + "/" + split + "-images.idx", {n, 2, 2}, images);
    ::tern::testing::write_idx_u8(dir_ + "/" + split + "-labels.idx", {n}, labels);
  }

  // `files` TFRecord files SPLIT-k.tfrecord of `per_file` Examples, pixels first + i, labels i % 4.
  void write_records(const std::string& split, int files, int per_file, int first) {
    for (int f = 0; f < files; ++f) {
      data::TFRecordWriter w(dir_ + "/" + split + "-" + std::to_string(f) + ".tfrecord");
      for (int i = f * per_file; i < (f + 1) * per_file; ++i) {
        data::Example ex;
        ex.features["image"] = data::Feature::bytes({std::string(4, static_cast<char>(first + i))});
        ex.features["label"] = data::Feature::int64s({i % 4});
        w.write(data::serialize_example(ex));
      }
      w.close();
    }
  }

  std::string idx_keys() const {
    return "num_classes = 4\ntrain_images = \"" + dir_ + "/train-images.idx\"\ntrain_labels = \"" +
           dir_ + "/train-labels.idx\"\ntest_images = \"" + dir_ +
           "/test-images.idx\"\ntest_labels = \"" + dir_ + "/test-labels.idx\"\n";
  }

  TrainConfig config(const std::string& data, int64_t batch = 4) {
    const std::string path = dir_ + "/cfg.toml";
    std::ofstream(path) << "[model]\nname = \"mlp\"\n[model.args]\nunits = [8]\n"
                        << data << "[training]\nepochs = 1\nbatch_size = " << batch
                        << "\nseed = 7\n[output]\ndir = \"" << dir_ << "/run\"\n";
    return load_config(path);
  }

  // The single worker's epoch and each of `n` workers' epochs, checked to cover it exactly.
  std::vector<TrainingData> expect_workers_cover(const TrainConfig& cfg, int64_t n,
                                                 int64_t local_batch) {
    const Epoch single = read_epoch(make_training_data(cfg, true).train);
    std::vector<TrainingData> data;
    std::vector<Epoch> epochs;
    for (int64_t i = 0; i < n; ++i) {
      data.push_back(make_training_data(cfg, true, {n, i}));
      epochs.push_back(read_epoch(data.back().train));
      EXPECT_EQ(epochs.back().batches, data.back().steps_per_epoch) << "worker " << i;
      EXPECT_EQ(epochs.back().largest_batch, local_batch) << "worker " << i;
    }
    EXPECT_EQ(joined(epochs), single.rows);
    return data;
  }

  std::string dir_;
};

TEST_F(WorkerData, InMemoryTensorsAreShardedByRow) {
  write_idx("train", 11, 0);
  write_idx("test", 5, 100);
  TrainConfig cfg = config("[data]\ndataset = \"idx\"\nshuffle_buffer = 16\n" + idx_keys());
  std::vector<TrainingData> w = expect_workers_cover(cfg, 2, 2);
  EXPECT_EQ(w[0].train_samples, 6);
  EXPECT_EQ(w[1].train_samples, 5);
  EXPECT_EQ(w[0].steps_per_epoch, 3);
  EXPECT_EQ(w[1].steps_per_epoch, 3);
  EXPECT_EQ(w[1].shard_description, "worker 1/2 reads every 2nd element");
  EXPECT_EQ(make_training_data(cfg, true).shard_description, "one worker reads all the data");
  // The test split is whole on every worker.
  const Epoch test = read_epoch(make_training_data(cfg, true).test);
  EXPECT_EQ(read_epoch(w[1].test).rows, test.rows);
  EXPECT_EQ(test.rows.size(), 5u);

  TrainConfig three = config("[data]\ndataset = \"idx\"\n" + idx_keys(), 4);
  EXPECT_TERN_ERROR(make_training_data(three, true, {3, 0}), ErrorCode::kInvalidArgument,
                    dir_ + "/cfg.toml: training.batch_size 4 is not divisible by 3 workers");
  EXPECT_NO_THROW(make_training_data(three, /*with_train=*/false, {3, 0}));  // evaluation only
}

TEST_F(WorkerData, TheDefaultShardIsTodaysSingleProcessData) {
  write_idx("train", 11, 0);
  write_idx("test", 5, 100);
  TrainConfig cfg = config("[data]\ndataset = \"idx\"\nshuffle_buffer = 16\n" + idx_keys());
  TrainingData a = make_training_data(cfg, true), b = make_training_data(cfg, true, {1, 0});
  data::Iterator ia = a.train->make_iterator(1), ib = b.train->make_iterator(1);
  int batches = 0;
  while (auto x = ia.next()) {
    auto y = ib.next();
    ASSERT_TRUE(y.has_value());
    EXPECT_TRUE(bitwise_equal((*x)[0], (*y)[0]));
    EXPECT_TRUE(bitwise_equal((*x)[1], (*y)[1]));
    ++batches;
  }
  EXPECT_FALSE(ib.next().has_value());
  EXPECT_EQ(batches, 3);
  EXPECT_EQ(a.steps_per_epoch, 3);
}

TEST_F(WorkerData, IdxPipelineHoldsOutValidationThenShards) {
  write_idx("train", 16, 0);
  write_idx("test", 4, 100);
  TrainConfig cfg = config("[data]\nsource = \"idx\"\nvalidation_split = 0.25\n" + idx_keys() +
                               "[[data.transforms]]\nop = \"shuffle\"\nbuffer = 8\n"
                               "[[data.transforms]]\nop = \"map\"\nfn = \"scale\"\n",
                           6);
  std::vector<TrainingData> w = expect_workers_cover(cfg, 3, 2);
  const Epoch validation = read_epoch(make_training_data(cfg, true).validation);
  ASSERT_EQ(validation.rows.size(), 4u);  // the last 4 of 16 rows, held out before sharding
  EXPECT_EQ(validation.rows.front().first, 12);
  for (const TrainingData& d : w) {
    EXPECT_EQ(read_epoch(d.validation).rows, validation.rows);
    EXPECT_EQ(d.train_samples, 4);
    EXPECT_EQ(d.steps_per_epoch, 2);
  }
  EXPECT_EQ(w[2].shard_description, "worker 2/3 reads every 3rd element");
}

TEST_F(WorkerData, TFRecordFilesAreShardedAcrossWorkers) {
  write_records("train", 5, 6, 0);
  write_records("test", 1, 4, 100);
  const std::string data =
      "[data]\nsource = \"tfrecord\"\nnum_classes = 4\ntrain_files = \"" + dir_ +
      "/train-*.tfrecord\"\ntest_files = \"" + dir_ + "/test-*.tfrecord\"\n" +
      "[data.features]\nimage = {type = \"bytes\", dtype = \"u8\", shape = [2, 2, 1]}\n"
      "label = {type = \"int64\"}\n"
      "[[data.transforms]]\nop = \"shuffle\"\nbuffer = 8\n"
      "[[data.transforms]]\nop = \"parse\"\n"
      "[[data.transforms]]\nop = \"map\"\nfn = \"scale\"\n"
      "[[data.transforms]]\nop = \"batch\"\n";  // size: training.batch_size
  TrainConfig cfg = config(data, 4);
  std::vector<TrainingData> w = expect_workers_cover(cfg, 2, 2);
  EXPECT_EQ(w[0].shard_description, "worker 0/2 reads 3 of 5 files");
  EXPECT_EQ(w[1].shard_description, "worker 1/2 reads 2 of 5 files");
  EXPECT_EQ(w[0].steps_per_epoch, 9);  // 18 records in batches of 2, counted
  EXPECT_EQ(w[1].steps_per_epoch, 6);  // uneven: the training loop refuses to start
  EXPECT_EQ(make_training_data(cfg, true).steps_per_epoch, -1);  // one worker: not counted

  // More workers than files: every worker reads every 8th record.
  TrainConfig eight = config(data, 8);
  w = expect_workers_cover(eight, 8, 1);
  EXPECT_EQ(w[7].shard_description,
            "worker 7/8 reads every 8th element (5 files, fewer than 8 workers)");
  EXPECT_EQ(w[0].steps_per_epoch, 4);  // 30 records: 4, 4, 4, 4, 4, 4, 3, 3
  EXPECT_EQ(w[7].steps_per_epoch, 3);

  EXPECT_TERN_ERROR(make_training_data(cfg, true, {3, 1}), ErrorCode::kInvalidArgument,
                    dir_ + "/cfg.toml: training.batch_size 4 is not divisible by 3 workers");
  TrainConfig explicit_size = config(data + "size = 6\n", 4);
  EXPECT_TERN_ERROR(make_training_data(explicit_size, true, {4, 1}), ErrorCode::kInvalidArgument,
                    "(data.transforms[3]): batch size 6 is not divisible by 4 workers");
}

}  // namespace
}  // namespace tern::config
