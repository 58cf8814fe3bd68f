// ChromeTraceSink: per-thread event buffers and the JSON writer.
#include "tern/io/chrome_trace.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>

#include "tern/base/error.h"
#include "tern/io/atomic_file.h"

namespace tern::io {
namespace {

std::atomic<uint64_t> g_next_sink_id{1};

// The calling thread's buffer in the sink it last recorded into (sinks are told apart by id, so a
// new sink at a reused address is never confused with an old one).
struct ThreadCache {
  uint64_t sink_id = 0;
  void* buffer = nullptr;
};
thread_local ThreadCache t_cache;

std::string pthread_name() {
  char buf[64] = {};
  if (pthread_getname_np(pthread_self(), buf, sizeof(buf)) != 0) return "";
  return buf;
}

}  // namespace

ChromeTraceSink::ChromeTraceSink()
    : id_(g_next_sink_id++), origin_ns_(now_ns()), process_thread_name_(pthread_name()) {
  name_current_thread("main");
}

ChromeTraceSink::~ChromeTraceSink() {
  if (trace_sink() == this) set_trace_sink(nullptr);
}

ChromeTraceSink::ThreadBuffer& ChromeTraceSink::buffer_for_this_thread() {
  if (t_cache.sink_id == id_) return *static_cast<ThreadBuffer*>(t_cache.buffer);
  std::lock_guard lock(mu_);
  auto& slot = buffers_[std::this_thread::get_id()];
  if (!slot) {
    slot = std::make_unique<ThreadBuffer>();
    slot->tid = static_cast<int>(buffers_.size());
    // Threads inherit the process name unless they set their own.
    std::string name = pthread_name();
    slot->name =
        name.empty() || name == process_thread_name_ ? str_cat("thread ", slot->tid) : name;
  }
  t_cache = {id_, slot.get()};
  return *slot;
}

void ChromeTraceSink::name_current_thread(const std::string& name) {
  ThreadBuffer& b = buffer_for_this_thread();
  std::lock_guard lock(b.mu);
  b.name = name;
}

void ChromeTraceSink::record(std::string_view name, std::string_view category, int64_t start_ns,
                             int64_t duration_ns) {
  ThreadBuffer& b = buffer_for_this_thread();
  std::lock_guard lock(b.mu);
  b.events.push_back(
      {std::string(name), std::string(category), start_ns - origin_ns_, duration_ns, b.tid});
}

std::vector<TraceEvent> ChromeTraceSink::events() const {
  std::vector<TraceEvent> out;
  std::lock_guard lock(mu_);
  std::vector<const ThreadBuffer*> bufs;
  for (const auto& [_, b] : buffers_) bufs.push_back(b.get());
  std::sort(bufs.begin(), bufs.end(), [](const auto* a, const auto* b) { return a->tid < b->tid; });
  for (const ThreadBuffer* b : bufs) {
    std::lock_guard block(b->mu);
    size_t first = out.size();
    out.insert(out.end(), b->events.begin(), b->events.end());
    std::stable_sort(
        out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
        [](const TraceEvent& x, const TraceEvent& y) { return x.start_ns < y.start_ns; });
  }
  return out;
}

std::vector<TraceThread> ChromeTraceSink::threads() const {
  std::vector<TraceThread> out;
  std::lock_guard lock(mu_);
  for (const auto& [_, b] : buffers_) {
    std::lock_guard block(b->mu);
    out.push_back({b->tid, b->name});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.tid < b.tid; });
  return out;
}

std::string ChromeTraceSink::to_json(const TraceArgs& args) const {
  using json = nlohmann::ordered_json;
  int pid = static_cast<int>(::getpid());
  json out = json::array();
  out.push_back({{"name", "process_name"},
                 {"ph", "M"},
                 {"pid", pid},
                 {"tid", 0},
                 {"args", {{"name", "tern"}}}});
  for (const TraceThread& t : threads()) {
    out.push_back({{"name", "thread_name"},
                   {"ph", "M"},
                   {"pid", pid},
                   {"tid", t.tid},
                   {"args", {{"name", t.name}}}});
    out.push_back({{"name", "thread_sort_index"},
                   {"ph", "M"},
                   {"pid", pid},
                   {"tid", t.tid},
                   {"args", {{"sort_index", t.tid}}}});
  }
  for (const TraceEvent& e : events()) {
    json j = {{"name", e.name},
              {"cat", e.category},
              {"ph", "X"},
              {"ts", static_cast<double>(e.start_ns) / 1000.0},
              {"dur", static_cast<double>(e.duration_ns) / 1000.0},
              {"pid", pid},
              {"tid", e.tid}};
    auto it = args.find({e.category, e.name});
    if (it != args.end()) j["args"] = it->second;
    out.push_back(std::move(j));
  }
  json doc = {{"traceEvents", std::move(out)},
              {"displayTimeUnit", "ms"},
              {"otherData", {{"generator", "tern"}}}};
  return doc.dump();
}

void ChromeTraceSink::write(const std::string& path, const TraceArgs& args) const {
  write_file_atomically(path, to_json(args));
}

}  // namespace tern::io
