// Fuzz target: hparams plugin data (hparams_plugin.h), as a bare HParamsPluginData and inside an
// event file (TFRecord framing, Event, Summary, then plugin_data.content). Any input must decode
// or fail with DataLoss; what decodes and the writer accepts must re-encode and decode the same.
#include <cstdlib>

#include "tern/base/error.h"
#include "tern/format/tfrecord_frame.h"
#include "tern/io/event_file.h"
#include "tern/io/hparams_plugin.h"

namespace {

using namespace tern;

bool same(double a, double b) {
  return a == b || (a != a && b != b);
}

bool same_infos(const std::vector<io::HParamInfo>& a, const std::vector<io::HParamInfo>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].type != b[i].type ||
        a[i].discrete_strings != b[i].discrete_strings ||
        a[i].discrete_numbers != b[i].discrete_numbers || a[i].interval != b[i].interval)
      return false;
  }
  return true;
}

bool same_metrics(const std::vector<io::MetricInfo>& a, const std::vector<io::MetricInfo>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].tag != b[i].tag || a[i].group != b[i].group || a[i].display_name != b[i].display_name)
      return false;
  }
  return true;
}

// Runs `encode`; false when the writer refuses the decoded values (InvalidArgument).
template <typename Fn>
bool encodes(Fn&& encode, std::string& out) {
  try {
    out = encode();
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidArgument) std::abort();
    return false;
  }
  return true;
}

void check_content(std::string_view content) {
  io::HParamsRecord r;
  try {
    io::decode_hparams_content(content, "fuzz content", r);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kDataLoss) std::abort();
    return;
  }
  std::string again;
  io::HParamsRecord back;
  if (r.has_experiment && encodes(
                              [&] {
                                return io::hparams_experiment_content(r.hparams, r.metrics,
                                                                      r.experiment_time_secs);
                              },
                              again)) {
    io::decode_hparams_content(again, "re-encoded", back);
    if (!back.has_experiment || !same_infos(back.hparams, r.hparams) ||
        !same_metrics(back.metrics, r.metrics) ||
        !same(back.experiment_time_secs, r.experiment_time_secs))
      std::abort();
  }
  if (r.has_session_start &&
      encodes([&] { return io::hparams_session_start_content(r.session); }, again)) {
    io::decode_hparams_content(again, "re-encoded", back);
    if (!back.has_session_start || back.session.hparams != r.session.hparams ||
        back.session.group_name != r.session.group_name ||
        !same(back.session.start_time_secs, r.session.start_time_secs))
      std::abort();
  }
  if (r.has_session_end &&
      encodes([&] { return io::hparams_session_end_content(r.session); }, again)) {
    io::decode_hparams_content(again, "re-encoded", back);
    if (!back.has_session_end || back.session.status != r.session.status ||
        !same(back.session.end_time_secs, r.session.end_time_secs))
      std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_content(bytes);
  std::vector<std::string> records;
  try {
    records = format::tfrecord_split(bytes, "fuzz input").records;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kDataLoss) std::abort();
  }
  for (const auto& record : records) {
    io::Event e;
    try {
      e = io::decode_event(record, "fuzz event");
    } catch (const Error& err) {
      if (err.code() != ErrorCode::kDataLoss) std::abort();
      continue;
    }
    for (const auto& v : e.summary) {
      if (v.plugin_name == io::kHParamsPluginName) check_content(v.plugin_content);
    }
  }
  return 0;
}
