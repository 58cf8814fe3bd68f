// The dynamic batcher on AddServable (y = x + k): merging, splitting results back, padding,
// queue-full, timeout, deadline, oversized and inconsistent requests, strings, servable errors.
#include "tern/serve/batcher.h"

#include <gtest/gtest.h>

#include <thread>

#include "tern/serve/core_test_util.h"

namespace tern::serve {
namespace {

using namespace testing;  // NOLINT: the helpers of core_test_util.h

ServableHandle handle_of(std::shared_ptr<Probe> probe, float k = 10) {
  return ServableHandle{"m", 1, std::make_shared<AddServable>(k, std::move(probe))};
}

BatchingOptions one_thread(int64_t max_batch, int64_t timeout_micros) {
  BatchingOptions o;
  o.max_batch_size = max_batch;
  o.batch_timeout_micros = timeout_micros;
  o.num_batch_threads = 1;
  return o;
}

const auto kSoon = std::chrono::seconds(20);

TEST(Batcher, ConcurrentRequestsOfDifferentSizesMergeAndSplitBack) {
  auto probe = std::make_shared<Probe>();
  ServableHandle h = handle_of(probe);
  std::vector<BatchStats> stats;
  std::mutex stats_mu;
  Batcher batcher(one_thread(6, 10'000'000), [&](const BatchStats& s) {
    std::lock_guard<std::mutex> lock(stats_mu);
    stats.push_back(s);
  });
  // Sizes 1 + 2 + 3 fill max_batch_size 6: the batch closes at once, long before the timeout.
  std::vector<std::vector<float>> inputs = {{1}, {2, 3}, {4, 5, 6}};
  std::vector<std::vector<float>> outputs(3);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < inputs.size(); ++i) {
    clients.emplace_back([&, i] {
      outputs[i] =
          y_rows(batcher.run(h, kDefaultSignature, x_rows(inputs[i]), Clock::now() + kSoon));
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(probe->batch_sizes, (std::vector<int64_t>{6}));
  EXPECT_EQ(outputs[0], (std::vector<float>{11}));
  EXPECT_EQ(outputs[1], (std::vector<float>{12, 13}));
  EXPECT_EQ(outputs[2], (std::vector<float>{14, 15, 16}));
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].input_size, 6);
  EXPECT_EQ(stats[0].padded_size, 6);
  EXPECT_EQ(stats[0].queuing.size(), 3u);
  EXPECT_EQ(stats[0].model_name, "m");
}

TEST(Batcher, PadsToTheNextAllowedBatchSize) {
  auto probe = std::make_shared<Probe>();
  Gate gate;
  probe->on_run = [&] { gate.wait(); };
  ServableHandle h = handle_of(probe);
  BatchingOptions o = one_thread(8, 1000);
  o.allowed_batch_sizes = {2, 4, 8};
  Batcher batcher(o);
  // The first request occupies the only thread; three more queue into one open batch.
  std::thread first([&] { batcher.run(h, kDefaultSignature, x_rows({0}), Clock::now() + kSoon); });
  ASSERT_TRUE(gate.wait_for_waiters(1));
  std::vector<float> outputs(3);
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&, i] {
      outputs[i] = y_rows(
          batcher.run(h, kDefaultSignature, x_rows({float(i + 1)}), Clock::now() + kSoon))[0];
    });
  }
  ASSERT_TRUE(wait_for([&] { return batcher.num_queued_requests() == 3; }));
  gate.open();
  first.join();
  for (auto& t : clients) t.join();
  // 1 padded to 2 (the first request), then 3 padded to 4.
  EXPECT_EQ(probe->batch_sizes, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(outputs, (std::vector<float>{11, 12, 13}));
}

TEST(Batcher, AFullQueueIsUnavailable) {
  auto probe = std::make_shared<Probe>();
  Gate gate;
  probe->on_run = [&] { gate.wait(); };
  ServableHandle h = handle_of(probe);
  BatchingOptions o = one_thread(1, 0);
  o.max_enqueued_batches = 2;
  Batcher batcher(o);
  std::vector<std::thread> clients;
  clients.emplace_back(
      [&] { batcher.run(h, kDefaultSignature, x_rows({0}), Clock::now() + kSoon); });
  ASSERT_TRUE(gate.wait_for_waiters(1));
  for (int i = 0; i < 2; ++i) {
    clients.emplace_back(
        [&] { batcher.run(h, kDefaultSignature, x_rows({1}), Clock::now() + kSoon); });
  }
  ASSERT_TRUE(wait_for([&] { return batcher.num_queued_requests() == 2; }));
  std::string msg;
  EXPECT_EQ(
      error_of([&] { batcher.run(h, kDefaultSignature, x_rows({2}), Clock::now() + kSoon); }, &msg),
      ErrorCode::kUnavailable);
  EXPECT_EQ(msg, "The batch scheduling queue to which this task was submitted is full");
  gate.open();
  for (auto& t : clients) t.join();
  EXPECT_EQ(probe->batch_sizes.size(), 3u);
}

