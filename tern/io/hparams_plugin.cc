// TensorBoard hparams plugin summaries: HParamsPluginData encoded and decoded with tern/format,
// written as event-file Summary values (kPluginData), and read back from an event file.
#include "tern/io/hparams_plugin.h"

#include <chrono>
#include <cmath>
#include <set>

#include "tern/base/error.h"
#include "tern/format/proto_reader.h"
#include "tern/format/proto_wire.h"
#include "tern/io/event_file.h"

namespace tern::io {

using format::ProtoField;
using format::ProtoReader;
using format::ProtoWriter;
using format::WireType;

namespace {

// --- field numbers (docs/hparams_events.md) ---
// tensorflow/tensorboard tensorboard/plugins/hparams/plugin_data.proto
enum PluginDataField : uint32_t {
  kVersion = 1,
  kExperiment = 2,
  kSessionStart = 3,
  kSessionEnd = 4
};
enum SessionStartField : uint32_t { kStartHParams = 1, kGroupName = 4, kStartTimeSecs = 5 };
enum SessionEndField : uint32_t { kEndStatus = 1, kEndTimeSecs = 2 };
// tensorflow/tensorboard tensorboard/plugins/hparams/api.proto
enum ExperimentField : uint32_t { kTimeCreatedSecs = 3, kHParamInfos = 4, kMetricInfos = 5 };
enum HParamInfoField : uint32_t {
  kHName = 1,
  kHType = 4,
  kDomainDiscrete = 5,
  kDomainInterval = 6
};
enum IntervalField : uint32_t { kMinValue = 1, kMaxValue = 2 };
enum MetricInfoField : uint32_t { kMetricName = 1, kMetricDisplayName = 3 };
enum MetricNameField : uint32_t { kMetricGroup = 1, kMetricTag = 2 };
enum DataType : uint64_t {
  kDataTypeUnset = 0,
  kDataTypeString = 1,
  kDataTypeBool = 2,
  kFloat64 = 3
};
// api.proto enum Status: STATUS_UNKNOWN 0, STATUS_SUCCESS 1, STATUS_FAILURE 2, STATUS_RUNNING 3.
// protocolbuffers/protobuf src/google/protobuf/struct.proto; map entries are {key 1, value 2}.
enum ValueField : uint32_t { kNumberValue = 2, kStringValue = 3, kBoolValue = 4 };
enum ListValueField : uint32_t { kListValues = 1 };
enum MapEntryField : uint32_t { kKey = 1, kMapValue = 2 };

using Status = HParamsSession::Status;

uint64_t status_number(Status s) {
  switch (s) {
    case Status::kSuccess:
      return 1;
    case Status::kFailure:
      return 2;
    case Status::kRunning:
      return 3;
    case Status::kUnknown:
      break;
  }
  return 0;
}

Status status_from_number(uint64_t n) {
  static const Status kByNumber[] = {Status::kUnknown, Status::kSuccess, Status::kFailure,
                                     Status::kRunning};
  return n < 4 ? kByNumber[n] : Status::kUnknown;
}

// google.protobuf.Value: the oneof member is written even when it holds its default.
ProtoWriter encode_value(const HParamValue& v) {
  ProtoWriter w;
  if (const double* d = std::get_if<double>(&v)) w.add_double(kNumberValue, *d);
  if (const std::string* s = std::get_if<std::string>(&v)) w.add_bytes(kStringValue, *s);
  if (const bool* b = std::get_if<bool>(&v)) w.add_varint(kBoolValue, *b ? 1 : 0);
  return w;
}

// Fields holding their default are left out, as proto3 writers do (the bytes then equal
// TensorBoard's own; google.protobuf.Value's oneof members are always written).
void add_double_field(ProtoWriter& w, uint32_t field, double value) {
  if (value != 0) w.add_double(field, value);
}

// A HParamsPluginData (version 0, left out) holding `data` in `field`.
std::string plugin_data(PluginDataField field, const ProtoWriter& data) {
  ProtoWriter w;
  w.add_message(field, data);
  return w.bytes();
}

void check_hparam_info(const HParamInfo& h) {
  using Type = HParamInfo::Type;
  TERN_CHECK_ARG(!h.name.empty(), "hparams experiment: an hparam has an empty name");
  TERN_CHECK_ARG(h.discrete_strings.empty() || h.type == Type::kString, "hparam '", h.name,
                 "': discrete strings need type string");
  TERN_CHECK_ARG((h.discrete_numbers.empty() && !h.interval) || h.type == Type::kFloat, "hparam '",
                 h.name, "': a numeric domain needs type float");
  TERN_CHECK_ARG(h.discrete_numbers.empty() || !h.interval, "hparam '", h.name,
                 "': has both discrete values and an interval (TensorBoard keeps one)");
  for (double d : h.discrete_numbers)
    TERN_CHECK_ARG(std::isfinite(d), "hparam '", h.name, "': discrete value ", d, " is not finite");
  if (h.interval) {
    auto [lo, hi] = *h.interval;
    TERN_CHECK_ARG(std::isfinite(lo) && std::isfinite(hi) && lo <= hi, "hparam '", h.name,
                   "': interval [", lo, ", ", hi, "] is not a finite range");
  }
}

ProtoWriter encode_hparam_info(const HParamInfo& h) {
  using Type = HParamInfo::Type;
  ProtoWriter w, discrete;
  w.add_bytes(kHName, h.name);
  w.add_varint(kHType, h.type == Type::kString ? kDataTypeString
                       : h.type == Type::kBool ? kDataTypeBool
                                               : kFloat64);
  for (const auto& s : h.discrete_strings) discrete.add_message(kListValues, encode_value(s));
  for (double d : h.discrete_numbers) discrete.add_message(kListValues, encode_value(d));
  if (h.type == Type::kBool) {
    discrete.add_message(kListValues, encode_value(false));
    discrete.add_message(kListValues, encode_value(true));
  }
  if (!discrete.bytes().empty()) w.add_message(kDomainDiscrete, discrete);
  if (h.interval) {
    ProtoWriter interval;
    add_double_field(interval, kMinValue, h.interval->first);
    add_double_field(interval, kMaxValue, h.interval->second);
    w.add_message(kDomainInterval, interval);
  }
  return w;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// An event holding one hparams summary value (step 0).
Event hparams_event(std::string_view tag, std::string content, double wall_time) {
  Event e{.wall_time = wall_time > 0 ? wall_time : now_seconds(), .has_summary = true};
  e.summary.push_back({.tag = std::string(tag),
                       .kind = SummaryKind::kPluginData,
                       .plugin_name = std::string(kHParamsPluginName),
                       .plugin_content = std::move(content)});
  return e;
}

// --- decoding ---

HParamValue decode_value(ProtoReader r, const std::string& name) {
  ProtoField f;
  std::optional<HParamValue> v;
  while (r.next(f)) {
    if (f.number == kNumberValue && f.type == WireType::kFixed64) v = f.as_double();
    if (f.number == kStringValue && f.type == WireType::kLengthDelimited)
      v = std::string(f.payload);
    if (f.number == kBoolValue && f.type == WireType::kVarint) v = f.value != 0;
  }
  if (!v) r.fail(str_cat("hparam '", name, "' value is not a number, string or bool"));
  return *v;
}

HParamInfo decode_hparam_info(ProtoReader r) {
  HParamInfo h;
  ProtoField f;
  uint64_t type = kDataTypeUnset;
  bool bools = false;
  while (r.next(f)) {
    if (f.type == WireType::kLengthDelimited && f.number == kHName) h.name = std::string(f.payload);
    if (f.type == WireType::kVarint && f.number == kHType) type = f.value;
    if (f.type == WireType::kLengthDelimited && f.number == kDomainDiscrete) {
      h.interval.reset();  // a oneof: the last member read wins
      h.discrete_strings.clear();
      h.discrete_numbers.clear();
      ProtoReader list = r.nested(f);
      ProtoField lf;
      while (list.next(lf)) {
        if (lf.number != kListValues || lf.type != WireType::kLengthDelimited) continue;
        HParamValue v = decode_value(list.nested(lf), h.name);
        if (auto* d = std::get_if<double>(&v)) h.discrete_numbers.push_back(*d);
        if (auto* s = std::get_if<std::string>(&v)) h.discrete_strings.push_back(std::move(*s));
        if (std::holds_alternative<bool>(v)) bools = true;
      }
    }
    if (f.type == WireType::kLengthDelimited && f.number == kDomainInterval) {
      h.discrete_strings.clear();
      h.discrete_numbers.clear();
      ProtoReader in = r.nested(f);
      ProtoField inf;
      std::pair<double, double> range{0, 0};
      while (in.next(inf)) {
        if (inf.type != WireType::kFixed64) continue;
        if (inf.number == kMinValue) range.first = inf.as_double();
        if (inf.number == kMaxValue) range.second = inf.as_double();
      }
      h.interval = range;
    }
  }
  // DATA_TYPE_UNSET (TensorBoard's writer leaves it for an hparam without a domain): by domain.
  if (type == kDataTypeUnset)
    type = !h.discrete_strings.empty() ? kDataTypeString : bools ? kDataTypeBool : kFloat64;
  h.type = type == kDataTypeString ? HParamInfo::Type::kString
           : type == kDataTypeBool ? HParamInfo::Type::kBool
                                   : HParamInfo::Type::kFloat;
  return h;
}

MetricInfo decode_metric_info(ProtoReader r) {
  MetricInfo m;
  ProtoField f;
  while (r.next(f)) {
    if (f.type != WireType::kLengthDelimited) continue;
    if (f.number == kMetricDisplayName) m.display_name = std::string(f.payload);
    if (f.number != kMetricName) continue;
    ProtoReader n = r.nested(f);
    ProtoField nf;
    while (n.next(nf)) {
      if (nf.type != WireType::kLengthDelimited) continue;
      if (nf.number == kMetricGroup) m.group = std::string(nf.payload);
      if (nf.number == kMetricTag) m.tag = std::string(nf.payload);
    }
  }
  return m;
}

void decode_experiment(ProtoReader r, HParamsRecord& out) {
  out.has_experiment = true;
  ProtoField f;
  while (r.next(f)) {
    if (f.number == kTimeCreatedSecs && f.type == WireType::kFixed64)
      out.experiment_time_secs = f.as_double();
    if (f.type != WireType::kLengthDelimited) continue;
    if (f.number == kHParamInfos) out.hparams.push_back(decode_hparam_info(r.nested(f)));
    if (f.number == kMetricInfos) out.metrics.push_back(decode_metric_info(r.nested(f)));
  }
}

void decode_session_start(ProtoReader r, HParamsRecord& out) {
  out.has_session_start = true;
  ProtoField f;
  while (r.next(f)) {
    if (f.number == kStartTimeSecs && f.type == WireType::kFixed64)
      out.session.start_time_secs = f.as_double();
    if (f.type != WireType::kLengthDelimited) continue;
    if (f.number == kGroupName) out.session.group_name = std::string(f.payload);
    if (f.number != kStartHParams) continue;
    ProtoReader entry = r.nested(f);
    ProtoField ef;
    std::string key;
    std::optional<ProtoReader> value;
    while (entry.next(ef)) {
      if (ef.type != WireType::kLengthDelimited) continue;
      if (ef.number == kKey) key = std::string(ef.payload);
      if (ef.number == kMapValue) value = entry.nested(ef);
    }
    if (!value) entry.fail(str_cat("hparam '", key, "' has no value"));
    out.session.hparams.insert_or_assign(key, decode_value(*value, key));
  }
}

void decode_session_end(ProtoReader r, HParamsRecord& out) {
  out.has_session_end = true;
  out.session.status = Status::kUnknown;
  ProtoField f;
  while (r.next(f)) {
    if (f.number == kEndStatus && f.type == WireType::kVarint)
      out.session.status = status_from_number(f.value);
    if (f.number == kEndTimeSecs && f.type == WireType::kFixed64)
      out.session.end_time_secs = f.as_double();
  }
}

}  // namespace

// --- encoding ---

std::string hparams_experiment_content(const std::vector<HParamInfo>& hparams,
                                       const std::vector<MetricInfo>& metrics, double time_secs) {
  std::set<std::string> names;
  std::set<std::pair<std::string, std::string>> metric_names;
  ProtoWriter experiment;
  add_double_field(experiment, kTimeCreatedSecs, time_secs);
  for (const auto& h : hparams) {
    check_hparam_info(h);
    TERN_CHECK_ARG(names.insert(h.name).second, "hparams experiment: hparam '", h.name,
                   "' is listed twice");
    experiment.add_message(kHParamInfos, encode_hparam_info(h));
  }
  for (const auto& m : metrics) {
    TERN_CHECK_ARG(!m.tag.empty(), "hparams experiment: a metric has an empty tag");
    TERN_CHECK_ARG(metric_names.insert({m.group, m.tag}).second, "hparams experiment: metric '",
                   m.tag, "' (group '", m.group, "') is listed twice");
    ProtoWriter name, info;
    if (!m.group.empty()) name.add_bytes(kMetricGroup, m.group);
    name.add_bytes(kMetricTag, m.tag);
    info.add_message(kMetricName, name);
    if (!m.display_name.empty()) info.add_bytes(kMetricDisplayName, m.display_name);
    experiment.add_message(kMetricInfos, info);
  }
  return plugin_data(kExperiment, experiment);
}

std::string hparams_session_start_content(const HParamsSession& s) {
  ProtoWriter start;
  for (const auto& [name, value] : s.hparams) {
    TERN_CHECK_ARG(!name.empty(), "hparams session: an hparam has an empty name");
    const double* d = std::get_if<double>(&value);
    TERN_CHECK_ARG(!d || std::isfinite(*d), "hparams session: hparam '", name, "' = ", *d,
                   " is not finite");
    ProtoWriter entry;
    entry.add_bytes(kKey, name);
    entry.add_message(kMapValue, encode_value(value));
    start.add_message(kStartHParams, entry);
  }
  if (!s.group_name.empty()) start.add_bytes(kGroupName, s.group_name);
  add_double_field(start, kStartTimeSecs, s.start_time_secs);
  return plugin_data(kSessionStart, start);
}

std::string hparams_session_end_content(const HParamsSession& s) {
  ProtoWriter end;
  if (status_number(s.status) != 0) end.add_varint(kEndStatus, status_number(s.status));
  add_double_field(end, kEndTimeSecs, s.end_time_secs);
  return plugin_data(kSessionEnd, end);
}

void write_hparams_experiment(const std::string& dir, const std::vector<HParamInfo>& hparams,
                              const std::vector<MetricInfo>& metrics, double time_secs) {
  std::string content = hparams_experiment_content(hparams, metrics, time_secs);
  EventFileWriter w(dir);
  w.write(hparams_event(kHParamsExperimentTag, std::move(content), time_secs));
  w.flush();
}

void write_hparams_session(const std::string& session_dir, const HParamsSession& session) {
  std::string start = hparams_session_start_content(session);  // checks before creating files
  for (const auto& [tag, step, value] : session.metrics)
    TERN_CHECK_ARG(!tag.empty(), "hparams session: a metric at step ", step, " has an empty tag");
  EventFileWriter w(session_dir);
  w.write(hparams_event(kHParamsSessionStartTag, std::move(start), session.start_time_secs));
  for (const auto& [tag, step, value] : session.metrics) w.add_scalar(tag, value, step);
  if (session.status != Status::kRunning) {
    w.write(hparams_event(kHParamsSessionEndTag, hparams_session_end_content(session),
                          session.end_time_secs));
  }
  w.flush();
}

// --- reading ---

void decode_hparams_content(std::string_view content, const std::string& what,
                            HParamsRecord& record) {
  ProtoReader r(content, 0, what);
  ProtoField f;
  uint64_t version = 0;
  std::optional<ProtoField> data;
  while (r.next(f)) {
    if (f.number == kVersion && f.type == WireType::kVarint) version = f.value;
    if (f.number >= kExperiment && f.number <= kSessionEnd && f.type == WireType::kLengthDelimited)
      data = f;  // a oneof: the last member read wins
  }
  if (version != 0)
    r.fail_at(0, str_cat("hparams plugin data version ", version, " (tern reads version 0)"));
  if (!data) return;
  if (data->number == kExperiment) decode_experiment(r.nested(*data), record);
  if (data->number == kSessionStart) decode_session_start(r.nested(*data), record);
  if (data->number == kSessionEnd) decode_session_end(r.nested(*data), record);
}

HParamsRecord read_hparams_events(const std::string& events_file) {
  EventFileContents contents = read_event_file(events_file);
  HParamsRecord record;
  for (size_t i = 0; i < contents.events.size(); ++i) {
    const Event& e = contents.events[i];
    for (const auto& v : e.summary) {
      if (v.kind == SummaryKind::kScalar)
        record.session.metrics.emplace_back(v.tag, e.step, v.scalar);
      if (v.plugin_name != kHParamsPluginName) continue;
      std::string what = str_cat("event file '", events_file, "' record ", i, " (", v.tag, ")");
      decode_hparams_content(v.plugin_content, what, record);
    }
  }
  return record;
}

}  // namespace tern::io
