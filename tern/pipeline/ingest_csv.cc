// ingest's CSV source: the header and the column types over every file (a first pass), then one
// tf.train.Example per row (ingest.h). Cells are read by tern/data's CsvReader (RFC 4180 quoting).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "tern/base/error.h"
#include "tern/base/strings.h"
#include "tern/data/csv_reader.h"
#include "tern/pipeline/ingest_internal.h"

namespace tern::pipeline::ingest_internal {

using data::Example;
using data::Feature;

namespace {

constexpr int64_t kMaxRowBytes = int64_t{1} << 24;

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool parse_int(std::string_view s, int64_t* out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

bool parse_number(std::string_view s, double* out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty() && std::isfinite(*out);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

data::CsvReader open_csv(const std::string& path, const IngestOptions& o) {
  return data::CsvReader(path, o.csv_delimiter, data::Compression::kAuto, kMaxRowBytes);
}

std::vector<std::string> read_header(data::CsvReader& r) {
  std::optional<std::vector<data::CsvField>> row = r.next_row();
  TERN_CHECK_ARG(row.has_value(), r.path(), ": empty (a CSV input needs a header row)");
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (size_t i = 0; i < row->size(); ++i) {
    std::string name((*row)[i].text);
    TERN_CHECK_ARG(!trimmed(name).empty(), r.path(), ":", r.row_line(), ": column ", i + 1,
                   " of the header has no name");
    TERN_CHECK_ARG(seen.insert(name).second, r.path(), ":", r.row_line(), ": column '",
                   printable(name), "' appears twice in the header");
    names.push_back(std::move(name));
  }
  return names;
}

void check_width(const data::CsvReader& r, size_t fields, size_t columns) {
  TERN_CHECK_ARG(fields == columns, r.path(), ":", r.row_line(), ": ", fields,
                 " fields, the header has ", columns);
}

}  // namespace

CsvSchema infer_csv_schema(const std::vector<std::string>& files, const IngestOptions& o) {
  CsvSchema schema;
  std::vector<bool> all_int, all_number, any;
  std::vector<std::string> first_non_number;  // "file:line: 'text'" of the first, per column
  for (const std::string& file : files) {
    data::CsvReader r = open_csv(file, o);
    std::vector<std::string> header = read_header(r);
    if (schema.columns.empty()) {
      schema.columns = header;
      all_int.assign(header.size(), true);
      all_number.assign(header.size(), true);
      any.assign(header.size(), false);
      first_non_number.assign(header.size(), "");
    } else {
      TERN_CHECK_ARG(header == schema.columns, file, ":", r.row_line(), ": the header (",
                     printable(joined(header)), ") differs from ", files[0], "'s (",
                     printable(joined(schema.columns)), ")");
    }
    while (std::optional<std::vector<data::CsvField>> row = r.next_row()) {
      check_width(r, row->size(), schema.columns.size());
      for (size_t j = 0; j < row->size(); ++j) {
        const std::string_view cell = trimmed((*row)[j].text);
        if (cell.empty()) continue;
        any[j] = true;
        int64_t i;
        double d;
        if (all_int[j] && !parse_int(cell, &i)) all_int[j] = false;
        if (all_number[j] && !parse_number(cell, &d)) {
          all_number[j] = false;
          first_non_number[j] = str_cat(file, ":", r.row_line(), ": '", printable(cell), "'");
        }
      }
    }
  }
  for (const auto& [name, type] : o.column_types) {
    auto it = std::find(schema.columns.begin(), schema.columns.end(), name);
    TERN_CHECK_ARG(it != schema.columns.end(), "ingest: columns: '", printable(name),
                   "' is not a column of ", files.empty() ? "the input" : files[0], " (",
                   printable(joined(schema.columns)), ")");
    TERN_CHECK_ARG(type == "categorical" || type == "numeric", "ingest: columns: '",
                   printable(name), "' = '", printable(type),
                   "': a column type is \"categorical\" or \"numeric\"");
    const auto j = static_cast<size_t>(it - schema.columns.begin());
    TERN_CHECK_ARG(type != "numeric" || all_number[j], first_non_number[j], " in column '",
                   printable(name), "' is not a number (the column is forced numeric)");
  }
  for (size_t j = 0; j < schema.columns.size(); ++j) {
    auto forced = o.column_types.find(schema.columns[j]);
    if (forced != o.column_types.end() && forced->second == "categorical") {
      schema.types.push_back(CsvType::kBytes);
    } else if (any[j] && all_int[j]) {
      schema.types.push_back(CsvType::kInt);
    } else if (any[j] && all_number[j]) {
      schema.types.push_back(CsvType::kFloat);
    } else if (forced != o.column_types.end()) {
      schema.types.push_back(CsvType::kFloat);  // numeric, but every cell empty
    } else {
      schema.types.push_back(CsvType::kBytes);
    }
  }
  return schema;
}

void csv_records(const std::vector<std::string>& files, const CsvSchema& schema,
                 const IngestOptions& o, RecordSink& sink) {
  for (const std::string& file : files) {
    data::CsvReader r = open_csv(file, o);
    read_header(r);
    sink.expect(-1);
    while (std::optional<std::vector<data::CsvField>> row = r.next_row()) {
      check_width(r, row->size(), schema.columns.size());
      Example ex;
      const std::string where = str_cat(file, ":", r.row_line());
      for (size_t j = 0; j < row->size(); ++j) {
        const std::string& text = (*row)[j].text;
        const std::string_view cell = trimmed(text);
        if (cell.empty()) continue;  // missing
        const std::string& name = schema.columns[j];
        switch (schema.types[j]) {
          case CsvType::kInt: {
            int64_t v = 0;
            TERN_CHECK_ARG(parse_int(cell, &v), where, ": '", printable(cell), "' in column '",
                           printable(name), "' is not an integer (the file changed while read?)");
            ex.features[name] = Feature::int64s({v});
            break;
          }
          case CsvType::kFloat: {
            double v = 0;
            TERN_CHECK_ARG(parse_number(cell, &v), where, ": '", printable(cell), "' in column '",
                           printable(name), "' is not a number (the file changed while read?)");
            ex.features[name] = Feature::floats({static_cast<float>(v)});
            break;
          }
          case CsvType::kBytes:
            ex.features[name] = Feature::bytes({text});
            break;
        }
      }
      sink.add(data::serialize_example(ex), ex, where);
    }
  }
}

}  // namespace tern::pipeline::ingest_internal
