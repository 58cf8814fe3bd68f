// ChromeTraceSink: scopes from several threads land on their own tracks, and the JSON parses with
// the fields chrome://tracing and Perfetto need.
#include "tern/io/chrome_trace.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

namespace tern::io {
namespace {

TEST(ChromeTrace, CollectsScopesPerThreadAndWritesValidJson) {
  ChromeTraceSink sink;
  {
    ScopedTraceSink installed(&sink);
    { TERN_TRACE_SCOPE("dense/matmul", "op"); }
    std::thread worker([&] {
      sink.name_current_thread("input pipeline");
      TERN_TRACE_SCOPE("map_fn", "data");
    });
    worker.join();
    { TERN_TRACE_SCOPE("train_step", "step"); }
  }
  EXPECT_EQ(trace_sink(), nullptr);
  { TERN_TRACE_SCOPE("after", "op"); }  // not recorded
  std::vector<TraceEvent> events = sink.events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].name, "dense/matmul");
  EXPECT_EQ(events[0].tid, events[1].tid);
  EXPECT_EQ(events[2].name, "map_fn");
  EXPECT_NE(events[2].tid, events[0].tid);

  TraceArgs args;
  args[{"op", "dense/matmul"}] = {{"op", "matmul"}, {"kernel", "onednn"}};
  nlohmann::json doc = nlohmann::json::parse(sink.to_json(args));
  ASSERT_TRUE(doc.contains("traceEvents"));
  int complete = 0, thread_names = 0;
  bool saw_args = false, saw_pipeline = false;
  for (const auto& e : doc["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid") && e.contains("name"))
        << e.dump();
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_TRUE(e["ts"].is_number() && e["dur"].is_number() && e["cat"].is_string()) << e.dump();
      EXPECT_GE(e["ts"].get<double>(), 0);
      EXPECT_GE(e["dur"].get<double>(), 0);
      if (e["name"] == "dense/matmul") saw_args = e["args"]["op"] == "matmul";
    } else if (e["ph"] == "M" && e["name"] == "thread_name") {
      ++thread_names;
      if (e["args"]["name"] == "input pipeline") saw_pipeline = true;
    }
  }
  EXPECT_EQ(complete, 3);
  EXPECT_EQ(thread_names, 2);
  EXPECT_TRUE(saw_args);
  EXPECT_TRUE(saw_pipeline);
}

TEST(ChromeTrace, ANewSinkStartsEmpty) {
  auto first = std::make_unique<ChromeTraceSink>();
  first->record("a", "op", first->origin_ns(), 10);
  first.reset();
  ChromeTraceSink second;
  second.record("b", "op", second.origin_ns() + 1000, 2000);
  std::vector<TraceEvent> events = second.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "b");
  EXPECT_EQ(events[0].start_ns, 1000);
  nlohmann::json doc = nlohmann::json::parse(second.to_json());
  EXPECT_EQ(doc["traceEvents"].back()["ts"], 1.0);
  EXPECT_EQ(doc["traceEvents"].back()["dur"], 2.0);
}

}  // namespace
}  // namespace tern::io
