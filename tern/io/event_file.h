// TensorBoard event files (docs/formats.md, "TensorBoard event files"): a TFRecord stream of Event
// protos, the first one carrying file_version "brain.Event:2". Summaries hold scalars
// (simple_value), histograms (HistogramProto), text (a string tensor tagged for the "text" plugin)
// and plugin data (an empty tensor; the value lives in metadata.plugin_data.content, as the
// hparams plugin writes it: hparams_plugin.h). The writer names files like TensorBoard's own
// writer, events.out.tfevents.<10-digit secs>.<host>.<pid>.<n>; the reader decodes what tern
// writes plus TF2-style scalar tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tern/tensor/tensor.h"

namespace tern::io {

struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit;  // right edge of each bucket
  std::vector<double> bucket;        // count in each bucket
};

// Finite values of `t` in `buckets` equal-width buckets over [min, max] (NaN/Inf are skipped).
Histogram make_histogram(const Tensor& t, int buckets = 30);

// kPluginData: all of the value is plugin_content; the tensor is an empty float32 of shape [0]
// (TensorBoard's hparams NULL_TENSOR, tensorboard/plugins/hparams/metadata.py).
enum class SummaryKind { kScalar, kHistogram, kText, kPluginData, kOther };

struct SummaryValue {
  std::string tag;
  SummaryKind kind = SummaryKind::kOther;
  double scalar = 0;           // kScalar
  Histogram histogram;         // kHistogram
  std::string text;            // kText
  std::string plugin_name;     // metadata.plugin_data.plugin_name, if any
  std::string plugin_content;  // metadata.plugin_data.content, if any
};

struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::optional<std::string> file_version;
  std::vector<SummaryValue> summary;  // empty unless the event holds a Summary
  bool has_summary = false;
  std::string other;  // name of any other payload (graph_def, session_log, ...) when present
};

std::string encode_event(const Event& event);
// DataLoss naming `what` on malformed bytes.
Event decode_event(std::string_view bytes, const std::string& what);

// Appends events to a new file in `log_dir` (created if missing). Writes the file_version event
// at once; later events are buffered until flush() (called by the destructor, and whenever the
// buffer passes 1 MiB). A reader sees whole records only, even if the process dies mid-write.
class EventFileWriter {
 public:
  explicit EventFileWriter(const std::string& log_dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void write(const Event& event);
  void add_scalar(const std::string& tag, double value, int64_t step);
  void add_histogram(const std::string& tag, const Histogram& h, int64_t step);
  // Markdown text (TensorBoard's text plugin renders it).
  void add_text(const std::string& tag, const std::string& text, int64_t step);
  void flush();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::string pending_;
};

struct EventFileContents {
  std::vector<Event> events;
  int64_t truncated_at = -1;  // byte offset of a cut-off final record, -1 if none
};

// Reads a whole event file; DataLoss naming the file (and offset) on corruption.
EventFileContents read_event_file(const std::string& path);
// Event files under `dir` (basename contains "tfevents"), recursively, sorted by path.
std::vector<std::string> find_event_files(const std::string& dir);

}  // namespace tern::io
