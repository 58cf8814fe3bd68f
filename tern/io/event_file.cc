// TensorBoard event files: Event/Summary encoding and decoding, histograms, writer and reader.
#include "tern/io/event_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "tern/base/error.h"
#include "tern/format/proto_reader.h"
#include "tern/format/proto_wire.h"
#include "tern/format/tfrecord_frame.h"
#include "tern/io/atomic_file.h"

namespace tern::io {

using format::ProtoField;
using format::ProtoReader;
using format::ProtoWriter;
using format::WireType;

namespace {

// Field numbers from event.proto, summary.proto, tensor.proto (docs/formats.md, "TensorBoard event
// files").
enum EventField : uint32_t {
  kWallTime = 1,
  kStep = 2,
  kFileVersion = 3,
  kSummary = 5,
  kSourceMetadata = 10
};
enum ValueField : uint32_t { kTag = 1, kSimpleValue = 2, kHisto = 5, kTensor = 8, kMetadata = 9 };
enum TensorField : uint32_t {
  kDtype = 1,
  kShape = 2,
  kContent = 4,
  kFloatVal = 5,
  kDoubleVal = 6,
  kStringVal = 8
};
constexpr uint64_t kDtFloat = 1, kDtDouble = 2, kDtString = 7;
// tensor_shape.proto: TensorShapeProto{repeated Dim dim = 2}, Dim{int64 size = 1}.
constexpr uint32_t kShapeDim = 2, kDimSize = 1;

// True when a TensorShapeProto has a dimension of size 0 (the tensor holds no elements).
bool shape_is_empty(ProtoReader r) {
  ProtoField f;
  bool empty = false;
  while (r.next(f)) {
    if (f.number != kShapeDim || f.type != WireType::kLengthDelimited) continue;
    ProtoReader d = r.nested(f);
    ProtoField df;
    int64_t size = 0;
    while (d.next(df)) {
      if (df.number == kDimSize && df.type == WireType::kVarint)
        size = static_cast<int64_t>(df.value);
    }
    if (size == 0) empty = true;
  }
  return empty;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ProtoWriter encode_histogram(const Histogram& h) {
  ProtoWriter w;
  w.add_double(1, h.min);
  w.add_double(2, h.max);
  w.add_double(3, h.num);
  w.add_double(4, h.sum);
  w.add_double(5, h.sum_squares);
  w.add_packed_doubles(6, h.bucket_limit);
  w.add_packed_doubles(7, h.bucket);
  return w;
}

ProtoWriter encode_value(const SummaryValue& v) {
  ProtoWriter w;
  w.add_bytes(kTag, v.tag);
  std::string plugin = v.plugin_name;
  if (v.kind == SummaryKind::kText && plugin.empty()) plugin = "text";
  if (!plugin.empty()) {
    ProtoWriter plugin_data, metadata;
    plugin_data.add_bytes(1, plugin);
    if (!v.plugin_content.empty()) plugin_data.add_bytes(2, v.plugin_content);
    metadata.add_message(1, plugin_data);
    w.add_message(kMetadata, metadata);
  }
  switch (v.kind) {
    case SummaryKind::kScalar:
      w.add_float(kSimpleValue, static_cast<float>(v.scalar));
      break;
    case SummaryKind::kHistogram:
      w.add_message(kHisto, encode_histogram(v.histogram));
      break;
    case SummaryKind::kText: {
      ProtoWriter tensor;
      tensor.add_varint(kDtype, kDtString);
      tensor.add_bytes(kShape, "");
      tensor.add_bytes(kStringVal, v.text);
      w.add_message(kTensor, tensor);
      break;
    }
    case SummaryKind::kPluginData: {
      ProtoWriter tensor, shape, dim;  // DT_FLOAT, tensor_shape {dim {size: 0}}
      shape.add_message(kShapeDim, dim);
      tensor.add_varint(kDtype, kDtFloat);
      tensor.add_message(kShape, shape);
      w.add_message(kTensor, tensor);
      break;
    }
    case SummaryKind::kOther:
      throw_error(ErrorCode::kInvalidArgument, "event summary '", v.tag, "' has no value to write");
  }
  return w;
}

Histogram decode_histogram(ProtoReader r) {
  Histogram h;
  const size_t start = r.offset();
  ProtoField f;
  while (r.next(f)) {
    double* scalars[] = {&h.min, &h.max, &h.num, &h.sum, &h.sum_squares};
    if (f.number >= 1 && f.number <= 5 && f.type == WireType::kFixed64)
      *scalars[f.number - 1] = f.as_double();
    if (f.number == 6) r.append_doubles(f, h.bucket_limit);
    if (f.number == 7) r.append_doubles(f, h.bucket);
  }
  if (h.bucket.size() != h.bucket_limit.size()) {
    r.fail_at(start, str_cat("histogram has ", h.bucket_limit.size(), " bucket limits but ",
                             h.bucket.size(), " counts"));
  }
  return h;
}

// A TensorProto: text for string tensors, a scalar for one float/double value.
void decode_tensor(ProtoReader r, SummaryValue& v) {
  ProtoField f;
  uint64_t dtype = 0;
  std::vector<double> numbers;
  std::string content, text;
  int strings = 0;
  bool empty = false;
  while (r.next(f)) {
    if (f.number == kDtype && f.type == WireType::kVarint) dtype = f.value;
    if (f.number == kShape && f.type == WireType::kLengthDelimited)
      empty = shape_is_empty(r.nested(f));
    if (f.number == kContent && f.type == WireType::kLengthDelimited)
      content = std::string(f.payload);
    if (f.number == kDoubleVal) r.append_doubles(f, numbers);
    if (f.number == kFloatVal && f.type == WireType::kFixed32) numbers.push_back(f.as_float());
    if (f.number == kFloatVal && f.type == WireType::kLengthDelimited) {
      for (size_t i = 0; i + 4 <= f.payload.size(); i += 4) {
        float x;
        std::memcpy(&x, f.payload.data() + i, 4);
        numbers.push_back(x);
      }
    }
    if (f.number == kStringVal && f.type == WireType::kLengthDelimited) {
      text += (strings++ ? "\n" : "") + std::string(f.payload);
    }
  }
  if (empty && numbers.empty() && content.empty() && strings == 0) {
    v.kind = SummaryKind::kPluginData;
  } else if (dtype == kDtString) {
    v.kind = SummaryKind::kText;
    v.text = text;
  } else if (dtype == kDtFloat && numbers.empty() && content.size() == 4) {
    float x;
    std::memcpy(&x, content.data(), 4);
    v.kind = SummaryKind::kScalar;
    v.scalar = x;
  } else if (dtype == kDtDouble && numbers.empty() && content.size() == 8) {
    std::memcpy(&v.scalar, content.data(), 8);
    v.kind = SummaryKind::kScalar;
  } else if ((dtype == kDtFloat || dtype == kDtDouble) && numbers.size() == 1) {
    v.kind = SummaryKind::kScalar;
    v.scalar = numbers[0];
  }
}

SummaryValue decode_value(ProtoReader r) {
  SummaryValue v;
  ProtoField f;
  while (r.next(f)) {
    if (f.number == kTag && f.type == WireType::kLengthDelimited) v.tag = std::string(f.payload);
    if (f.number == kSimpleValue && f.type == WireType::kFixed32) {
      v.kind = SummaryKind::kScalar;
      v.scalar = f.as_float();
    }
    if (f.number == kHisto && f.type == WireType::kLengthDelimited) {
      v.kind = SummaryKind::kHistogram;
      v.histogram = decode_histogram(r.nested(f));
    }
    if (f.number == kTensor && f.type == WireType::kLengthDelimited) decode_tensor(r.nested(f), v);
    if (f.number == kMetadata && f.type == WireType::kLengthDelimited) {
      ProtoReader m = r.nested(f);
      ProtoField mf;
      while (m.next(mf)) {
        if (mf.number != 1 || mf.type != WireType::kLengthDelimited) continue;
        ProtoReader p = m.nested(mf);
        ProtoField pf;
        while (p.next(pf)) {
          if (pf.number == 1 && pf.type == WireType::kLengthDelimited)
            v.plugin_name = std::string(pf.payload);
          if (pf.number == 2 && pf.type == WireType::kLengthDelimited)
            v.plugin_content = std::string(pf.payload);
        }
      }
    }
  }
  return v;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || !buf[0]) return "localhost";
  return buf;
}

}  // namespace

Histogram make_histogram(const Tensor& t, int buckets) {
  TERN_CHECK_ARG(buckets >= 1, "histogram: bucket count must be >= 1, got ", buckets);
  Histogram h;
  h.min = INFINITY;
  h.max = -INFINITY;
  std::vector<double> values;
  values.reserve(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = t.get(i);
    if (!std::isfinite(v)) continue;
    values.push_back(v);
    h.min = std::min(h.min, v);
    h.max = std::max(h.max, v);
    h.sum += v;
    h.sum_squares += v * v;
  }
  h.num = static_cast<double>(values.size());
  if (values.empty()) {
    h.min = h.max = 0;
    return h;
  }
  if (h.min == h.max) buckets = 1;
  double width = (h.max - h.min) / buckets;
  h.bucket.assign(static_cast<size_t>(buckets), 0);
  for (int b = 0; b < buckets; ++b)
    h.bucket_limit.push_back(b + 1 == buckets ? h.max : h.min + width * (b + 1));
  for (double v : values) {
    int b = width > 0 ? static_cast<int>((v - h.min) / width) : 0;
    h.bucket[static_cast<size_t>(std::clamp(b, 0, buckets - 1))] += 1;
  }
  return h;
}

std::string encode_event(const Event& e) {
  ProtoWriter w;
  if (e.wall_time != 0) w.add_double(kWallTime, e.wall_time);
  if (e.step != 0) w.add_int64(kStep, e.step);
  if (e.file_version) w.add_bytes(kFileVersion, *e.file_version);
  if (e.has_summary || !e.summary.empty()) {
    ProtoWriter summary;
    for (const auto& v : e.summary) summary.add_message(1, encode_value(v));
    w.add_message(kSummary, summary);
  }
  return w.bytes();
}

Event decode_event(std::string_view bytes, const std::string& what) {
  Event e;
  ProtoReader r(bytes, 0, what);
  ProtoField f;
  while (r.next(f)) {
    switch (f.number) {
      case kWallTime:
        if (f.type == WireType::kFixed64) e.wall_time = f.as_double();
        break;
      case kStep:
        if (f.type == WireType::kVarint) e.step = static_cast<int64_t>(f.value);
        break;
      case kFileVersion:
        if (f.type == WireType::kLengthDelimited) e.file_version = std::string(f.payload);
        break;
      case kSummary: {
        if (f.type != WireType::kLengthDelimited) break;
        e.has_summary = true;
        ProtoReader s = r.nested(f);
        ProtoField sf;
        while (s.next(sf)) {
          if (sf.number == 1 && sf.type == WireType::kLengthDelimited)
            e.summary.push_back(decode_value(s.nested(sf)));
        }
        break;
      }
      case kSourceMetadata:
        break;
      default: {
        static const char* kOther[] = {"",
                                       "",
                                       "",
                                       "",
                                       "graph_def",
                                       "",
                                       "log_message",
                                       "session_log",
                                       "tagged_run_metadata",
                                       "meta_graph_def"};
        if (f.number < 10) e.other = kOther[f.number];
      }
    }
  }
  return e;
}

// --- writer ---

EventFileWriter::EventFileWriter(const std::string& log_dir) {
  static std::atomic<int> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec)
    throw_error(ErrorCode::kUnavailable, "cannot create log directory '", log_dir,
                "': ", ec.message());
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%010lld", static_cast<long long>(now_seconds()));
  path_ = str_cat(log_dir, "/events.out.tfevents.", secs, ".", host_name(), ".", ::getpid(), ".",
                  counter++);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw_error(ErrorCode::kUnavailable, "cannot create event file '", path_,
                "': ", std::strerror(errno));
  Event first;
  first.wall_time = now_seconds();
  first.file_version = "brain.Event:2";
  write(first);
  flush();
}

