// report.html: the statistics of the splits side by side, one row per feature (the union over
// the splits, by name), one column per split: the numbers, an inline SVG histogram (numeric) or
// top-values bar chart (categorical), image shapes, formats and channel means with a swatch of
// the mean colour; the anomalies (validate.h), when given, listed first and marked in their
// rows. One self-contained page: no JavaScript, no external files. Every string that comes from
// the data (feature names, values, file names, messages) is HTML-escaped.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tern/pipeline/statistics.h"
#include "tern/pipeline/validate.h"

namespace tern::pipeline {

using SplitStatistics = std::vector<std::pair<std::string, const DatasetStatistics*>>;

std::string statistics_report_html(const SplitStatistics& splits,
                                   const std::vector<Anomaly>& anomalies = {});
// Writes statistics_report_html atomically.
void write_statistics_report(const SplitStatistics& splits, const std::string& html_path,
                             const std::vector<Anomaly>& anomalies = {});

// `text` with & < > " ' as entities.
std::string html_escape(std::string_view text);

}  // namespace tern::pipeline
