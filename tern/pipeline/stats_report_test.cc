// report.html: every feature and both splits, well-formed inline SVG charts, the anomalies, and
// strings from the data escaped.
#include "tern/pipeline/stats_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tern/io/atomic_file.h"
#include "tern/pipeline/test_util.h"

namespace tern::pipeline {
namespace {

using data::Example;
using data::Feature;
using testing::example;
using testing::TempDir;

DatasetStatistics split(int n, bool with_city) {
  TempDir dir;
  std::vector<Example> ex;
  for (int i = 0; i < n; ++i) {
    data::Features f = {
        {"age", Feature::int64s({18 + i % 60})},
        {"<script>alert(1)</script>", Feature::bytes({i % 2 ? "<b>bold</b>" : "a&b"})},
        {"image/encoded", Feature::bytes({std::string(12, static_cast<char>(i))})},
        {"image/height", Feature::int64s({2})},
        {"image/width", Feature::int64s({2})},
        {"image/channels", Feature::int64s({3})},
        {"image/format", Feature::bytes({"raw"})}};
    if (with_city) f["city"] = Feature::bytes({i % 3 ? "Oslo" : "Lima"});
    ex.push_back(example(std::move(f)));
  }
  testing::write_examples(dir.file("s.tfrecord"), ex);
  StatisticsOptions o;
  o.progress = false;
  return compute_statistics({dir.file("s.tfrecord")}, o);
}

// Tags inside `html` open and close in order (a small well-formedness check, no XML library;
// std::regex trips GCC 12's -Wmaybe-uninitialized under the sanitizers).
bool balanced(const std::string& html) {
  std::vector<std::string> open;
  for (size_t at = html.find('<'); at != std::string::npos; at = html.find('<', at + 1)) {
    const size_t end = html.find('>', at);
    if (end == std::string::npos) return false;
    std::string tag = html.substr(at + 1, end - at - 1);
    const bool closing = !tag.empty() && tag[0] == '/';
    const bool self_closing = !tag.empty() && tag.back() == '/';
    if (closing) tag.erase(0, 1);
    const std::string name = tag.substr(0, tag.find_first_of(" /"));
    if (closing) {
      if (open.empty() || open.back() != name) return false;
      open.pop_back();
    } else if (!self_closing && name != "br") {  // <br> is a void element
      open.push_back(name);
    }
  }
  return open.empty();
}

TEST(StatsReport, FeaturesSplitsChartsAndEscaping) {
  const DatasetStatistics train = split(200, true), eval = split(50, false);
  const std::vector<Anomaly> anomalies = {{"city", "missing_feature", "error",
                                           "feature 'city': missing from all 50 eval examples",
                                           "eval"}};
  TempDir dir;
  write_statistics_report({{"train", &train}, {"eval", &eval}}, dir.file("report.html"), anomalies);
  const std::string html = io::read_file(dir.file("report.html"));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<th>train</th><th>eval</th>"), std::string::npos);
  for (const char* name :
       {"age", "city", "image/encoded", "image/height", "&lt;script&gt;alert(1)&lt;/script&gt;"})
    EXPECT_NE(html.find(std::string("<td class=\"name\">") + name), std::string::npos) << name;
  // Nothing from the data reaches the page unescaped.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>bold"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;bold&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(html.find("a&amp;b"), std::string::npos);
  // city is absent from eval; its anomaly is listed and marks the row.
  EXPECT_NE(html.find("not present"), std::string::npos);
  EXPECT_NE(html.find("missing from all 50 eval examples"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"anomalous\"><td class=\"name\">city"), std::string::npos);
  // Charts: a histogram for each numeric cell, a bar chart for each categorical one.
  int svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    ++svgs;
    const size_t end = html.find("</svg>", at);
    ASSERT_NE(end, std::string::npos);
    const std::string svg = html.substr(at, end + 6 - at);
    EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", 0), 0u) << svg;
    EXPECT_NE(svg.find(" viewBox=\"0 0 "), std::string::npos) << svg;
    EXPECT_TRUE(balanced(svg)) << svg;
    EXPECT_NE(svg.find("<rect"), std::string::npos);
  }
  // train: age, image/height, width, channels histograms; the two bytes features and format bars:
  // 4 + 3 = 7; eval: the same without city: 6.
  EXPECT_EQ(svgs, 13);
  const size_t table = html.find("<table>"), table_end = html.rfind("</table>") + 8;
  EXPECT_TRUE(balanced(html.substr(table, table_end - table)));
  // Image cells: shape and the channel means with a swatch.
  EXPECT_NE(html.find("2x2x3 (200)"), std::string::npos);
  EXPECT_NE(html.find("class=\"swatch\""), std::string::npos);
}

}  // namespace
}  // namespace tern::pipeline
