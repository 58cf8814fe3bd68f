// TensorBoard's HParams dashboard data, written and read by hand (docs/hparams_events.md): the
// experiment summary (hyperparameter and metric definitions) in a sweep's root log dir, and per
// trial ("session") a run directory holding the session start (hyperparameter values), the
// metric scalars and the session end (status). Each hparams summary is an event-file Summary
// value tagged "_hparams_/...", with plugin_data {plugin_name "hparams", content = a serialized
// HParamsPluginData} and an empty float tensor, as TensorBoard's own hparams summary writer does.
//
// Does: encode/decode HParamsPluginData (version 0) with tern/format, write and read event files
// through event_file.h. Does not: run a sweep, choose directories, or read the hparams plugin's
// HTTP API messages (SessionGroup, ListSessionGroups*), which TensorBoard computes itself.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace tern::io {

inline constexpr std::string_view kHParamsPluginName = "hparams";
inline constexpr std::string_view kHParamsExperimentTag = "_hparams_/experiment";
inline constexpr std::string_view kHParamsSessionStartTag = "_hparams_/session_start_info";
inline constexpr std::string_view kHParamsSessionEndTag = "_hparams_/session_end_info";

// One hyperparameter of the experiment. The domain is at most one of: discrete_strings (kString),
// discrete_numbers (kFloat), interval (kFloat). A kBool domain is always written as {false, true}.
struct HParamInfo {
  std::string name;
  enum class Type { kFloat, kString, kBool } type = Type::kFloat;
  std::vector<std::string> discrete_strings;
  std::vector<double> discrete_numbers;
  std::optional<std::pair<double, double>> interval;  // [min, max]
};

// A metric: scalar summaries tagged `tag` in the run <session dir>/<group> ("" = the session dir).
struct MetricInfo {
  std::string tag;
  std::string group;
  std::string display_name;
};

using HParamValue = std::variant<double, std::string, bool>;

// Writes <dir>/events.out.tfevents.* holding the experiment summary (time_secs is the event's
// wall time and Experiment.time_created_secs). InvalidArgument for an empty or repeated name or
// tag, a domain that does not fit the type, two domains, or a non-finite domain bound.
void write_hparams_experiment(const std::string& dir, const std::vector<HParamInfo>& hparams,
                              const std::vector<MetricInfo>& metrics, double time_secs);

// One trial. status kRunning writes no session end, so a later call with the final status can
// add it (TensorBoard shows a session without an end as status unknown).
struct HParamsSession {
  std::map<std::string, HParamValue> hparams;
  std::string group_name;  // "" = the session is its own group
  double start_time_secs = 0, end_time_secs = 0;
  enum class Status { kUnknown, kSuccess, kFailure, kRunning } status = Status::kSuccess;
  std::vector<std::tuple<std::string, int64_t, double>> metrics;  // (tag, step, value)
};

// Writes <session_dir>/events.out.tfevents.*: session start (hparams), the metric scalars at their
// steps (simple_value: float32), session end. InvalidArgument for an empty hparam name or metric
// tag, or a non-finite number value (TensorBoard's JSON API cannot carry it).
void write_hparams_session(const std::string& session_dir, const HParamsSession& session);

// What one event file holds of the above.
struct HParamsRecord {
  bool has_experiment = false;
  std::vector<HParamInfo> hparams;  // experiment
  std::vector<MetricInfo> metrics;  // experiment
  double experiment_time_secs = 0;
  bool has_session_start = false;
  bool has_session_end = false;
  // Start: hparams, group_name, start_time_secs. End: status (kUnknown without one),
  // end_time_secs. metrics: every scalar value in the file, in order.
  HParamsSession session{.status = HParamsSession::Status::kUnknown};
};

// Reads an event file written by the functions above (or by TensorBoard's hparams summaries).
// DataLoss naming the file for corrupt bytes, a plugin_data version other than 0, or an hparam
// value that is not a number, string or bool.
HParamsRecord read_hparams_events(const std::string& events_file);

// --- the serialized HParamsPluginData (plugin_data.content), for tests, fuzzing, `tern logs` ---
std::string hparams_experiment_content(const std::vector<HParamInfo>& hparams,
                                       const std::vector<MetricInfo>& metrics, double time_secs);
std::string hparams_session_start_content(const HParamsSession& session);
std::string hparams_session_end_content(const HParamsSession& session);
// Decodes one HParamsPluginData into `record` (experiment, session start or session end).
// DataLoss naming `what` as read_hparams_events.
void decode_hparams_content(std::string_view content, const std::string& what,
                            HParamsRecord& record);

}  // namespace tern::io
