// `tern data bench` pipelines: a one-line spec parsed into datasets (image stages fused into one
// parallel map), and a timer that runs them.
#include <chrono>
#include <sstream>

#include "tern/base/error.h"
#include "tern/data/data.h"
#include "tern/data/tfrecord_reader.h"
#include "tools/tern/data_tools.h"

namespace tern::tools {
namespace {

using data::DatasetPtr;
using data::ImageAugment;
using data::ImageSource;

struct Stage {
  std::string name;
  std::vector<std::string> args;                        // positional
  std::vector<std::pair<std::string, std::string>> kv;  // key=value
  std::string text;

  std::string get(const std::string& key, const std::string& fallback) const {
    for (const auto& [k, v] : kv)
      if (k == key) return v;
    return fallback;
  }
};

std::vector<Stage> split_stages(const std::string& spec) {
  std::vector<Stage> out;
  std::stringstream all(spec);
  std::string part;
  while (std::getline(all, part, '|')) {
    std::stringstream words(part);
    Stage s;
    std::string w;
    while (words >> w) {
      if (s.name.empty()) {
        s.name = w;
      } else if (auto eq = w.find('='); eq != std::string::npos && eq > 0) {
        s.kv.emplace_back(w.substr(0, eq), w.substr(eq + 1));
      } else {
        s.args.push_back(w);
      }
      s.text += (s.text.empty() ? "" : " ") + w;
    }
    TERN_CHECK_ARG(!s.name.empty(), "pipeline: empty stage in '", spec, "'");
    out.push_back(std::move(s));
  }
  TERN_CHECK_ARG(!out.empty(), "pipeline: empty pipeline");
  return out;
}

int64_t to_int(const Stage& s, const std::string& text) {
  try {
    size_t used = 0;
    const int64_t v = std::stoll(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw_error(ErrorCode::kInvalidArgument, "pipeline stage '", s.text, "': '", text,
              "' is not an integer");
}

float to_float(const Stage& s, const std::string& text) {
  try {
    size_t used = 0;
    const float v = std::stof(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw_error(ErrorCode::kInvalidArgument, "pipeline stage '", s.text, "': '", text,
              "' is not a number");
}

std::vector<float> to_floats(const Stage& s, const std::string& text) {
  std::vector<float> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(to_float(s, item));
  return out;
}

void expect_args(const Stage& s, size_t min, size_t max) {
  TERN_CHECK_ARG(s.args.size() >= min && s.args.size() <= max, "pipeline stage '", s.text,
                 "': expected ", min == max ? str_cat(min) : str_cat(min, " to ", max),
                 " arguments, got ", s.args.size());
}

// A FixedLen spec per selected feature of the first record (bytes lists of several values and
// empty lists become VarLen).
std::vector<data::FeatureSpec> infer_spec(const std::vector<std::string>& files,
                                          data::TFRecordOptions options,
                                          const std::vector<std::string>& selected) {
  TERN_CHECK_ARG(!files.empty(), "parse_example: no tfrecord source before it");
  data::TFRecordReader reader(files[0], options);
  std::optional<std::string> first = reader.read();
  TERN_CHECK_ARG(first.has_value(), files[0], ": no records to infer a feature spec from");
  const data::Example ex = data::parse_example_proto(*first, files[0] + " record 0");
  std::vector<std::string> names = selected;
  if (names.empty())
    for (const auto& [name, f] : ex.features) names.push_back(name);
  std::vector<data::FeatureSpec> specs;
  for (const std::string& name : names) {
    auto it = ex.features.find(name);
    TERN_CHECK_ARG(it != ex.features.end(), "parse_example: ", files[0],
                   " record 0 has no feature '", name, "'");
    const data::Feature& f = it->second;
    TERN_CHECK_ARG(f.kind != data::FeatureKind::kNone, "parse_example: feature '", name,
                   "' is empty in record 0");
    const auto n = static_cast<int64_t>(f.size());
    if (n == 0 || (f.kind == data::FeatureKind::kBytes && n > 1)) {
      specs.push_back(data::var_len_feature(name, f.kind));
    } else if (f.kind == data::FeatureKind::kBytes || n == 1) {
      specs.push_back(data::fixed_len_feature(name, f.kind));
    } else {
      specs.push_back(data::fixed_len_feature(name, f.kind, {n}));
    }
  }
  return specs;
}

class Builder {
 public:
  explicit Builder(const PipelineOptions& o) : options_(o) {}

  void add(const Stage& s) {
    if (add_image_stage(s)) return;
    flush_images();
    if (s.name == "images") {
      expect_args(s, 1, 1);
      const data::ImageFolder f = data::list_image_folder(s.args[0]);
      set_source(data::file_label_dataset(f.files, f.labels), ImageSource::kFilePath,
                 str_cat("images(", f.files.size(), " files, ", f.class_names.size(), " classes)"));
    } else if (s.name == "files") {
      expect_args(s, 1, 64);
      set_source(data::list_files(s.args), ImageSource::kFilePath, "files");
    } else if (s.name == "tfrecord") {
      expect_args(s, 1, 64);
      tfrecord_files_ = s.args;
      tfrecord_options_.compression = data::parse_compression(s.get("compression", ""));
      set_source(data::tfrecord_dataset(s.args, tfrecord_options_), ImageSource::kEncodedBytes,
                 "tfrecord");
    } else if (s.name == "idx") {
      expect_args(s, 1, 2);
      set_source(data::idx_dataset(s.args), ImageSource::kTensor, "idx");
    } else if (s.name == "parse_example") {
      std::vector<data::FeatureSpec> specs = infer_spec(tfrecord_files_, tfrecord_options_, s.args);
      need_source(s);
      ds_ = data::parse_example(ds_, specs, {.num_parallel_calls = options_.map_threads});
      source_ = ImageSource::kEncodedBytes;  // component 0 may be an encoded image
      stages_.push_back(str_cat("parse_example(", specs.size(), " features)"));
    } else {
      add_transform(s);
    }
  }

  Pipeline finish() {
    flush_images();
    TERN_CHECK_ARG(ds_ != nullptr, "pipeline: no source stage");
    return {ds_, stages_, batched_};
  }

 private:
  void set_source(DatasetPtr ds, ImageSource kind, std::string name) {
    TERN_CHECK_ARG(ds_ == nullptr, "pipeline: a second source stage '", name, "'");
    ds_ = std::move(ds);
    source_ = kind;
    stages_.push_back(std::move(name));
  }
  void need_source(const Stage& s) {
    TERN_CHECK_ARG(ds_ != nullptr, "pipeline stage '", s.text, "' comes before any source");
  }

  // Image stages accumulate into one ImageAugment while they come in canonical order.
  bool add_image_stage(const Stage& s) {
    static const std::vector<std::string> kOrder = {"decode",     "resize",   "crop",     "flip",
                                                    "brightness", "contrast", "normalize"};
    auto it = std::find(kOrder.begin(), kOrder.end(), s.name);
    if (it == kOrder.end()) return false;
    need_source(s);
    const int rank = static_cast<int>(it - kOrder.begin());
    if (rank <= last_rank_) flush_images();
    if (last_rank_ < 0) augment_ = ImageAugment{};
    last_rank_ = rank;
    fused_.push_back(s.name);
    if (s.name == "decode") {
      expect_args(s, 0, 0);
      TERN_CHECK_ARG(source_ != ImageSource::kTensor,
                     "pipeline stage 'decode': the elements "
                     "already hold decoded images");
      augment_.source = source_;
      augment_.decode.channels = static_cast<int>(to_int(s, s.get("channels", "0")));
    } else if (s.name == "resize" || s.name == "crop") {
      expect_args(s, 2, 2);
      (s.name == "resize" ? augment_.resize_height : augment_.crop_height) = to_int(s, s.args[0]);
      (s.name == "resize" ? augment_.resize_width : augment_.crop_width) = to_int(s, s.args[1]);
    } else if (s.name == "flip") {
      expect_args(s, 0, 0);
      augment_.flip_left_right = true;
    } else if (s.name == "brightness") {
      expect_args(s, 1, 1);
      augment_.max_brightness_delta = to_float(s, s.args[0]);
    } else if (s.name == "contrast") {
      expect_args(s, 2, 2);
      augment_.contrast_lower = to_float(s, s.args[0]);
      augment_.contrast_upper = to_float(s, s.args[1]);
    } else {
      expect_args(s, 0, 0);
      augment_.mean = to_floats(s, s.get("mean", "0"));
      augment_.stddev = to_floats(s, s.get("std", "1"));
    }
    if (s.name != "decode" && augment_.source == ImageSource::kTensor) {
      TERN_CHECK_ARG(source_ == ImageSource::kTensor, "pipeline stage '", s.text,
                     "': the elements hold file paths or encoded images; add 'decode' first");
    }
    return true;
  }

  void flush_images() {
    if (last_rank_ < 0) return;
    std::string name = "map(";
    for (size_t i = 0; i < fused_.size(); ++i) name += (i ? "+" : "") + fused_[i];
    ds_ = data::augment_images(ds_, augment_, options_.seed + augment_count_++,
                               {.num_parallel_calls = options_.map_threads});
    stages_.push_back(name + ")");
    source_ = ImageSource::kTensor;
    last_rank_ = -1;
    fused_.clear();
  }

  void add_transform(const Stage& s) {
    need_source(s);
    if (s.name == "shuffle") {
      expect_args(s, 1, 1);
      ds_ = ds_->shuffle(to_int(s, s.args[0]),
                         static_cast<uint64_t>(to_int(s, s.get("seed", str_cat(options_.seed)))));
    } else if (s.name == "batch") {
      expect_args(s, 1, 2);
      TERN_CHECK_ARG(s.args.size() == 1 || s.args[1] == "drop_remainder", "pipeline stage '",
                     s.text, "': the second argument can only be drop_remainder");
      ds_ = ds_->batch(to_int(s, s.args[0]), s.args.size() == 2);
      batched_ = true;
    } else if (s.name == "prefetch") {
      expect_args(s, 0, 1);
      ds_ = ds_->prefetch(s.args.empty() ? data::kAutotune : to_int(s, s.args[0]));
    } else if (s.name == "repeat") {
      expect_args(s, 0, 1);
      ds_ = ds_->repeat(s.args.empty() ? -1 : to_int(s, s.args[0]));
    } else if (s.name == "take" || s.name == "skip") {
      expect_args(s, 1, 1);
      ds_ = s.name == "take" ? ds_->take(to_int(s, s.args[0])) : ds_->skip(to_int(s, s.args[0]));
    } else if (s.name == "cache") {
      expect_args(s, 0, 0);
      ds_ = ds_->cache();
    } else {
      throw_error(ErrorCode::kInvalidArgument, "pipeline: unknown stage '", s.name,
                  "' (see tern data bench --help)");
    }
    stages_.push_back(s.text);
  }

  PipelineOptions options_;
  DatasetPtr ds_;
  ImageSource source_ = ImageSource::kTensor;
  bool batched_ = false;
  std::vector<std::string> stages_;
  std::vector<std::string> tfrecord_files_;
  data::TFRecordOptions tfrecord_options_;
  ImageAugment augment_;
  int last_rank_ = -1;
  std::vector<std::string> fused_;
  uint64_t augment_count_ = 0;
};

}  // namespace

Pipeline build_pipeline(const std::string& spec, const PipelineOptions& options) {
  Builder b(options);
  for (const Stage& s : split_stages(spec)) b.add(s);
  return b.finish();
}

BenchResult bench_pipeline(const Pipeline& p, int64_t epochs, int64_t warmup_epochs,
                           int64_t max_batches) {
  TERN_CHECK_ARG(epochs >= 1, "bench: epochs must be >= 1, got ", epochs);
  BenchResult r;
  for (int64_t e = 0; e < warmup_epochs + epochs; ++e) {
    const bool timed = e >= warmup_epochs;
    const auto t0 = std::chrono::steady_clock::now();
    data::Iterator it = p.dataset->make_iterator(static_cast<uint64_t>(e));
    int64_t batches = 0, rows = 0;
    while (max_batches < 0 || batches < max_batches) {
      std::optional<data::Element> b = it.next();
      if (!b) break;
      ++batches;
      rows += p.batched && !b->empty() && (*b)[0].rank() > 0 ? (*b)[0].shape().dim(0) : 1;
    }
    if (!timed) continue;
    r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.batches += batches;
    r.rows += rows;
    r.stats = it.stats_report();
  }
  return r;
}

}  // namespace tern::tools
