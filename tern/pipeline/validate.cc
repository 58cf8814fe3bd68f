// validate_statistics and the skew / drift distances (validate.h); writing and reading the
// anomaly files is anomalies_io.cc.
#include "tern/pipeline/validate.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "tern/base/error.h"

namespace tern::pipeline {

namespace {

// 1,200
std::string count_text(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

// Up to 6 significant digits, no trailing zeros: 412, 0.1234, 1.5e+07.
std::string num(double v) {
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

// 12.5%; "<0.1%" for a share too small to show.
std::string percent(double fraction) {
  if (fraction > 0 && fraction < 0.0005) return "<0.1%";
  std::ostringstream os;
  os << std::fixed;
  os.precision(1);
  os << fraction * 100 << "%";
  return os.str();
}

// Count (interpolated inside a bin) of histogram mass below `lo` and above `hi`; `exact` is
// cleared when a bin holding values straddles a bound.
double mass_outside(const std::vector<HistogramBin>& bins, double lo, double hi, bool* exact) {
  double total = 0;
  for (const HistogramBin& b : bins) {
    if (b.count <= 0) continue;
    double outside;
    if (b.high <= b.low) {
      outside = b.low < lo || b.low > hi ? 1 : 0;
    } else {
      const double width = b.high - b.low;
      const double below = std::clamp((lo - b.low) / width, 0.0, 1.0);
      const double above = std::clamp((b.high - hi) / width, 0.0, 1.0);
      outside = std::min(1.0, below + above);
    }
    if (outside > 0 && outside < 1) *exact = false;
    total += b.count * outside;
  }
  return total;
}

class Validator {
 public:
  Validator(const Schema& schema, std::vector<Anomaly>& out) : schema_(schema), out_(out) {}

  void add(const std::string& feature, const std::string& kind, const std::string& split,
           const std::string& message, const std::string& severity = "") {
    out_.push_back({feature, kind, severity.empty() ? schema_.severity_of(feature, kind) : severity,
                    message, split});
  }

  // The schema's rules on one split.
  void check_split(const DatasetStatistics& s, const std::string& split) {
    for (const FeatureSchema& fs : schema_.features) check_feature(fs, s, split);
    for (const FeatureStatistics& f : s.features)
      if (f.count > 0 && schema_.find(f.name) == nullptr)
        add(f.name, "new_feature", split,
            str_cat("feature '", f.name, "' is in ", count_text(f.count), " ", split,
                    " examples but not in the schema (", feature_type_name(f.type), ")"));
  }

  // Skew (train vs eval) or drift (previous vs train): `base` is the earlier / reference data.
  void compare(const DatasetStatistics& base, const DatasetStatistics& other, bool drift) {
    const std::string split = drift ? "previous vs train" : "train vs eval";
    const std::string base_name = drift ? "previous train" : "train";
    const std::string other_name = drift ? "train" : "eval";
    for (const FeatureSchema& fs : schema_.features) {
      const Comparator& c = drift ? fs.drift : fs.skew;
      if (c.metric.empty()) continue;
      const FeatureStatistics* a = base.find(fs.name);
      const FeatureStatistics* b = other.find(fs.name);
      if (a == nullptr || b == nullptr || a->type != fs.type || b->type != fs.type) continue;
      const std::string what = drift ? "drift" : "skew";
      if (c.metric == "infinity_norm" && a->bytes && b->bytes) {
        const double na = static_cast<double>(values(*a->bytes));
        const double nb = static_cast<double>(values(*b->bytes));
        if (na == 0 || nb == 0) continue;
        // The value whose difference of shares is largest among those past both the threshold
        // and what sampling gives for a share near theirs: 4 standard deviations of the
        // difference, plus a continuity correction (small counts have heavier tails).
        std::set<std::string> all;
        for (const auto& [v, n] : a->bytes->value_counts) all.insert(v);
        for (const auto& [v, n] : b->bytes->value_counts) all.insert(v);
        std::string at;
        double worst = 0, noise = 0;
        for (const std::string& v : all) {
          const double pa = share(*a->bytes, v), pb = share(*b->bytes, v);
          const double pooled = (pa * na + pb * nb) / (na + nb);
          const double floor_v =
              4 * std::sqrt(pooled * (1 - pooled) * (1 / na + 1 / nb)) + 0.5 * (1 / na + 1 / nb);
          const double d = std::fabs(pa - pb);
          if (d > c.threshold && d > floor_v && d > worst) worst = d, at = v, noise = floor_v;
        }
        if (worst > 0)
          add(fs.name, what, split,
              str_cat("feature '", fs.name, "': ", base_name, " and ", other_name,
                      " value distributions differ by ", num(worst), " (L-infinity, at '", at,
                      "': ", percent(share(*a->bytes, at)), " of ", base_name, " values, ",
                      percent(share(*b->bytes, at)), " of ", other_name, "), above the ", what,
                      " threshold ", num(c.threshold), " and the ", num(noise),
                      " sampling alone gives for ", count_text(static_cast<int64_t>(na)), " and ",
                      count_text(static_cast<int64_t>(nb)), " values"));
      } else if (c.metric == "jensen_shannon_divergence" && a->numeric && b->numeric &&
                 a->numeric->finite > 0 && b->numeric->finite > 0) {
        const double d = js_divergence(*a->numeric, *b->numeric);
        const double noise = js_noise_floor(*a->numeric, *b->numeric);
        if (d > c.threshold && d > noise)
          add(fs.name, what, split,
              str_cat("feature '", fs.name, "': ", base_name, " and ", other_name,
                      " distributions differ: Jensen-Shannon divergence ", num(d), " over ",
                      js_bins(*a->numeric, *b->numeric), " bins, above the ", what, " threshold ",
                      num(c.threshold), " and the ", num(noise), " sampling alone gives for ",
                      count_text(a->numeric->finite), " and ", count_text(b->numeric->finite),
                      " values (", base_name, " mean ", num(a->numeric->mean), ", std ",
                      num(a->numeric->std_dev), "; ", other_name, " mean ", num(b->numeric->mean),
                      ", std ", num(b->numeric->std_dev), ")"));
      }
    }
  }

  static int64_t values(const BytesStatistics& b) {
    int64_t total = b.other_values;
    for (const auto& [k, n] : b.value_counts) total += n;
    return total;
  }

  static double share(const BytesStatistics& b, const std::string& v) {
    int64_t total = b.other_values;
    for (const auto& [k, n] : b.value_counts) total += n;
    auto it = b.value_counts.find(v);
    return total > 0 && it != b.value_counts.end()
               ? static_cast<double>(it->second) / static_cast<double>(total)
               : 0;
  }

  static double linf(const BytesStatistics& a, const BytesStatistics& b, std::string* at) {
    std::set<std::string> values;
    for (const auto& [v, n] : a.value_counts) values.insert(v);
    for (const auto& [v, n] : b.value_counts) values.insert(v);
    double best = 0;
    for (const std::string& v : values) {
      const double d = std::fabs(share(a, v) - share(b, v));
      if (d > best) best = d, *at = v;
    }
    return best;
  }

 private:
  void check_feature(const FeatureSchema& fs, const DatasetStatistics& s,
                     const std::string& split) {
    const FeatureStatistics* f = s.find(fs.name);
    const std::string name = str_cat("feature '", fs.name, "'");
    if (f == nullptr || f->count == 0) {
      if (fs.min_count >= 1 && s.examples > 0)
        add(fs.name, "missing_feature", split,
            str_cat(name, ": missing from all ", count_text(s.examples), " ", split,
                    " examples (the schema requires it in at least ", count_text(fs.min_count),
                    "; a dropped column?)"));
      return;
    }
    if (f->count < fs.min_count)
      add(fs.name, "presence", split,
          str_cat(name, ": in ", count_text(f->count), " ", split,
                  " examples, the schema requires at least ", count_text(fs.min_count)));
    const double fraction = static_cast<double>(f->count) / static_cast<double>(s.examples);
    if (fraction < fs.min_fraction)
      add(fs.name, "presence", split,
          str_cat(name, ": in ", percent(fraction), " of ", split, " examples (",
                  count_text(f->count), " of ", count_text(s.examples), "), the schema requires ",
                  percent(fs.min_fraction)));
    if (f->type != fs.type) {
      add(fs.name, "type_change", split,
          str_cat(name, ": ", split, " holds ", feature_type_name(f->type), " values (",
                  count_text(f->count), " examples), the schema says ",
                  feature_type_name(fs.type)));
      return;  // the other checks assume the schema's type
    }
    for (const auto& [type, n] : f->other_types)
      add(fs.name, "type_change", split,
          str_cat(name, ": ", count_text(n), " ", split, " examples hold ", type,
                  " values, the schema says ", feature_type_name(fs.type)));
    if ((fs.min_values && f->min_values < *fs.min_values) ||
        (fs.max_values && f->max_values > *fs.max_values))
      add(fs.name, "value_count", split,
          str_cat(name, ": ", split, " examples hold ", f->min_values, " to ", f->max_values,
                  " values, the schema allows ", fs.min_values.value_or(0), " to ",
                  fs.max_values ? std::to_string(*fs.max_values) : std::string("any")));
    if (f->numeric && f->numeric->finite > 0 && fs.min && fs.max) check_range(fs, *f, split);
    if (f->bytes && !fs.domain.empty()) check_domain(fs, *f, split);
    if (f->image) check_image(fs, *f, split);
  }

  void check_range(const FeatureSchema& fs, const FeatureStatistics& f, const std::string& split) {
    const NumericStatistics& n = *f.numeric;
    if (n.min >= *fs.min && n.max <= *fs.max) return;
    bool exact = !n.value_counts.empty();
    double outside = 0;
    if (exact) {
      for (const auto& [v, c] : n.value_counts)
        if (v < *fs.min || v > *fs.max) outside += static_cast<double>(c);
    } else {
      exact = true;
      outside = mass_outside(n.histogram, *fs.min, *fs.max, &exact);
    }
    std::string where;
    if (n.min < *fs.min && n.max > *fs.max) {
      where = str_cat("from ", num(n.min), " to ", num(n.max));
    } else if (n.max > *fs.max) {
      where = str_cat("up to ", num(n.max));
    } else {
      where = str_cat("down to ", num(n.min));
    }
    const auto count = static_cast<int64_t>(std::llround(std::max(outside, 1.0)));
    const double margin = fs.range_margin * (*fs.max - *fs.min);
    const bool near = n.min >= *fs.min - margin && n.max <= *fs.max + margin;
    add(fs.name, "out_of_range", split,
        str_cat("feature '", fs.name, "': ", split, " values ", where,
                " outside the schema's range [", num(*fs.min), ", ", num(*fs.max), "] (",
                exact ? "" : "about ", count_text(count), " of ", count_text(n.finite), " values)",
                near ? str_cat(", within range_margin ", num(fs.range_margin),
                               " of its width: a warning")
                     : ""),
        near ? "warning" : "");
  }

  void check_domain(const FeatureSchema& fs, const FeatureStatistics& f, const std::string& split) {
    const BytesStatistics& b = *f.bytes;
    const std::set<std::string> domain(fs.domain.begin(), fs.domain.end());
    std::vector<std::pair<std::string, int64_t>> outside;
    int64_t total = b.other_values, out = 0;
    for (const auto& [v, n] : b.value_counts) {
      total += n;
      if (!domain.count(v)) outside.emplace_back(v, n), out += n;
    }
    if (outside.empty()) return;
    std::stable_sort(outside.begin(), outside.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
    std::string listed;
    for (size_t i = 0; i < outside.size() && i < 10; ++i)
      listed +=
          str_cat(i ? ", " : "", "'", outside[i].first, "' (", count_text(outside[i].second), ")");
    if (outside.size() > 10) listed += str_cat(" and ", outside.size() - 10, " more");
    const double in_domain =
        total > 0 ? 1 - static_cast<double>(out) / static_cast<double>(total) : 1;
    const bool tolerated = fs.domain_min_fraction < 1 && in_domain >= fs.domain_min_fraction;
    add(fs.name, "out_of_domain", split,
        str_cat("feature '", fs.name, "': ", listed, " outside the schema's domain of ",
                fs.domain.size(), " values: ", count_text(out), " of ", count_text(total), " ",
                split, " values (", percent(1 - in_domain), ")",
                tolerated ? str_cat(", within domain_min_fraction ", num(fs.domain_min_fraction),
                                    ": a warning")
                          : "",
                b.value_counts_complete ? "" : "; values past the counting cap not checked"),
        tolerated ? "warning" : "");
  }

  void check_image(const FeatureSchema& fs, const FeatureStatistics& f, const std::string& split) {
    const ImageStatistics& im = *f.image;
    if (fs.image_shape) {
      const ImageShapeCount& want = *fs.image_shape;
      for (const ImageShapeCount& c : im.shapes)
        if (c.height != want.height || c.width != want.width || c.channels != want.channels)
          add(fs.name, "image_shape", split,
              str_cat("feature '", fs.name, "': ", count_text(c.count), " ", split,
                      " images of shape ", c.height, "x", c.width, "x", c.channels,
                      ", the schema says ", want.height, "x", want.width, "x", want.channels));
    }
    if (!fs.image_formats.empty())
      for (const auto& [format, n] : im.formats)
        if (std::find(fs.image_formats.begin(), fs.image_formats.end(), format) ==
            fs.image_formats.end())
          add(fs.name, "image_format", split,
              str_cat("feature '", fs.name, "': ", count_text(n), " ", split, " images in format '",
                      format, "', not one of the schema's"));
    if (im.invalid > 0)
      add(fs.name, "invalid_image", split,
          str_cat("feature '", fs.name, "': ", count_text(im.invalid), " ", split,
                  " images could not be read (raw bytes that do not match their shape, or not a "
                  "PNG / JPEG)"));
  }

  const Schema& schema_;
  std::vector<Anomaly>& out_;
};

}  // namespace

double linf_distance(const BytesStatistics& a, const BytesStatistics& b) {
  std::string at;
  return Validator::linf(a, b, &at);
}

size_t js_bins(const NumericStatistics& a, const NumericStatistics& b) {
  const size_t most = std::max<size_t>(1, std::max(a.histogram.size(), b.histogram.size()));
  const int64_t n = std::min(a.finite, b.finite);
  if (n <= 0) return most;
  const auto root = static_cast<size_t>(std::sqrt(static_cast<double>(n)));
  return std::clamp<size_t>(root, std::min<size_t>(2, most), most);
}

double js_noise_floor(const NumericStatistics& a, const NumericStatistics& b) {
  if (a.finite <= 0 || b.finite <= 0) return 0;
  // Two samples of one distribution over k bins: 8 ln(2) JS / (1/n_a + 1/n_b) is about
  // chi-square with k - 1 degrees of freedom; its 99.9% point by Wilson and Hilferty.
  const double dof = std::max(1.0, static_cast<double>(js_bins(a, b)) - 1);
  const double t = 1 - 2 / (9 * dof) + 3.09 * std::sqrt(2 / (9 * dof));
  const double chi2 = dof * t * t * t;
  return chi2 * (1 / static_cast<double>(a.finite) + 1 / static_cast<double>(b.finite)) /
         (8 * std::log(2.0));
}

double js_divergence(const NumericStatistics& a, const NumericStatistics& b) {
  if (a.histogram.empty() || b.histogram.empty()) return 0;
  const double lo = std::min(a.histogram.front().low, b.histogram.front().low);
  const double hi = std::max(a.histogram.back().high, b.histogram.back().high);
  if (!(hi > lo)) return 0;  // one value in both
  const size_t bins = js_bins(a, b);
  const double width = (hi - lo) / static_cast<double>(bins);
  auto rebin = [&](const std::vector<HistogramBin>& h) {
    std::vector<double> p(bins, 0);
    double total = 0;
    for (const HistogramBin& s : h) {
      if (s.count <= 0) continue;
      total += s.count;
      if (!(s.high > s.low)) {
        const auto k = std::min(bins - 1, static_cast<size_t>(std::max(0.0, (s.low - lo) / width)));
        p[k] += s.count;
        continue;
      }
      // Spread uniformly over [low, high): the overlap with each common bin.
      const auto first = static_cast<size_t>(std::max(0.0, std::floor((s.low - lo) / width)));
      for (size_t k = std::min(first, bins - 1); k < bins; ++k) {
        const double b0 = lo + static_cast<double>(k) * width, b1 = b0 + width;
        if (b0 >= s.high) break;
        const double overlap = std::min(b1, s.high) - std::max(b0, s.low);
        if (overlap > 0) p[k] += s.count * overlap / (s.high - s.low);
      }
    }
    if (total > 0)
      for (double& v : p) v /= total;
    return p;
  };
  const std::vector<double> p = rebin(a.histogram), q = rebin(b.histogram);
  double js = 0;
  for (size_t k = 0; k < bins; ++k) {
    const double m = (p[k] + q[k]) / 2;
    if (p[k] > 0) js += 0.5 * p[k] * std::log2(p[k] / m);
    if (q[k] > 0) js += 0.5 * q[k] * std::log2(q[k] / m);
  }
  return std::clamp(js, 0.0, 1.0);
}

std::vector<Anomaly> validate_statistics(const Schema& schema, const DatasetStatistics& train,
                                         const DatasetStatistics* eval,
                                         const DatasetStatistics* previous_train) {
  std::vector<Anomaly> out;
  Validator v(schema, out);
  v.check_split(train, "train");
  if (eval != nullptr) {
    v.check_split(*eval, "eval");
    v.compare(train, *eval, /*drift=*/false);
  }
  if (previous_train != nullptr) v.compare(*previous_train, train, /*drift=*/true);
  std::stable_sort(out.begin(), out.end(), [](const Anomaly& a, const Anomaly& b) {
    return a.feature != b.feature ? a.feature < b.feature : a.kind < b.kind;
  });
  return out;
}

bool has_errors(const std::vector<Anomaly>& anomalies) {
  return std::any_of(anomalies.begin(), anomalies.end(),
                     [](const Anomaly& a) { return a.severity == "error"; });
}

}  // namespace tern::pipeline