EventFileWriter::~EventFileWriter() {
  try {
    flush();
  } catch (const Error&) {
    // A destructor cannot report; the events written by earlier flushes stay readable.
  }
  if (fd_ >= 0) ::close(fd_);
}

void EventFileWriter::write(const Event& event) {
  pending_ += format::tfrecord_frame(encode_event(event));
  if (pending_.size() > (1u << 20)) flush();
}

void EventFileWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  Event e{.wall_time = now_seconds(), .step = step, .has_summary = true};
  e.summary.push_back({.tag = tag, .kind = SummaryKind::kScalar, .scalar = value});
  write(e);
}

void EventFileWriter::add_histogram(const std::string& tag, const Histogram& h, int64_t step) {
  Event e{.wall_time = now_seconds(), .step = step, .has_summary = true};
  e.summary.push_back({.tag = tag, .kind = SummaryKind::kHistogram, .histogram = h});
  write(e);
}

void EventFileWriter::add_text(const std::string& tag, const std::string& text, int64_t step) {
  Event e{.wall_time = now_seconds(), .step = step, .has_summary = true};
  e.summary.push_back(
      {.tag = tag, .kind = SummaryKind::kText, .text = text, .plugin_name = "text"});
  write(e);
}

void EventFileWriter::flush() {
  size_t done = 0;
  while (done < pending_.size()) {
    ssize_t w = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw_error(ErrorCode::kUnavailable, "cannot write event file '", path_,
                  "': ", std::strerror(errno));
    }
    done += static_cast<size_t>(w);
  }
  pending_.clear();
}

// --- reader ---

EventFileContents read_event_file(const std::string& path) {
  std::string bytes = read_file(path);
  format::TFRecordScan scan = format::tfrecord_split(bytes, str_cat("event file '", path, "'"));
  EventFileContents out;
  out.truncated_at = scan.truncated_at;
  for (size_t i = 0; i < scan.records.size(); ++i) {
    out.events.push_back(
        decode_event(scan.records[i], str_cat("event file '", path, "' record ", i)));
  }
  return out;
}

std::vector<std::string> find_event_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw_error(ErrorCode::kNotFound, "'", dir, "' is not a directory");
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (entry.is_regular_file() &&
        entry.path().filename().string().find("tfevents") != std::string::npos) {
      out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tern::io
