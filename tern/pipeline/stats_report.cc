// statistics_report_html (stats_report.h): one table, a row per feature, a cell per split.
#include "tern/pipeline/stats_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "tern/io/atomic_file.h"

namespace tern::pipeline {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

constexpr const char* kStyle = R"(body{font:14px system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;width:100%}th,td{border:1px solid #ddd;padding:6px 8px;vertical-align:top;text-align:left}
th{background:#f4f4f4}td.name{font-weight:600;word-break:break-all;max-width:14em}
.type{font-weight:normal;color:#666;font-size:12px}.num td{border:none;padding:0 10px 0 0;font-size:12px}
tr.anomalous td.name{background:#fde8e8}.anomaly{color:#a40000;font-size:12px;margin-top:4px}
.warning{color:#8a5a00}.absent{color:#999}.swatch{display:inline-block;width:14px;height:14px;border:1px solid #999;vertical-align:middle}
svg{display:block;margin-top:4px})";

std::string number(double v) {
  std::ostringstream os;
  os.precision(5);
  os << v;
  return os.str();
}

std::string count(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0 && digits[0] != '-') out += ',';
    out += digits[i];
  }
  return out;
}

// 85.6 kB, 57.2 MB
std::string size_text(int64_t bytes) {
  std::ostringstream os;
  os.precision(3);
  const auto b = static_cast<double>(bytes);
  if (b < 1e3) {
    os << bytes << " bytes";
  } else if (b < 1e6) {
    os << b / 1e3 << " kB";
  } else if (b < 1e9) {
    os << b / 1e6 << " MB";
  } else {
    os << b / 1e9 << " GB";
  }
  return os.str();
}

std::string row(const std::string& label, const std::string& value) {
  return "<tr><td>" + label + "</td><td>" + value + "</td></tr>";
}

// Vertical bars of the histogram, the range below.
std::string histogram_svg(const std::vector<HistogramBin>& bins) {
  constexpr int kWidth = 240, kHeight = 60;
  double top = 0;
  for (const HistogramBin& b : bins) top = std::max(top, b.count);
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\""
     << kHeight + 14 << "\" viewBox=\"0 0 " << kWidth << " " << kHeight + 14 << "\">";
  const double w = static_cast<double>(kWidth) / std::max<size_t>(bins.size(), 1);
  for (size_t i = 0; i < bins.size(); ++i) {
    const double h = top > 0 ? bins[i].count / top * kHeight : 0;
    os << "<rect x=\"" << number(static_cast<double>(i) * w) << "\" y=\"" << number(kHeight - h)
       << "\" width=\"" << number(std::max(w - 1, 1.0)) << "\" height=\"" << number(h)
       << "\" fill=\"#4a7ab5\"><title>[" << number(bins[i].low) << ", " << number(bins[i].high)
       << "): " << number(bins[i].count) << "</title></rect>";
  }
  if (!bins.empty())
    os << "<text x=\"0\" y=\"" << kHeight + 12 << "\" font-size=\"10\">" << number(bins.front().low)
       << "</text><text x=\"" << kWidth << "\" y=\"" << kHeight + 12
       << "\" font-size=\"10\" text-anchor=\"end\">" << number(bins.back().high) << "</text>";
  os << "</svg>";
  return os.str();
}

// Horizontal bars of the most common values, labelled.
std::string top_values_svg(const std::vector<std::pair<std::string, int64_t>>& top) {
  constexpr int kWidth = 240, kBar = 12;
  const int rows = static_cast<int>(std::min<size_t>(top.size(), 20));
  int64_t most = 1;
  for (const auto& [v, n] : top) most = std::max(most, n);
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\""
     << rows * (kBar + 2) << "\" viewBox=\"0 0 " << kWidth << " " << rows * (kBar + 2) << "\">";
  for (int i = 0; i < rows; ++i) {
    const auto& [value, n] = top[static_cast<size_t>(i)];
    const double w = static_cast<double>(n) / static_cast<double>(most) * (kWidth - 100);
    std::string label = value;
    if (label.size() > 14) {  // cut on a UTF-8 character boundary
      size_t cut = 13;
      while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xc0) == 0x80) --cut;
      label = label.substr(0, cut) + "~";
    }
    os << "<text x=\"0\" y=\"" << i * (kBar + 2) + 10 << "\" font-size=\"10\">"
       << html_escape(label) << "</text><rect x=\"100\" y=\"" << i * (kBar + 2) << "\" width=\""
       << number(std::max(w, 1.0)) << "\" height=\"" << kBar << "\" fill=\"#5a9e6f\"><title>"
       << html_escape(value) << ": " << n << "</title></rect>";
  }
  os << "</svg>";
  return os.str();
}

std::string numeric_cell(const NumericStatistics& n) {
  std::string rows = row("mean", number(n.mean)) + row("std", number(n.std_dev)) +
                     row("min", number(n.min)) + row("max", number(n.max)) +
                     row("zeros", count(n.zeros));
  for (const auto& [q, v] : n.quantiles)
    if (q == 0.5) rows += row(n.quantiles_exact ? "median" : "median (sketch)", number(v));
  if (n.nan > 0 || n.infinite > 0)
    rows += row("NaN / inf", count(n.nan) + " / " + count(n.infinite));
  return "<table class=\"num\">" + rows + "</table>" + histogram_svg(n.histogram);
}

