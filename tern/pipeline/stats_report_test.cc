// report.html: every feature and both splits, well-formed inline SVG charts, the anomalies, and
// strings from the data escaped.
#include "tern/pipeline/stats_report.h"

#include <gtest/gtest.h>

#include <regex>

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

// Tags inside `svg` open and close in order (a small well-formedness check, no XML library).
bool balanced(const std::string& svg) {
  std::vector<std::string> open;
  const std::regex tag(R"(<(/?)([a-zA-Z]+)[^>]*?(/?)>)");
  for (std::sregex_iterator it(svg.begin(), svg.end(), tag), end; it != end; ++it) {
    const std::string name = (*it)[2];
    if ((*it)[1] == "/") {
      if (open.empty() || open.back() != name) return false;
      open.pop_back();
    } else if ((*it)[3] != "/" && name != "br") {  // <br> is a void element
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
  const std::regex svg_re(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="\d+" height="\d+" viewBox="[0-9 ]+">.*?</svg>)");
  int svgs = 0;
  for (std::sregex_iterator it(html.begin(), html.end(), svg_re), end; it != end; ++it) {
    ++svgs;
    EXPECT_TRUE(balanced(it->str())) << it->str();
    EXPECT_NE(it->str().find("<rect"), std::string::npos);
  }
  size_t opened = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1))
    ++opened;
  EXPECT_EQ(static_cast<size_t>(svgs), opened);
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
