// HParams plugin summaries (docs/hparams_events.md): an experiment and two sessions written to a
// temp dir, read back twice (read_hparams_events, and a walk of the raw Event / Summary /
// HParamsPluginData bytes), the exact bytes of small contents, and the checks on bad input.
#include "tern/io/hparams_plugin.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tern/base/error.h"
#include "tern/format/proto_reader.h"
#include "tern/format/test_util.h"
#include "tern/io/event_file.h"
#include "tests/support/random_tensor.h"

namespace tern::io {
namespace {

using format::ProtoField;
using format::ProtoReader;
using format::testing::unhex;
using Status = HParamsSession::Status;
using Type = HParamInfo::Type;

std::string temp_dir(const std::string& name) {
  std::string d = str_cat(::testing::TempDir(), "/tern_hparams_", name, "_", ::getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// The single event file directly in `dir`.
std::string only_event_file(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().find("tfevents") != std::string::npos)
      files.push_back(e.path().string());
  }
  EXPECT_EQ(files.size(), 1u) << dir;
  return files.empty() ? "" : files[0];
}

std::vector<HParamInfo> sweep_hparams() {
  return {{.name = "learning_rate", .type = Type::kFloat, .interval = std::pair{1e-4, 0.1}},
          {.name = "weight_decay", .type = Type::kFloat, .discrete_numbers = {0, 1e-4, 1e-3}},
          {.name = "augment", .type = Type::kString, .discrete_strings = {"none", "flip"}},
          {.name = "nesterov", .type = Type::kBool},
          {.name = "note", .type = Type::kString}};
}

std::vector<MetricInfo> sweep_metrics() {
  return {{.tag = "val_accuracy", .display_name = "validation accuracy"},
          {.tag = "epoch_loss", .group = "validation"}};
}

HParamsSession trial(int i) {
  HParamsSession s;
  s.hparams = {{"learning_rate", i == 0 ? 0.01 : 0.1},
               {"weight_decay", 0.0},
               {"augment", std::string(i == 0 ? "flip" : "")},
               {"nesterov", i == 0}};
  s.group_name = i == 0 ? "group-a" : "";
  s.start_time_secs = 1700000000.5 + i;
  s.end_time_secs = 1700000100.25 + i;
  s.status = i == 0 ? Status::kSuccess : Status::kFailure;
  s.metrics = {{"val_accuracy", 1, 0.5 + i * 0.125}, {"val_accuracy", 2, 0.75}};
  return s;
}

TEST(HParamsPlugin, ExperimentAndSessionsReadBack) {
  const std::string root = temp_dir("sweep");
  write_hparams_experiment(root, sweep_hparams(), sweep_metrics(), 1699999999.0);
  write_hparams_session(root + "/trial-0", trial(0));
  write_hparams_session(root + "/trial-1", trial(1));
  ASSERT_EQ(find_event_files(root).size(), 3u);

  HParamsRecord exp = read_hparams_events(only_event_file(root));
  EXPECT_TRUE(exp.has_experiment);
  EXPECT_FALSE(exp.has_session_start || exp.has_session_end);
  EXPECT_EQ(exp.experiment_time_secs, 1699999999.0);
  ASSERT_EQ(exp.hparams.size(), 5u);
  EXPECT_EQ(exp.hparams[0].name, "learning_rate");
  EXPECT_EQ(exp.hparams[0].type, Type::kFloat);
  EXPECT_EQ(exp.hparams[0].interval, (std::pair{1e-4, 0.1}));
  EXPECT_TRUE(exp.hparams[0].discrete_numbers.empty());
  EXPECT_EQ(exp.hparams[1].discrete_numbers, (std::vector<double>{0, 1e-4, 1e-3}));
  EXPECT_FALSE(exp.hparams[1].interval);
  EXPECT_EQ(exp.hparams[2].type, Type::kString);
  EXPECT_EQ(exp.hparams[2].discrete_strings, (std::vector<std::string>{"none", "flip"}));
  EXPECT_EQ(exp.hparams[3].type, Type::kBool);  // domain {false, true}, implied by the type
  EXPECT_TRUE(exp.hparams[3].discrete_strings.empty() && exp.hparams[3].discrete_numbers.empty());
  EXPECT_EQ(exp.hparams[4].type, Type::kString);
  ASSERT_EQ(exp.metrics.size(), 2u);
  EXPECT_EQ(exp.metrics[0].tag, "val_accuracy");
  EXPECT_EQ(exp.metrics[0].group, "");
  EXPECT_EQ(exp.metrics[0].display_name, "validation accuracy");
  EXPECT_EQ(exp.metrics[1].tag, "epoch_loss");
  EXPECT_EQ(exp.metrics[1].group, "validation");
  EXPECT_EQ(exp.metrics[1].display_name, "");

  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    const HParamsSession want = trial(i);
    HParamsRecord r = read_hparams_events(only_event_file(str_cat(root, "/trial-", i)));
    EXPECT_FALSE(r.has_experiment);
    EXPECT_TRUE(r.has_session_start && r.has_session_end);
    EXPECT_EQ(r.session.hparams, want.hparams);  // double, string ("" too), bool (false too)
    EXPECT_EQ(r.session.group_name, want.group_name);
    EXPECT_EQ(r.session.start_time_secs, want.start_time_secs);
    EXPECT_EQ(r.session.end_time_secs, want.end_time_secs);
    EXPECT_EQ(r.session.status, want.status);
    EXPECT_EQ(r.session.metrics, want.metrics);  // the values are exact in float32
  }
}

// The same files walked by hand: Event -> Summary.Value -> metadata.plugin_data -> content, and
// the tensor TensorBoard's writer puts beside it (NULL_TENSOR: 08 01 12 02 12 00).
TEST(HParamsPlugin, EventLayoutMatchesTensorBoardsWriter) {
  const std::string dir = temp_dir("layout");
  HParamsSession s = trial(0);
  write_hparams_session(dir, s);
  std::string bytes;
  {
    std::vector<Event> events = read_event_file(only_event_file(dir)).events;
    ASSERT_EQ(events.size(), 5u);  // file_version, start, 2 scalars, end
    EXPECT_EQ(events[0].file_version, "brain.Event:2");
    const SummaryValue& start = events[1].summary.at(0);
    EXPECT_EQ(start.tag, "_hparams_/session_start_info");
    EXPECT_EQ(start.kind, SummaryKind::kPluginData);
    EXPECT_EQ(start.plugin_name, "hparams");
    EXPECT_EQ(start.plugin_content, hparams_session_start_content(s));
    EXPECT_EQ(events[1].wall_time, s.start_time_secs);
    EXPECT_EQ(events[2].summary.at(0).kind, SummaryKind::kScalar);
    EXPECT_EQ(events[3].step, 2);
    EXPECT_EQ(events[4].summary.at(0).tag, "_hparams_/session_end_info");
    EXPECT_EQ(events[4].wall_time, s.end_time_secs);
    EXPECT_EQ(events[4].summary.at(0).plugin_content, hparams_session_end_content(s));
    bytes = encode_event(events[4]);
  }
  // Event{wall_time=1, summary=5{value=1{tag=1, tensor=8, metadata=9{plugin_data=1{name,
  // content}}}}}
  ProtoReader event(bytes, 0, "end event");
  ProtoField f;
  std::string value;
  while (event.next(f)) {
    if (f.number == 5) {
      ProtoReader summary = event.nested(f);
      ProtoField sf;
      ASSERT_TRUE(summary.next(sf));
      value = std::string(sf.payload);
    }
  }
  ProtoReader v(value, 0, "value");
  std::string tensor, metadata;
  while (v.next(f)) {
    if (f.number == 8) tensor = std::string(f.payload);
    if (f.number == 9) metadata = std::string(f.payload);
  }
  EXPECT_EQ(tensor, unhex("08 01 12 02 12 00"));
  // SessionEndInfo{status=1: 1 (STATUS_SUCCESS), end_time_secs=2: 1700000100.25} in field 4.
  const std::string end = unhex("22 0b 08 01 11 00 00 10 59 fc 54 d9 41");
  EXPECT_EQ(metadata, unhex("0a 18 0a 07") + "hparams" + unhex("12 0d") + end);
}

TEST(HParamsPlugin, ContentBytes) {
  // HParamsPluginData{session_start_info=3{hparams=1{key "lr", value{number_value=2: 0.5}},
  // hparams=1{key "x", value{bool_value=4: false}}}}: map entries in key order; a Value's false
  // is written (a oneof member), a start time of 0 is not (a proto3 default).
  HParamsSession s;
  s.hparams = {{"x", false}, {"lr", 0.5}};
  EXPECT_EQ(hparams_session_start_content(s),
            unhex("1a 1a 0a 0f 0a 02 6c 72 12 09 11 00 00 00 00 00 00 e0 3f"
                  " 0a 07 0a 01 78 12 02 20 00"));
  // Experiment{hparam_infos=4{name=1 "b", type=4: 2 (BOOL),
  // domain_discrete=5{values=1{bool_value=4: 0}, values=1{bool_value=4: 1}}}}.
  EXPECT_EQ(hparams_experiment_content({{.name = "b", .type = Type::kBool}}, {}, 0),
            unhex("12 11 22 0f 0a 01 62 20 02 2a 08 0a 02 20 00 0a 02 20 01"));
  // A running session's end: STATUS_RUNNING = 3 (end_time_secs 0 left out).
  EXPECT_EQ(hparams_session_end_content({.status = Status::kRunning}), unhex("22 02 08 03"));
}

TEST(HParamsPlugin, RunningSessionHasNoEndUntilALaterCall) {
  const std::string root = temp_dir("running");
  write_hparams_experiment(root, sweep_hparams(), sweep_metrics(), 1699999999.0);
  const std::string dir = root + "/trial-0";
  HParamsSession s = trial(0);
  s.status = Status::kRunning;
  s.metrics.resize(1);
  write_hparams_session(dir, s);
  HParamsRecord r = read_hparams_events(only_event_file(dir));
  EXPECT_TRUE(r.has_session_start);
  EXPECT_FALSE(r.has_session_end);
  EXPECT_EQ(r.session.status, Status::kUnknown);
  // The trial ends: a second file in the same run adds the last metric and the end.
  s.status = Status::kSuccess;
  s.metrics = {trial(0).metrics[1]};
  write_hparams_session(dir, s);
  std::vector<std::string> files = find_event_files(dir);
  ASSERT_EQ(files.size(), 2u);
  r = read_hparams_events(files[1]);
  EXPECT_TRUE(r.has_session_start && r.has_session_end);
  EXPECT_EQ(r.session.status, Status::kSuccess);
  EXPECT_EQ(r.session.metrics, s.metrics);
}

TEST(HParamsPlugin, BadDefinitionsAreRejectedBeforeAnyFileIsWritten) {
  const std::string dir = temp_dir("bad");
  auto experiment = [&](HParamInfo h) { write_hparams_experiment(dir, {h}, {}, 0); };
  EXPECT_TERN_ERROR(experiment({.name = ""}), ErrorCode::kInvalidArgument, "empty name");
  EXPECT_TERN_ERROR(experiment({.name = "a", .type = Type::kFloat, .discrete_strings = {"x"}}),
                    ErrorCode::kInvalidArgument, "hparam 'a': discrete strings need type string");
  EXPECT_TERN_ERROR(experiment({.name = "a", .type = Type::kBool, .interval = std::pair{0.0, 1.0}}),
                    ErrorCode::kInvalidArgument, "numeric domain needs type float");
  EXPECT_TERN_ERROR(
      experiment({.name = "a", .discrete_numbers = {1}, .interval = std::pair{0.0, 1.0}}),
      ErrorCode::kInvalidArgument, "both discrete values and an interval");
  EXPECT_TERN_ERROR(experiment({.name = "a", .interval = std::pair{2.0, 1.0}}),
                    ErrorCode::kInvalidArgument, "interval [2, 1] is not a finite range");
  EXPECT_TERN_ERROR(write_hparams_experiment(dir, {{.name = "a"}, {.name = "a"}}, {}, 0),
                    ErrorCode::kInvalidArgument, "hparam 'a' is listed twice");
  EXPECT_TERN_ERROR(write_hparams_experiment(dir, {}, {{.tag = "m"}, {.tag = "m"}}, 0),
                    ErrorCode::kInvalidArgument, "metric 'm' (group '') is listed twice");
  HParamsSession s;
  s.hparams = {{"lr", std::nan("")}};
  EXPECT_TERN_ERROR(write_hparams_session(dir, s), ErrorCode::kInvalidArgument,
                    "hparam 'lr' = nan is not finite");
  EXPECT_TRUE(find_event_files(dir).empty());
}

TEST(HParamsPlugin, MalformedContentIsDataLoss) {
  HParamsRecord r;
  using format::testing::data_loss;
  EXPECT_EQ(data_loss([&] { decode_hparams_content(unhex("08 01"), "c", r); }),
            "c: hparams plugin data version 1 (tern reads version 0) at byte offset 0");
  // session_start_info{hparams{key "k", value{null_value=1: 0}}}
  EXPECT_EQ(
      data_loss([&] { decode_hparams_content(unhex("1a 09 0a 07 0a 01 6b 12 02 08 00"), "c", r); }),
      "c: hparam 'k' value is not a number, string or bool at byte offset 11");
  EXPECT_NE(data_loss([&] { decode_hparams_content(unhex("12 05 22 01"), "c", r); }), "");
}

}  // namespace
}  // namespace tern::io