std::string bytes_cell(const BytesStatistics& b) {
  std::string rows = row("unique", (b.unique_exact ? "" : "~") + count(b.unique)) +
                     row("avg length", number(b.avg_length));
  return "<table class=\"num\">" + rows + "</table>" + top_values_svg(b.top_values);
}

std::string image_cell(const ImageStatistics& im) {
  std::string formats, shapes, means;
  for (const auto& [f, n] : im.formats) formats += html_escape(f) + " " + count(n) + " ";
  for (size_t i = 0; i < im.shapes.size() && i < 3; ++i)
    shapes += std::to_string(im.shapes[i].height) + "x" + std::to_string(im.shapes[i].width) + "x" +
              std::to_string(im.shapes[i].channels) + " (" + count(im.shapes[i].count) + ") ";
  for (double m : im.channel_means) means += number(m) + " ";
  std::string rows = row("formats", formats) + row("shapes", shapes);
  if (!im.channel_means.empty()) {
    const auto c = [&](size_t k) {
      return std::to_string(static_cast<int>(
          std::lround(im.channel_means[std::min(k, im.channel_means.size() - 1)])));
    };
    rows += row("channel means", means + "<span class=\"swatch\" style=\"background:rgb(" + c(0) +
                                     "," + c(1) + "," + c(2) + ")\"></span>");
    rows += row("measured", count(im.images_measured) + (im.sampled ? " (a sample)" : ""));
  }
  if (im.invalid > 0) rows += row("unreadable", count(im.invalid));
  return "<table class=\"num\">" + rows + "</table>";
}

std::string feature_cell(const FeatureStatistics* f, int64_t examples) {
  if (f == nullptr || f->count == 0) return "<td class=\"absent\">not present</td>";
  std::string rows = row("present", count(f->count) + " of " + count(examples));
  if (f->missing > 0) rows += row("missing", count(f->missing));
  rows += row("values / example",
              f->min_values == f->max_values
                  ? std::to_string(f->min_values)
                  : std::to_string(f->min_values) + "&ndash;" + std::to_string(f->max_values));
  for (const auto& [t, n] : f->other_types) rows += row(html_escape(t) + " examples", count(n));
  std::string body = "<table class=\"num\">" + rows + "</table>";
  if (f->image) body += image_cell(*f->image);
  if (f->numeric && f->type != FeatureType::kBytes && f->type != FeatureType::kImage)
    body += numeric_cell(*f->numeric);
  if (f->bytes) body += bytes_cell(*f->bytes);
  return "<td>" + body + "</td>";
}

}  // namespace

std::string statistics_report_html(const SplitStatistics& splits,
                                   const std::vector<Anomaly>& anomalies) {
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tern data statistics</title>"
        "<style>"
     << kStyle << "</style></head><body>\n<h1>Data statistics</h1>\n<p>";
  std::set<std::string> names;
  for (const auto& [split, s] : splits) {
    os << "<b>" << html_escape(split) << "</b>: " << count(s->examples) << " examples, "
       << size_text(s->bytes) << " in " << s->files.size()
       << (s->files.size() == 1 ? " file" : " files") << ". ";
    for (const FeatureStatistics& f : s->features) names.insert(f.name);
  }
  os << "</p>\n";
  std::map<std::string, std::vector<const Anomaly*>> by_feature;
  for (const Anomaly& a : anomalies) by_feature[a.feature].push_back(&a);
  if (!anomalies.empty()) {
    os << "<h2>Anomalies</h2>\n<ul>";
    for (const Anomaly& a : anomalies)
      os << "<li class=\"" << (a.severity == "error" ? "anomaly" : "anomaly warning") << "\">"
         << html_escape(a.severity) << ": " << html_escape(a.message) << "</li>";
    os << "</ul>\n";
  }
  os << "<table>\n<tr><th>feature</th>";
  for (const auto& [split, s] : splits) os << "<th>" << html_escape(split) << "</th>";
  os << "</tr>\n";
  for (const std::string& name : names) {
    const auto it = by_feature.find(name);
    os << "<tr" << (it != by_feature.end() ? " class=\"anomalous\"" : "") << "><td class=\"name\">"
       << html_escape(name);
    std::string type;
    for (const auto& [split, s] : splits)
      if (const FeatureStatistics* f = s->find(name); f != nullptr && type.empty())
        type = std::string(feature_type_name(f->type));
    os << "<br><span class=\"type\">" << type << "</span>";
    if (it != by_feature.end())
      for (const Anomaly* a : it->second)
        os << "<div class=\"" << (a->severity == "error" ? "anomaly" : "anomaly warning") << "\">"
           << html_escape(a->kind) << " (" << html_escape(a->split) << ")</div>";
    os << "</td>";
    for (const auto& [split, s] : splits) os << feature_cell(s->find(name), s->examples);
    os << "</tr>\n";
  }
  os << "</table>\n</body></html>\n";
  return os.str();
}

void write_statistics_report(const SplitStatistics& splits, const std::string& html_path,
                             const std::vector<Anomaly>& anomalies) {
  io::write_file_atomically(html_path, statistics_report_html(splits, anomalies));
}

}  // namespace tern::pipeline
