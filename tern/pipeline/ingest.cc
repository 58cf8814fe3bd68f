// ingest: the options, the splits and their shard writers (the RecordSink), the format of the
// inputs, and the TFRecord and IDX sources. CSV is ingest_csv.cc, image folders ingest_images.cc.
#include "tern/pipeline/ingest.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include "tern/base/error.h"
#include "tern/base/progress_line.h"
#include "tern/base/terminal.h"
#include "tern/data/idx_dataset.h"
#include "tern/data/image_convert.h"
#include "tern/data/input_stream.h"
#include "tern/data/tfrecord_reader.h"
#include "tern/data/tfrecord_writer.h"
#include "tern/format/crc32c.h"
#include "tern/pipeline/ingest_internal.h"
#include "tern/pipeline/stable_hash.h"

namespace tern::pipeline {

namespace fs = std::filesystem;
using data::Example;
using data::Feature;
using data::FeatureKind;

size_t split_of(std::string_view key, const std::vector<double>& cumulative) {
  const double u = static_cast<double>(stable_hash64(key) >> 11) * 0x1p-53;
  for (size_t i = 0; i < cumulative.size(); ++i)
    if (u < cumulative[i]) return i;
  return cumulative.empty() ? 0 : cumulative.size() - 1;
}

namespace ingest_internal {

std::string split_key_bytes(const Example& example, const std::string& name,
                            const std::string& where) {
  auto it = example.features.find(name);
  TERN_CHECK_ARG(it != example.features.end() && it->second.size() > 0, where, ": split_key '",
                 name, "' is missing (every record needs it to pick its split)");
  const Feature& f = it->second;
  switch (f.kind) {
    case FeatureKind::kBytes:
      return f.bytes_list[0];
    case FeatureKind::kInt64:
      return std::to_string(f.int64_list[0]);
    case FeatureKind::kFloat: {
      char buf[64];
      auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), f.float_list[0]);
      return std::string(buf, end);
    }
    case FeatureKind::kNone:
      break;
  }
  return {};
}

// --- TFRecord ---
void tfrecord_records(const std::vector<std::string>& files, RecordSink& sink) {
  for (const std::string& file : files) {
    data::TFRecordReader reader(file, {.compression = data::Compression::kAuto});
    sink.expect(-1);
    int64_t index = 0;
    while (std::optional<std::string> record = reader.read()) {
      const std::string where = str_cat(file, " record ", index++);
      TERN_CHECK_ARG(!data::looks_like_sequence_example(*record), where,
                     ": a tf.train.SequenceExample; ingest takes tf.train.Example records");
      const Example ex = data::parse_example_proto(*record, where);
      sink.add(*record, ex, where);
    }
  }
}

// --- IDX ---
void idx_records(const std::vector<std::string>& files, const std::string& labels_file,
                 RecordSink& sink) {
  std::vector<std::pair<std::string, Tensor>> images, labels;
  for (const std::string& file : files) {
    Tensor t = data::read_idx(file);
    if (t.rank() == 1) {
      labels.emplace_back(file, std::move(t));
    } else if ((t.rank() == 3 || t.rank() == 4) && t.dtype() == DType::kU8) {
      images.emplace_back(file, std::move(t));
    } else {
      throw_error(ErrorCode::kInvalidArgument, file, ": IDX ", t.type().to_string(),
                  " is neither images (u8 [N, H, W] or [N, H, W, C]) nor labels ([N])");
    }
  }
  if (!labels_file.empty()) {
    TERN_CHECK_ARG(images.size() == 1 && labels.empty(), "ingest: labels = \"", labels_file,
                   "\" goes with one IDX images file, not ", images.size(), " images and ",
                   labels.size(), " labels files");
    labels.emplace_back(labels_file, data::read_idx(labels_file));
    TERN_CHECK_ARG(labels.back().second.rank() == 1, labels_file, ": labels must be IDX [N], got ",
                   labels.back().second.type().to_string());
  }
  TERN_CHECK_ARG(!images.empty(), "ingest: no IDX images file among the inputs");
  TERN_CHECK_ARG(labels.empty() || labels.size() == images.size(), "ingest: ", images.size(),
                 " IDX images files but ", labels.size(), " labels files (pair them in order)");
  for (size_t k = 0; k < images.size(); ++k) {
    const auto& [file, img] = images[k];
    const auto& d = img.shape().dims();
    const int64_t n = d[0], h = d[1], w = d[2], c = img.rank() == 4 ? d[3] : 1;
    const Tensor* lab = labels.empty() ? nullptr : &labels[k].second;
    if (lab != nullptr)
      TERN_CHECK_ARG(lab->shape().dim(0) == n, labels[k].first, ": ", lab->shape().dim(0),
                     " labels for the ", n, " images of ", file);
    sink.expect(n);
    const auto* pixels = img.data<uint8_t>();
    const auto row = static_cast<size_t>(h * w * c);
    for (int64_t i = 0; i < n; ++i) {
      const std::string where = str_cat(file, " image ", i);
      const std::string bytes(reinterpret_cast<const char*>(pixels) + static_cast<size_t>(i) * row,
                              row);
      Example ex = data::image_example(bytes, "raw", h, w, c);
      if (lab != nullptr) {
        const double v = lab->get(i);
        TERN_CHECK_ARG(v == std::floor(v), labels[k].first, ": label ", v, " at index ", i,
                       " is not an integer");
        ex.features["image/class/label"] = Feature::int64s({static_cast<int64_t>(v)});
      }
      sink.add(data::serialize_example(ex), ex, where);
    }
  }
}

}  // namespace ingest_internal