TEST(Batcher, ALoneRequestRunsWhenTheTimeoutExpires) {
  auto probe = std::make_shared<Probe>();
  ServableHandle h = handle_of(probe);
  Batcher batcher(one_thread(100, 30'000));
  const auto start = Clock::now();
  EXPECT_EQ(y_rows(batcher.run(h, kDefaultSignature, x_rows({1, 2}), start + kSoon)),
            (std::vector<float>{11, 12}));
  const auto elapsed = Clock::now() - start;
  EXPECT_GE(elapsed, std::chrono::microseconds(30'000));
  EXPECT_LT(elapsed, std::chrono::seconds(5));
  EXPECT_EQ(probe->batch_sizes, (std::vector<int64_t>{2}));
}

TEST(Batcher, ARequestWhoseDeadlinePassesWhileQueuedFails) {
  auto probe = std::make_shared<Probe>();
  Gate gate;
  probe->on_run = [&] { gate.wait(); };
  ServableHandle h = handle_of(probe);
  Batcher batcher(one_thread(1, 0));
  std::thread first([&] { batcher.run(h, kDefaultSignature, x_rows({0}), Clock::now() + kSoon); });
  ASSERT_TRUE(gate.wait_for_waiters(1));
  const auto start = Clock::now();
  EXPECT_EQ(error_of([&] {
              batcher.run(h, kDefaultSignature, x_rows({1}), start + std::chrono::milliseconds(50));
            }),
            ErrorCode::kDeadlineExceeded);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(batcher.num_queued_requests(), 0);  // it left the queue
  gate.open();
  first.join();
  EXPECT_EQ(probe->batch_sizes, (std::vector<int64_t>{1}));
  EXPECT_EQ(error_of([&] {
              batcher.run(h, kDefaultSignature, x_rows({1}),
                          Clock::now() - std::chrono::seconds(1));
            }),
            ErrorCode::kDeadlineExceeded);
}

TEST(Batcher, OversizedAndInconsistentRequestsAreInvalid) {
  auto probe = std::make_shared<Probe>();
  ServableHandle h = handle_of(probe);
  Batcher batcher(one_thread(2, 0));
  std::string msg;
  EXPECT_EQ(error_of(
                [&] {
                  batcher.run(h, kDefaultSignature, x_rows({1, 2, 3}));
                },
                &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(msg, "Task size 3 is larger than maximum batch size 2");
  TensorMap ragged = x_rows({1, 2});
  ragged["z"] = TensorValue::from_tensor(Tensor::zeros(DType::kF32, Shape{1}));
  EXPECT_EQ(error_of([&] { batcher.run(h, kDefaultSignature, ragged); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("input 'z' has dim 0 = 1 but input 'x' has 2"), std::string::npos) << msg;
  TensorMap scalar;
  scalar["x"] = TensorValue::from_tensor(Tensor::scalar(DType::kF32, 1));
  EXPECT_EQ(error_of([&] { batcher.run(h, kDefaultSignature, scalar); }),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(probe->batch_sizes.empty());
}

TEST(Batcher, StringInputsAreBatchedToo) {
  auto probe = std::make_shared<Probe>();
  ServableHandle h = handle_of(probe, 7);
  Batcher batcher(one_thread(3, 10'000'000));
  std::vector<std::vector<std::string>> outputs(2);
  std::vector<std::thread> clients;
  const std::vector<std::vector<std::string>> inputs = {{"a", "b"}, {"c"}};
  for (size_t i = 0; i < 2; ++i) {
    clients.emplace_back([&, i] {
      TensorMap in;
      in["s"] = TensorValue::from_strings({static_cast<int64_t>(inputs[i].size())}, inputs[i]);
      outputs[i] = batcher.run(h, "strings", in, Clock::now() + kSoon).at("t").strings;
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(probe->batch_sizes, (std::vector<int64_t>{3}));
  EXPECT_EQ(outputs[0], (std::vector<std::string>{"a!7", "b!7"}));
  EXPECT_EQ(outputs[1], (std::vector<std::string>{"c!7"}));
}

TEST(Batcher, AServableErrorReachesEveryRequestOfTheBatch) {
  auto probe = std::make_shared<Probe>();
  probe->on_run = [] { throw_error(ErrorCode::kInternal, "kernel failed"); };
  ServableHandle h = handle_of(probe);
  Batcher batcher(one_thread(2, 10'000'000));
  std::vector<std::string> messages(2);
  std::vector<std::thread> clients;
  for (int i = 0; i < 2; ++i) {
    clients.emplace_back([&, i] {
      error_of([&] { batcher.run(h, kDefaultSignature, x_rows({1}), Clock::now() + kSoon); },
               &messages[i]);
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(messages, (std::vector<std::string>{"kernel failed", "kernel failed"}));
}

TEST(Batcher, StopRunsQueuedBatchesThenRefuses) {
  auto probe = std::make_shared<Probe>();
  ServableHandle h = handle_of(probe);
  Batcher batcher(one_thread(10, 10'000'000));  // a lone request would wait 10 s
  float y = 0;
  std::thread client([&] { y = y_rows(batcher.run(h, kDefaultSignature, x_rows({1})))[0]; });
  ASSERT_TRUE(wait_for([&] { return batcher.num_queued_requests() == 1; }));
  const auto start = Clock::now();
  batcher.stop();
  client.join();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(y, 11);
  EXPECT_EQ(error_of([&] { batcher.run(h, kDefaultSignature, x_rows({1})); }),
            ErrorCode::kUnavailable);
}

TEST(Batcher, OptionsAreValidated) {
  std::string msg;
  BatchingOptions o;
  o.max_batch_size = 8;
  o.allowed_batch_sizes = {4, 2, 8};
  EXPECT_EQ(error_of([&] { validate_batching_options(o, "b.config"); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(msg, "b.config: allowed_batch_sizes must be increasing, but entry 1 (2) follows 4");
  o.allowed_batch_sizes = {2, 4};
  EXPECT_EQ(error_of([&] { validate_batching_options(o, "b.config"); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(msg, "b.config: last entry in allowed_batch_sizes (4) must match max_batch_size (8)");
  o = BatchingOptions{};
  o.max_enqueued_batches = 0;
  EXPECT_EQ(error_of([&] { Batcher b(o); }), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tern::serve
