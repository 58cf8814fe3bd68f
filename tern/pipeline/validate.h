// ExampleValidator: statistics checked against the schema, training against evaluation data
// (skew) and against the previous run's training data (drift); anomalies.json + anomalies.md
// (docs/pipeline.md "Validation").
//
//   std::vector<Anomaly> a = validate_statistics(schema, train, &eval, previous ? &*previous :
//   nullptr); write_anomalies(a, "artifacts/validate/7"); if (has_errors(a)) ... stop before
//   training
//
// Kinds (schema.h's default_severities; the schema sets the severity per kind and per feature):
//   missing_feature  a schema feature no example of a split holds (min_count >= 1): a dropped
//   column presence         held by a smaller share of a split's examples than min_fraction
//   new_feature      a feature the schema does not know
//   type_change      another type than the schema's (also: some examples of another type)
//   value_count      values per example outside the schema's [min, max]
//   out_of_range     numeric values outside the schema's range (how many, from the histogram)
//   out_of_domain    categorical values outside the domain, each named with its count; a warning
//                    while the share of values in the domain stays >= domain_min_fraction < 1
//   image_shape, image_format, invalid_image   images of another shape / format, unreadable ones
//   skew             train vs eval: L-infinity distance of the normalized value counts
//                    (categorical) or Jensen-Shannon divergence (numeric) above the threshold
//                    and above what sampling alone gives for splits of these sizes
//   drift            the same between the previous run's training data and this one's
// Sampling noise, so that small splits (the tabular example's 35 eval rows) do not raise false
// alarms while large ones are held to the threshold: a categorical value's shares must differ by
// more than 4 standard deviations of their difference, sqrt(p (1 - p) (1/n_a + 1/n_b)) with p the
// pooled share, plus (1/n_a + 1/n_b) / 2 (a continuity correction); a Jensen-Shannon divergence
// must be above the 99.9% point of its distribution for two samples of one distribution (8 ln 2 JS
// / (1/n_a + 1/n_b) is about chi-square with k - 1 degrees of freedom), over k = sqrt(smaller n)
// bins (at most the histograms' 20). Tolerances the schema sets: out_of_range values within
// range_margin x the range's width of it, and out_of_domain values while the domain holds
// domain_min_fraction of a split's values, are warnings. Each anomaly's message names the feature,
// the split and the numbers, e.g. "feature 'age': eval values up to 412 outside the schema's range
// [17, 90] (37 of 1,200 values)".
#pragma once

#include <string>
#include <vector>

#include "tern/pipeline/schema.h"
#include "tern/pipeline/statistics.h"

namespace tern::pipeline {

struct Anomaly {
  std::string feature, kind, severity, message;
  std::string split;  // "train", "eval", "train vs eval" (skew), "previous vs train" (drift)
  bool operator==(const Anomaly&) const = default;
};

// `eval` and `previous_train` may be null (no skew / drift check). Sorted by feature, then kind.
std::vector<Anomaly> validate_statistics(const Schema& schema, const DatasetStatistics& train,
                                         const DatasetStatistics* eval,
                                         const DatasetStatistics* previous_train);

bool has_errors(const std::vector<Anomaly>& anomalies);

// Writes <dir>/anomalies.json and <dir>/anomalies.md (a table a person reads), atomically.
void write_anomalies(const std::vector<Anomaly>& anomalies, const std::string& dir);
std::string anomalies_to_json(const std::vector<Anomaly>& anomalies);
std::string anomalies_to_markdown(const std::vector<Anomaly>& anomalies);
// Checked like read_statistics_json: InvalidArgument naming `name` and the key.
std::vector<Anomaly> parse_anomalies_json(std::string_view text, const std::string& name);
std::vector<Anomaly> read_anomalies_json(const std::string& path);

// The distances behind skew and drift (also shown in the report).
// max over values |p_a(v) - p_b(v)|, p = count / all values (those past the counting cap too).
double linf_distance(const BytesStatistics& a, const BytesStatistics& b);
// Both histograms spread (uniformly within each bin) over js_bins equal-width bins covering both
// ranges, then JS = (KL(p || m) + KL(q || m)) / 2 with m = (p + q) / 2, log base 2: in [0, 1].
double js_divergence(const NumericStatistics& a, const NumericStatistics& b);
// sqrt of the smaller value count, in [2, the finer histogram's bins] (those bins without counts).
size_t js_bins(const NumericStatistics& a, const NumericStatistics& b);
// The 99.9% point of JS for two samples of these sizes from one distribution (above).
double js_noise_floor(const NumericStatistics& a, const NumericStatistics& b);

}  // namespace tern::pipeline