namespace {

using ingest_internal::RecordSink;

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A file whose first 12 (decompressed) bytes are a valid TFRecord length header.
bool looks_like_tfrecord(const std::string& path) {
  std::unique_ptr<data::InputStream> in = data::InputStream::open(path, data::Compression::kAuto);
  unsigned char head[12];
  if (in->read(head, 12) != 12) return false;
  uint32_t stored = 0;
  std::memcpy(&stored, head + 8, 4);
  return format::crc32c_mask(format::crc32c(head, 8)) == stored;
}

std::string detect_format(const std::string& input) {
  TERN_CHECK_ARG(fs::exists(input), "ingest: input ", input, " does not exist");
  if (fs::is_directory(input)) return "image_folder";
  if (ends_with(input, ".csv") || ends_with(input, ".csv.gz") || ends_with(input, ".tsv"))
    return "csv";
  for (const char* ext : {".tfrecord", ".tfrecords", ".tfrecord.gz", ".tfrecords.gz", ".tfr"})
    if (ends_with(input, ext)) return "tfrecord";
  return looks_like_tfrecord(input) ? "tfrecord" : "idx";
}

// A split name usable as one folder: not empty, no '/', NUL, "." or "..".
bool is_folder_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos && name != "." && name != "..";
}

class SplitSink : public RecordSink {
 public:
  SplitSink(std::vector<SplitInfo>& splits, int shards, std::vector<double> cumulative,
            std::string split_key, bool progress)
      : splits_(splits),
        shards_(shards),
        cumulative_(std::move(cumulative)),
        split_key_(std::move(split_key)) {
    if (progress && is_interactive_terminal(STDERR_FILENO))
      line_.emplace(std::cerr, "ingest", "records", -1, true);
    for (SplitInfo& s : splits_) {
      auto& w = writers_.emplace_back();
      for (const std::string& f : s.files) w.push_back(std::make_unique<data::TFRecordWriter>(f));
    }
  }
  // Records go to `split` (-1: by hash).
  void fix_split(int split) { fixed_ = split; }
  void add(std::string_view record, const Example& example, const std::string& where) override {
    size_t s = static_cast<size_t>(fixed_);
    if (fixed_ < 0) {
      std::string_view key = record;
      if (!split_key_.empty()) {
        key_ = ingest_internal::split_key_bytes(example, split_key_, where);
        key = key_;
      }
      s = split_of(key, cumulative_);
    }
    SplitInfo& split = splits_[s];
    writers_[s][static_cast<size_t>(split.records % shards_)]->write(record);
    ++split.records;
    if (line_ && ++done_ % 256 == 0) line_->update(done_);
  }
  void expect(int64_t records) override {
    if (!line_) return;
    total_ = records < 0 || total_ < 0 ? -1 : total_ + records;
    line_->set_total(total_);
  }
  void close() {
    for (auto& w : writers_)
      for (auto& f : w) f->close();
    if (line_) line_->finish();
  }

 private:
  std::vector<SplitInfo>& splits_;
  std::vector<std::vector<std::unique_ptr<data::TFRecordWriter>>> writers_;
  int shards_;
  std::vector<double> cumulative_;
  std::string split_key_, key_;
  int fixed_ = -1;
  std::optional<ProgressLine> line_;
  int64_t done_ = 0, total_ = 0;
};

std::string shard_name(int i, int n) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "data-%05d-of-%05d.tfrecord", i, n);
  return buf;
}

}  // namespace

