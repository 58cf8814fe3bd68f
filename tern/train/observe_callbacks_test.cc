// TensorBoard, CSVLogger and Profiler callbacks, the training monitor, and check-numerics /
// determinism modes inside fit().
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tern/io/atomic_file.h"
#include "tern/io/event_file.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/registry.h"
#include "tern/runtime/runtime.h"
#include "tern/train/csv_logger.h"
#include "tern/train/observe_test_util.h"
#include "tern/train/profiler.h"
#include "tern/train/tensorboard.h"
#include "tests/support/random_tensor.h"

namespace tern::train {
namespace {

using namespace tern::testing_observe;

class ObserveTest : public ::testing::Test {
 protected:
  void SetUp() override { make_blobs(200, 5, &x_, &y_); }
  Tensor x_, y_;
};

std::map<std::string, std::vector<std::pair<int64_t, double>>> scalars_in(const std::string& dir) {
  std::map<std::string, std::vector<std::pair<int64_t, double>>> out;
  for (const auto& f : io::find_event_files(dir)) {
    for (const auto& e : io::read_event_file(f).events) {
      for (const auto& v : e.summary) {
        if (v.kind == io::SummaryKind::kScalar) out[v.tag].push_back({e.step, v.scalar});
      }
    }
  }
  return out;
}

TEST_F(ObserveTest, TensorBoardWritesKerasLayout) {
  std::string dir = fresh_dir("tb");
  auto m = make_model();
  nn::FitOptions o;
  o.epochs = 2;
  o.verbose = 0;
  o.validation_data = data::from_tensor_slices({x_, y_})->batch(50);
  TensorBoardOptions tb{.log_dir = dir, .update_freq = 3, .histogram_freq = 1};
  tb.hparams = {{"learning_rate", "0.01"}, {"batch_size", "24"}};
  o.callbacks = {std::make_shared<TensorBoard>(tb)};
  History h = m->fit(make_pipeline(x_, y_), o);

  auto train = scalars_in(dir + "/train");
  auto val = scalars_in(dir + "/validation");
  for (const char* tag : {"epoch_loss", "epoch_accuracy", "epoch_learning_rate",
                          "epoch_samples_per_second", "epoch_steps_per_second"}) {
    ASSERT_EQ(train[tag].size(), 2u) << tag;
    EXPECT_EQ(train[tag][1].first, 1) << tag;
  }
  EXPECT_FLOAT_EQ(train["epoch_loss"][1].second, h.at("loss")[1]);
  EXPECT_FLOAT_EQ(val["epoch_loss"][0].second, h.at("val_loss")[0]);
  EXPECT_FLOAT_EQ(val["epoch_accuracy"][1].second, h.at("val_accuracy")[1]);
  EXPECT_GT(train["epoch_samples_per_second"][0].second, 0);
  // 18 batches, every 3rd: steps 3, 6, ..., 18.
  ASSERT_EQ(train["batch_loss"].size(), 6u);
  EXPECT_EQ(train["batch_loss"][0].first, 3);
  EXPECT_FLOAT_EQ(train["epoch_learning_rate"][0].second, 0.01);

  int histograms = 0, gradients = 0, texts = 0;
  std::vector<std::string> files = io::find_event_files(dir + "/train");
  ASSERT_EQ(files.size(), 1u);
  io::EventFileContents c = io::read_event_file(files[0]);
  EXPECT_EQ(c.events[0].file_version, "brain.Event:2");
  EXPECT_EQ(c.truncated_at, -1);
  for (const auto& e : c.events) {
    for (const auto& v : e.summary) {
      if (v.kind == io::SummaryKind::kHistogram) {
        ++histograms;
        if (v.tag.find("/gradient") != std::string::npos) {
          ++gradients;
          EXPECT_GT(v.histogram.num, 0);
        }
      }
      if (v.kind == io::SummaryKind::kText) {
        ++texts;
        EXPECT_NE(v.text.find("| learning_rate | 0.01 |"), std::string::npos) << v.text;
      }
    }
  }
  EXPECT_EQ(histograms, 2 * 8);  // 4 weights + 4 gradients, two epochs
  EXPECT_EQ(gradients, 2 * 4);
  EXPECT_EQ(texts, 1);
}

TEST_F(ObserveTest, CsvLoggerWritesARowPerEpochAndAppends) {
  std::string path = fresh_dir("csv") + "/log.csv";
  auto m = make_model();
  nn::FitOptions o;
  o.epochs = 2;
  o.verbose = 0;
  o.callbacks = {std::make_shared<CSVLogger>(path)};
  History h = m->fit(make_pipeline(x_, y_), o);
  o.callbacks = {std::make_shared<CSVLogger>(path, ',', true)};
  o.initial_epoch = 2;
  o.epochs = 3;
  m->fit(make_pipeline(x_, y_), o);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "epoch,accuracy,loss,lr");
  EXPECT_EQ(lines[1].substr(0, 2), "0,");
  EXPECT_EQ(lines[3].substr(0, 2), "2,");
  EXPECT_NEAR(std::stod(lines[2].substr(lines[2].find(',', 2) + 1)), h.at("loss")[1], 1e-8);
}

TEST_F(ObserveTest, ProfilerTracesAWindowAndRanksOps) {
  std::string path = fresh_dir("profile") + "/trace.json";
  auto m = make_model();
  nn::FitOptions o;
  o.epochs = 1;
  o.verbose = 0;
  auto p = std::make_shared<Profiler>(
      ProfilerOptions{.trace_path = path, .start_step = 2, .num_steps = 4, .print_report = false});
  o.callbacks = {p};
  m->fit(make_pipeline(x_, y_), o);
  ASSERT_TRUE(p->done());
  const ProfileReport& r = p->report();
  EXPECT_EQ(r.steps, 4);
  EXPECT_GT(r.step_ms, 0);
  EXPECT_GT(r.optimizer_ms, 0);
  EXPECT_GT(r.compute_ms, 0);
  EXPECT_NEAR(r.input_wait_ms + r.compute_ms + r.optimizer_ms, r.step_ms, 1e-6);
  ASSERT_FALSE(r.by_op.empty());
  bool adam = false;
  for (const auto& t : r.by_op) adam = adam || t.name == "adam_update";
  EXPECT_TRUE(adam);
  for (size_t i = 1; i < r.by_node.size(); ++i)
    EXPECT_GE(r.by_node[i - 1].total_ms, r.by_node[i].total_ms);
  EXPECT_NE(r.format().find("ops by type"), std::string::npos);

  nlohmann::json doc = nlohmann::json::parse(io::read_file(path));
  int steps = 0, ops_with_args = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    for (const char* k : {"name", "cat", "ts", "dur", "pid", "tid"})
      ASSERT_TRUE(e.contains(k)) << e.dump();
    if (e["name"] == "train_step") ++steps;
    if (e["cat"] == "op" && e.contains("args") && e["args"].contains("kernel")) ++ops_with_args;
  }
  EXPECT_EQ(steps, 4);
  EXPECT_GT(ops_with_args, 0);
}

