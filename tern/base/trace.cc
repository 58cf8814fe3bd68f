// The process-wide trace sink pointer.
#include "tern/base/trace.h"

namespace tern {
namespace {
std::atomic<TraceSink*> g_sink{nullptr};
}

void set_trace_sink(TraceSink* sink) {
  g_sink.store(sink, std::memory_order_release);
}
TraceSink* trace_sink() {
  return g_sink.load(std::memory_order_relaxed);
}

}  // namespace tern