std::vector<SplitInfo> ingest(const IngestOptions& o, const std::string& out_dir) {
  TERN_CHECK_ARG(o.paths.empty() != o.split_files.empty(),
                 "ingest: give the inputs either as paths (split by hash) or as split_files "
                 "(one list per split), ",
                 o.paths.empty() ? "not neither" : "not both");
  TERN_CHECK_ARG(o.shards >= 1 && o.shards <= 10000, "ingest: shards must be in [1, 10000], got ",
                 o.shards);
  TERN_CHECK_ARG(o.split_files.empty() || o.ratios.empty(),
                 "ingest: ratios split the hashed paths; with split_files each split has its own");
  // The splits, and the groups of inputs feeding them (split -1: by hash).
  std::vector<SplitInfo> splits;
  std::vector<std::pair<int, std::vector<std::string>>> groups;
  std::vector<double> cumulative;
  if (o.split_files.empty()) {
    const auto ratios =
        o.ratios.empty()
            ? std::vector<std::pair<std::string, double>>{{"train", 0.8}, {"eval", 0.2}}
            : o.ratios;
    double total = 0;
    std::set<std::string> names;
    for (const auto& [name, r] : ratios) {
      TERN_CHECK_ARG(is_folder_name(name), "ingest: ratios: '", name, "' is not a split name");
      TERN_CHECK_ARG(names.insert(name).second, "ingest: ratios: split '", name, "' given twice");
      TERN_CHECK_ARG(std::isfinite(r) && r > 0, "ingest: ratios: split '", name,
                     "' needs a ratio > 0, got ", r);
      total += r;
    }
    double sum = 0;
    for (const auto& [name, r] : ratios) {
      splits.push_back({name});
      sum += r / total;
      cumulative.push_back(sum);
    }
    cumulative.back() = 1;
    groups.emplace_back(-1, o.paths);
  } else {
    std::vector<std::string> names;
    for (const char* first : {"train", "eval"})
      if (o.split_files.count(first)) names.push_back(first);
    for (const auto& [name, files] : o.split_files)
      if (name != "train" && name != "eval") names.push_back(name);
    for (const std::string& name : names) {
      TERN_CHECK_ARG(is_folder_name(name), "ingest: split_files: '", name, "' is not a split name");
      TERN_CHECK_ARG(!o.split_files.at(name).empty(), "ingest: split_files: split '", name,
                     "' has no inputs");
      groups.emplace_back(static_cast<int>(splits.size()), o.split_files.at(name));
      splits.push_back({name});
    }
  }
  for (const auto& [split, files] : groups)
    for (const std::string& f : files) TERN_CHECK_ARG(!f.empty(), "ingest: an empty input path");
  const std::string format = o.format.empty() ? detect_format(groups[0].second[0]) : o.format;
  TERN_CHECK_ARG(
      format == "csv" || format == "tfrecord" || format == "idx" || format == "image_folder",
      "ingest: format must be csv, tfrecord, idx or image_folder, got '", format, "'");
  TERN_CHECK_ARG(o.labels.empty() || format == "idx", "ingest: labels is for idx inputs, not ",
                 format);
  TERN_CHECK_ARG(o.column_types.empty() || format == "csv",
                 "ingest: columns (forced column types) is for csv inputs, not ", format);

  // Fresh split folders: stale shards of an earlier run with more shards are removed.
  for (SplitInfo& s : splits) {
    const fs::path dir = fs::path(out_dir) / s.name;
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("data-", 0) == 0 && ends_with(name, ".tfrecord")) fs::remove(e.path());
    }
    for (int i = 0; i < o.shards; ++i) s.files.push_back((dir / shard_name(i, o.shards)).string());
  }
  try {
    SplitSink sink(splits, o.shards, cumulative, o.split_key, o.progress);
    ingest_internal::CsvSchema csv;
    std::vector<std::string> classes;
    if (format == "csv" || format == "image_folder") {
      std::vector<std::string> all;
      for (const auto& [split, files] : groups) all.insert(all.end(), files.begin(), files.end());
      if (format == "csv") csv = ingest_internal::infer_csv_schema(all, o);
      if (format == "image_folder") classes = ingest_internal::image_folder_class_union(all);
    }
    for (const auto& [split, files] : groups) {
      sink.fix_split(split);
      if (format == "csv") ingest_internal::csv_records(files, csv, o, sink);
      if (format == "tfrecord") ingest_internal::tfrecord_records(files, sink);
      if (format == "idx") ingest_internal::idx_records(files, o.labels, sink);
      if (format == "image_folder") ingest_internal::image_folder_records(files, classes, sink);
    }
    sink.close();
  } catch (...) {
    std::error_code ec;
    for (const SplitInfo& s : splits)
      for (const std::string& f : s.files) fs::remove(f, ec);
    throw;
  }
  for (SplitInfo& s : splits)
    for (const std::string& f : s.files) s.bytes += static_cast<int64_t>(fs::file_size(f));
  return splits;
}

}  // namespace tern::pipeline
