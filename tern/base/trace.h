// Tracing hooks: a scope records (name, category, thread, start, duration) into the active
// TraceSink, if any. With no sink installed a scope costs one relaxed atomic load.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

namespace tern {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // Times are nanoseconds since an arbitrary steady epoch.
  virtual void record(std::string_view name, std::string_view category, int64_t start_ns,
                      int64_t duration_ns) = 0;
};

// Installs `sink` (nullptr uninstalls). The caller keeps ownership.
void set_trace_sink(TraceSink* sink);
TraceSink* trace_sink();

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class TraceScope {
 public:
  TraceScope(std::string_view name, std::string_view category)
      : sink_(trace_sink()), name_(name), category_(category), start_(sink_ ? now_ns() : 0) {}
  ~TraceScope() {
    if (sink_) sink_->record(name_, category_, start_, now_ns() - start_);
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  TraceSink* sink_;
  std::string_view name_;
  std::string_view category_;
  int64_t start_;
};

}  // namespace tern

#define TERN_TRACE_CONCAT_INNER(a, b) a##b
#define TERN_TRACE_CONCAT(a, b) TERN_TRACE_CONCAT_INNER(a, b)
#define TERN_TRACE_SCOPE(name, category) \
  ::tern::TraceScope TERN_TRACE_CONCAT(tern_trace_scope_, __LINE__)(name, category)
