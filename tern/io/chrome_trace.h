// Chrome Trace Event JSON (docs/formats.md, "Chrome trace event JSON") from tern's trace scopes:
// ChromeTraceSink collects every TERN_TRACE_SCOPE while installed, one buffer per recording thread,
// and writes
//   {"traceEvents": [thread-name metadata..., {"ph":"X","name","cat","ts","dur","pid","tid"}...]}
// with times in microseconds from the sink's creation. The file opens in Perfetto and
// chrome://tracing, one track per thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tern/base/trace.h"

namespace tern::io {

struct TraceEvent {
  std::string name;
  std::string category;
  int64_t start_ns = 0;  // since the sink's origin
  int64_t duration_ns = 0;
  int tid = 0;
};

struct TraceThread {
  int tid = 0;
  std::string name;
};

// Extra "args" for events, by (category, name): e.g. {"op", "dense/matmul"} -> {"op": "matmul"}.
using TraceArgs = std::map<std::pair<std::string, std::string>, std::map<std::string, std::string>>;

class ChromeTraceSink : public TraceSink {
 public:
  // The creating thread is named "main".
  ChromeTraceSink();
  ~ChromeTraceSink() override;

  void record(std::string_view name, std::string_view category, int64_t start_ns,
              int64_t duration_ns) override;
  // Names the calling thread's track (otherwise its pthread name, or "thread <n>").
  void name_current_thread(const std::string& name);

  // A snapshot, ordered by thread then start time.
  std::vector<TraceEvent> events() const;
  std::vector<TraceThread> threads() const;
  int64_t origin_ns() const { return origin_ns_; }

  std::string to_json(const TraceArgs& args = {}) const;
  // Writes to_json() atomically (temp file, fsync, rename).
  void write(const std::string& path, const TraceArgs& args = {}) const;

 private:
  struct ThreadBuffer {
    int tid = 0;
    std::string name;
    mutable std::mutex mu;  // the owner appends, readers snapshot
    std::vector<TraceEvent> events;
  };
  ThreadBuffer& buffer_for_this_thread();

  const uint64_t id_;
  const int64_t origin_ns_;
  const std::string process_thread_name_;
  mutable std::mutex mu_;
  std::map<std::thread::id, std::unique_ptr<ThreadBuffer>> buffers_;
};

// Installs a sink for a scope, restoring the previous one on exit.
class ScopedTraceSink {
 public:
  explicit ScopedTraceSink(TraceSink* sink) : previous_(trace_sink()) { set_trace_sink(sink); }
  ~ScopedTraceSink() { set_trace_sink(previous_); }
  ScopedTraceSink(const ScopedTraceSink&) = delete;
  ScopedTraceSink& operator=(const ScopedTraceSink&) = delete;

 private:
  TraceSink* previous_;
};

}  // namespace tern::io
