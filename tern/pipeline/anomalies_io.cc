// anomalies.json (checked on reading, like statistics.json) and anomalies.md, the table a
// person reads (validate.h).
#include <filesystem>

#include "tern/io/atomic_file.h"
#include "tern/pipeline/json_fields.h"
#include "tern/pipeline/validate.h"

namespace tern::pipeline {

namespace {

constexpr const char* kFormat = "tern.anomalies";
constexpr uint64_t kMaxFileBytes = uint64_t{256} << 20;

// Text for a markdown table cell: no line breaks, pipes escaped, HTML specials as entities
// (markdown renders inline HTML), backticks escaped.
std::string md_cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '|':
        out += "\\|";
        break;
      case '`':
        out += "\\`";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string anomalies_to_json(const std::vector<Anomaly>& anomalies) {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["version"] = 1;
  int64_t errors = 0, warnings = 0;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Anomaly& a : anomalies) {
    (a.severity == "error" ? errors : warnings) += 1;
    list.push_back({{"feature", a.feature},
                    {"kind", a.kind},
                    {"severity", a.severity},
                    {"split", a.split},
                    {"message", a.message}});
  }
  j["errors"] = errors;
  j["warnings"] = warnings;
  j["anomalies"] = std::move(list);
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string anomalies_to_markdown(const std::vector<Anomaly>& anomalies) {
  int64_t errors = 0, warnings = 0;
  for (const Anomaly& a : anomalies) (a.severity == "error" ? errors : warnings) += 1;
  std::string md = str_cat("# Data validation: ", errors, errors == 1 ? " error, " : " errors, ",
                           warnings, warnings == 1 ? " warning\n\n" : " warnings\n\n");
  if (anomalies.empty())
    return md + "The data matches the schema; no skew or drift above the thresholds.\n";
  md += errors > 0 ? "Errors stop the pipeline before training. Fix the data, or edit the schema "
                     "(widen a range, add domain values, lower a severity) and pin it.\n\n"
                   : "Only warnings: the pipeline goes on.\n\n";
  md += "| severity | feature | kind | split | what |\n|---|---|---|---|---|\n";
  for (const Anomaly& a : anomalies)
    md += str_cat("| ", md_cell(a.severity), " | ", md_cell(a.feature), " | ", md_cell(a.kind),
                  " | ", md_cell(a.split), " | ", md_cell(a.message), " |\n");
  return md;
}

void write_anomalies(const std::vector<Anomaly>& anomalies, const std::string& dir) {
  std::filesystem::create_directories(dir);
  io::write_file_atomically(dir + "/anomalies.json", anomalies_to_json(anomalies));
  io::write_file_atomically(dir + "/anomalies.md", anomalies_to_markdown(anomalies));
}

std::vector<Anomaly> parse_anomalies_json(std::string_view text, const std::string& name) {
  const nlohmann::json doc = parse_json_text(text, name);
  const JsonField root(doc, "", name);
  root.only({"format", "version", "errors", "warnings", "anomalies"});
  if (root["format"].as_string() != kFormat)
    root["format"].fail(str_cat("expected \"", kFormat, "\""));
  if (root["version"].as_int() != 1) root["version"].fail("this tern reads version 1");
  std::vector<Anomaly> out;
  const JsonField list = root["anomalies"];
  int64_t errors = 0;
  for (size_t i = 0; i < list.array_size(); ++i) {
    const JsonField a = list.at(i);
    a.only({"feature", "kind", "severity", "split", "message"});
    Anomaly x{a["feature"].as_string(), a["kind"].as_string(), a["severity"].as_string(),
              a["message"].as_string(), a["split"].as_string()};
    if (x.severity != "error" && x.severity != "warning")
      a["severity"].fail("expected \"error\" or \"warning\"");
    errors += x.severity == "error";
    out.push_back(std::move(x));
  }
  if (root["errors"].as_count() != errors)
    root["errors"].fail(str_cat("says ", root["errors"].as_count(), ", the list holds ", errors));
  if (root["warnings"].as_count() != static_cast<int64_t>(out.size()) - errors)
    root["warnings"].fail("does not match the list");
  return out;
}

std::vector<Anomaly> read_anomalies_json(const std::string& path) {
  return parse_anomalies_json(io::read_file(path, kMaxFileBytes), path);
}

}  // namespace tern::pipeline