TEST_F(ObserveTest, MonitorFiguresAddUp) {
  auto m = make_model();
  nn::FitOptions o;
  o.epochs = 2;
  o.verbose = 0;
  History h = m->fit(make_pipeline(x_, y_), o);
  const FitStats& s = h.stats;
  EXPECT_EQ(s.steps, 18);
  EXPECT_EQ(s.samples, 400);
  ASSERT_EQ(s.epoch_seconds.size(), 2u);
  EXPECT_LE(s.epoch_seconds_min(), s.epoch_seconds_mean());
  EXPECT_LE(s.epoch_seconds_mean(), s.epoch_seconds_max());
  EXPECT_GT(s.steps_per_second(), 0);
  EXPECT_GT(s.compute_seconds, 0);
  EXPECT_LE(s.input_wait_seconds + s.compute_seconds, s.train_seconds);
  EXPECT_NE(s.report().find("steps/s"), std::string::npos);
}

TEST_F(ObserveTest, CheckNumericsNamesTheOpAndStepOfAnInjectedNaN) {
  Tensor x = x_.clone();
  // Sample 100 lands in the second batch of the unshuffled pipeline (batches of 24: 96..119).
  x.set(100 * 8 + 3, NAN);
  auto m = make_model();
  m->training_state()->compile_options.check_numerics = true;
  nn::FitOptions o;
  o.epochs = 1;
  o.verbose = 0;
  try {
    m->fit(data::from_tensor_slices({x, y_})->batch(24), o);
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string msg = e.message();
    EXPECT_NE(msg.find("check_numerics"), std::string::npos) << msg;
    EXPECT_NE(msg.find("hidden"), std::string::npos) << msg;  // the first Dense consumes the NaN
    EXPECT_NE(msg.find("NaN"), std::string::npos) << msg;
    EXPECT_NE(msg.find("training step 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("batch 4"), std::string::npos) << msg;
  }
}

TEST_F(ObserveTest, DeterministicRunsAreBitwiseEqual) {
  auto a = make_model(), b = make_model();
  nn::FitOptions o;
  o.epochs = 2;
  o.verbose = 0;
  a->fit(make_pipeline(x_, y_), o);
  b->fit(make_pipeline(x_, y_), o);
  EXPECT_TRUE(bitwise_equal(weights_of(*a), weights_of(*b)));
}

TEST(DeterminismMode, EnvironmentTurnsItOnForCompile) {
  ::setenv("TERN_DETERMINISTIC", "1", 1);
  nn::Sequential on({nn::Dense(2)}, Shape{3});
  on.compile(std::make_shared<optim::Adam>(1e-2),
             std::make_shared<nn::SparseCategoricalCrossentropy>(true));
  ::unsetenv("TERN_DETERMINISTIC");
  nn::Sequential off({nn::Dense(2)}, Shape{3});
  off.compile(std::make_shared<optim::Adam>(1e-2),
              std::make_shared<nn::SparseCategoricalCrossentropy>(true));
  EXPECT_TRUE(on.training_state()->compile_options.deterministic);
  EXPECT_FALSE(off.training_state()->compile_options.deterministic);
}

TEST(DeterminismMode, AnOpWithoutADeterministicKernelIsNamed) {
  runtime::initialize();
  kernels::KernelRegistry registry;  // a private registry: one fast, non-reproducible candidate
  registry.add("relu", kernels::KernelCandidate{.name = "atomic_fast",
                                                .dtypes = {DType::kF32},
                                                .priority = 10,
                                                .deterministic = false,
                                                .create = [](const kernels::KernelSignature&) {
                                                  return std::unique_ptr<kernels::Kernel>();
                                                }});
  kernels::KernelSignature sig;
  sig.op = &ops::OpRegistry::global().get("relu");
  ops::Attrs attrs;
  sig.attrs = &attrs;
  sig.inputs = {{DType::kF32, Shape{4}}};
  sig.outputs = {{DType::kF32, Shape{4}}};
  EXPECT_EQ(registry.select(sig).candidate->name, "atomic_fast");
  sig.deterministic = true;
  EXPECT_TERN_ERROR(registry.select(sig), ErrorCode::kFailedPrecondition,
                    "op 'relu' has no deterministic kernel for dtype f32");
}

}  // namespace
}  // namespace tern::train
