// inspect_data_file: what a TFRecord / IDX / CSV file holds.
#include "tern/data/inspect.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>

#include "tern/base/error.h"
#include "tern/base/strings.h"
#include "tern/data/csv_reader.h"
#include "tern/data/example_proto.h"
#include "tern/data/idx_dataset.h"
#include "tern/data/image_codec.h"
#include "tern/data/input_stream.h"
#include "tern/data/tfrecord_reader.h"
#include "tern/format/crc32c.h"

namespace tern::data {
namespace {

std::string compression_label(Compression c) {
  return c == Compression::kGzip ? "gzip" : c == Compression::kZlib ? "zlib" : "uncompressed";
}

// The first bytes of the (decompressed) stream.
std::string head_bytes(const std::string& path, Compression c, size_t n) {
  std::unique_ptr<InputStream> in = InputStream::open(path, c);
  std::string out(n, '\0');
  out.resize(in->read(out.data(), n));
  return out;
}

Compression resolve_compression(const std::string& path, const std::string& name) {
  if (name != "auto") return parse_compression(name);
  return InputStream::open(path, Compression::kAuto)->compressed() ? Compression::kGzip
                                                                   : Compression::kNone;
}

std::string detect_format(const std::string& path, Compression c) {
  const std::string head = head_bytes(path, c, 12);
  const auto* u = reinterpret_cast<const unsigned char*>(head.data());
  if (head.size() >= 4 && u[0] == 0 && u[1] == 0 && std::strchr("\x08\x09\x0b\x0c\x0d\x0e", u[2]) &&
      u[2] != 0 && u[3] >= 1 && u[3] <= 16) {
    return "idx";
  }
  if (head.size() == 12) {
    uint32_t stored = 0;
    std::memcpy(&stored, head.data() + 8, 4);
    if (format::crc32c_mask(format::crc32c(head.data(), 8)) == stored) return "tfrecord";
  }
  std::string lower = path;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  if (lower.find(".csv") != std::string::npos) return "csv";
  // Named as a TFRecord but its first header does not check: the reader then reports that
  // header's damage and offset (before, "neither IDX nor TFRecord" hid the CRC error).
  if (lower.find(".tfrecord") != std::string::npos) return "tfrecord";
  throw_error(ErrorCode::kInvalidArgument, path, ": neither IDX nor TFRecord (", head.size(),
              " leading bytes checked) nor *.csv; pass --format (and --compression zlib for "
              "ZLIB-compressed TFRecords)");
}

// `v` if it is all printable ASCII, else "".
std::string ascii_text(const std::string& v) {
  for (unsigned char ch : v)
    if (ch < 0x20 || ch > 0x7e) return "";
  return v;
}

std::string describe_bytes(const std::string& v) {
  if (detect_image_format(v) != ImageFormat::kUnknown) {
    try {
      const ImageInfo info = read_image_info(v);
      return str_cat(image_format_name(info.format), " ", info.height, "x", info.width, "x",
                     info.channels, ", ", v.size(), " bytes");
    } catch (const Error&) {
    }
  }
  const std::string text = ascii_text(v);
  if (!text.empty() && text.size() <= 40) return "\"" + text + "\"";
  return str_cat(v.size(), " bytes");
}

std::string describe_values(const Feature& f) {
  std::string out = "[";
  const size_t n = std::min<size_t>(f.size(), 6);
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    if (f.kind == FeatureKind::kBytes) out += describe_bytes(f.bytes_list[i]);
    if (f.kind == FeatureKind::kFloat) out += str_cat(f.float_list[i]);
    if (f.kind == FeatureKind::kInt64) out += str_cat(f.int64_list[i]);
  }
  if (f.size() > n) out += str_cat(", ... (", f.size(), " values)");
  return out + "]";
}

void print_features(const Features& features, std::ostream& out, const char* indent) {
  size_t width = 0;
  // Feature names come from the file: shown through printable() (F24).
  for (const auto& [name, f] : features) width = std::max(width, printable(name).size());
  for (const auto& [name, f] : features) {
    out << indent << std::left << std::setw(static_cast<int>(width)) << printable(name) << "  "
        << std::setw(10) << feature_kind_name(f.kind) << "  " << describe_values(f) << "\n";
  }
}

struct FeatureSummary {
  FeatureKind kind = FeatureKind::kNone;
  bool mixed_kinds = false;
  size_t min_count = SIZE_MAX, max_count = 0;
  int64_t records = 0;
};

void inspect_tfrecord(const std::string& path, Compression c, const InspectOptions& o,
                      std::ostream& out) {
  TFRecordReader reader(path, {.compression = c});
  int64_t count = 0, bytes = 0, examples = 0;
  std::map<std::string, FeatureSummary> summary;
  std::vector<std::string> shown;
  while (std::optional<std::string> r = reader.read()) {
    bytes += static_cast<int64_t>(r->size());
    const std::string what = str_cat(path, " record ", count);
    const bool seq = looks_like_sequence_example(*r);
    std::optional<Example> ex;
    std::string error;
    try {
      if (!seq) ex = parse_example_proto(*r, what);
    } catch (const Error& e) {
      error = e.what();
    }
    if (ex) {
      ++examples;
      for (const auto& [name, f] : ex->features) {
        FeatureSummary& s = summary[name];
        if (s.records > 0 && s.kind != f.kind) s.mixed_kinds = true;
        s.kind = f.kind;
        s.min_count = std::min(s.min_count, f.size());
        s.max_count = std::max(s.max_count, f.size());
        ++s.records;
      }
    }
    if (count < o.records) {
      std::ostringstream os;
      os << "record " << count << ": " << r->size() << " bytes";
      if (ex) {
        os << ", tf.train.Example\n";
        print_features(ex->features, os, "  ");
      } else if (seq) {
        try {
          const SequenceExample sx = parse_sequence_example_proto(*r, what);
          os << ", tf.train.SequenceExample\n  context:\n";
          print_features(sx.context, os, "    ");
          os << "  feature_lists:\n";
          for (const auto& [name, steps] : sx.feature_lists) {
            os << "    " << printable(name) << "  " << steps.size() << " steps"
               << (steps.empty() ? "" : str_cat(" of ", feature_kind_name(steps[0].kind))) << "\n";
          }
        } catch (const Error& e) {
          os << ", not a valid tf.train.SequenceExample: " << e.what() << "\n";
        }
      } else {
        os << ", not a tf.train.Example (" << error << "): " << describe_bytes(*r) << "\n";
      }
      shown.push_back(os.str());
    }
    ++count;
  }
  out << path << ": TFRecord (" << compression_label(c) << "), " << count << " records, " << bytes
      << " bytes of record data";
  if (reader.skipped_records() > 0) out << ", " << reader.skipped_records() << " corrupt skipped";
  out << "\n";
  for (const std::string& s : shown) out << s;
  if (examples == 0) return;
  out << "features over " << examples << " tf.train.Examples"
      << (examples < count ? str_cat(" (of ", count, " records)") : "") << ":\n";
  for (const auto& [name, s] : summary) {
    out << "  " << printable(name) << ": "
        << (s.mixed_kinds ? "mixed kinds" : feature_kind_name(s.kind));
    if (s.records < examples) out << ", in " << s.records << " records";
    if (s.min_count == s.max_count) {
      out << ", " << s.min_count << (s.min_count == 1 ? " value" : " values") << " each";
      out << "  -> FixedLen" << (s.min_count == 1 ? " []" : str_cat(" [", s.min_count, "]"));
    } else {
      out << ", " << s.min_count << " to " << s.max_count << " values  -> VarLen";
    }
    out << "\n";
  }
}

void inspect_idx(const std::string& path, const InspectOptions& o, std::ostream& out) {
  const Tensor t = read_idx(path);
  out << path << ": IDX " << t.type().to_string() << ", " << (t.rank() > 0 ? t.shape().dim(0) : 1)
      << " records\n";
  if (t.rank() == 0) return;
  const int64_t n = std::min(o.records, t.shape().dim(0));
  for (int64_t i = 0; i < n; ++i) {
    const Tensor row = t.slice_rows(i, i + 1);
    out << "record " << i << ": ";
    if (t.rank() == 1) {
      out << row.get(0) << "\n";
      continue;
    }
    std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
    if (row.num_elements() == 0) {  // a zero dim ([4, 28, 0]): an internal check failed here
      out << dtype_name(t.dtype()) << Shape(dims) << ", no values\n";
      continue;
    }
    double lo = row.get(0), hi = lo, sum = 0;
    for (int64_t k = 0; k < row.num_elements(); ++k) {
      const double v = row.get(k);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    char stats[96];
    std::snprintf(stats, sizeof(stats), ", min %g, max %g, mean %.2f", lo, hi,
                  sum / static_cast<double>(row.num_elements()));
    out << dtype_name(t.dtype()) << Shape(dims) << stats << "\n";
  }
}

std::string column_type(const std::string& text, const std::string& current) {
  if (text.empty() || current == "string") return current;
  char* end = nullptr;
  std::strtoll(text.c_str(), &end, 10);
  if (*end == '\0' && (current == "" || current == "int")) return "int";
  std::strtod(text.c_str(), &end);
  if (*end == '\0' && current != "string") return "float";
  return "string";
}

void inspect_csv(const std::string& path, Compression c, const InspectOptions& o,
                 std::ostream& out) {
  CsvReader reader(path, ',', c, int64_t{1} << 24);
  std::optional<std::vector<CsvField>> header = reader.next_row();
  if (!header) {
    out << path << ": CSV, empty\n";
    return;
  }
  std::vector<std::string> types(header->size());
  std::vector<int64_t> empties(header->size());
  std::vector<std::string> shown;
  int64_t rows = 0;
  while (std::optional<std::vector<CsvField>> row = reader.next_row()) {
    if (rows < o.records) {
      std::string line = str_cat("row ", rows, " (line ", reader.row_line(), "):");
      for (const CsvField& f : *row)
        line += " " + (f.text.empty() ? std::string("<empty>") : printable(f.text));
      shown.push_back(line);
    }
    for (size_t k = 0; k < row->size() && k < types.size(); ++k) {
      types[k] = column_type((*row)[k].text, types[k]);
      if ((*row)[k].text.empty()) ++empties[k];
    }
    ++rows;
  }
  out << path << ": CSV (" << compression_label(c) << "), " << rows << " rows after the header, "
      << header->size() << " columns\n";
  for (size_t k = 0; k < header->size(); ++k) {
    out << "  " << printable((*header)[k].text) << ": " << (types[k].empty() ? "empty" : types[k]);
    if (empties[k] > 0) out << ", " << empties[k] << " empty";
    out << "\n";
  }
  for (const std::string& s : shown) out << s << "\n";
}

}  // namespace

void inspect_data_file(const std::string& path, const InspectOptions& options, std::ostream& out) {
  TERN_CHECK_ARG(options.records >= 0, "inspect: --records must be >= 0, got ", options.records);
  const Compression c = resolve_compression(path, options.compression);
  const std::string format = options.format == "auto" ? detect_format(path, c) : options.format;
  if (format == "tfrecord") return inspect_tfrecord(path, c, options, out);
  if (format == "idx") return inspect_idx(path, options, out);
  if (format == "csv") return inspect_csv(path, c, options, out);
  throw_error(ErrorCode::kInvalidArgument, "inspect: unknown format '", format,
              "' (auto, tfrecord, idx or csv)");
}

}  // namespace tern::data
