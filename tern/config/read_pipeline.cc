// The input-pipeline keys of [data] -> data::PipelineSpec, checked key by key (read_sections.h).

#include <algorithm>
#include <array>
#include <tuple>

#include "tern/config/config_readers.h"
#include "tern/config/read_sections.h"

namespace tern::config {
namespace {

const std::vector<std::string> kSources = {"idx",      "fashion_mnist", "mnist",
                                           "tfrecord", "csv",           "image_dir"};
// Keys that belong to some sources only.
const std::vector<std::pair<std::string, std::vector<std::string>>> kSourceKeys = {
    {"train_files", {"tfrecord", "csv"}},
    {"test_files", {"tfrecord", "csv"}},
    {"validation_files", {"tfrecord", "csv"}},
    {"compression", {"tfrecord", "csv"}},
    {"parallel_reads", {"tfrecord", "csv"}},
    {"skip_corrupt", {"tfrecord"}},
    {"input", {"tfrecord"}},
    {"label", {"tfrecord"}},
    {"features", {"tfrecord"}},
    {"csv", {"csv"}},
    {"train_dir", {"image_dir"}},
    {"test_dir", {"image_dir"}},
    {"validation_dir", {"image_dir"}},
    {"image_dir", {"image_dir"}},
    {"train_images", {"idx"}},
    {"train_labels", {"idx"}},
    {"test_images", {"idx"}},
    {"test_labels", {"idx"}},
    {"dir", {"fashion_mnist", "mnist"}},
};

std::vector<data::FeatureSpec> read_features(Section& data, const std::string& input,
                                             const std::string& label) {
  Section features = data.sub("features");
  if (!features.present())
    data.error("source",
               "source = \"tfrecord\" needs a [data.features] table (the tf.Example feature spec)");
  std::vector<std::string> names = features.keys();
  for (const auto& [key, name] : {std::pair{"input", input}, std::pair{"label", label}}) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      data.error(key, str_cat("data.", key, " = '", name, "' is not a feature in [data.features]",
                              did_you_mean(name, names), "; features: ", join(names)));
    }
  }
  for (const auto& name : names) {
    if (name != input && name != label) {
      features.error(
          name, str_cat("feature '", name, "' in [data.features] is neither data.input ('", input,
                        "') nor data.label ('", label, "')"));
    }
  }
  std::vector<data::FeatureSpec> specs;
  for (const std::string& name : {input, label}) {
    Section f = features.sub(name);
    std::string type = read_choice(f, "type", {"float", "int64", "bytes"}, "");
    data::FeatureKind kind = type == "float"   ? data::FeatureKind::kFloat
                             : type == "int64" ? data::FeatureKind::kInt64
                                               : data::FeatureKind::kBytes;
    data::FeatureSpec spec = data::fixed_len_feature(name, kind);
    f.read("shape", spec.shape);
    f.read_numbers("default", spec.default_value);
    if (f.has("dtype")) spec.dtype = read_dtype(f, "dtype");
    f.finish();
    try {
      data::validate_feature_specs({spec}, "feature");
    } catch (const Error& e) {
      f.error("type", str_cat("[data.features] ", name, ": ", e.message()));
    }
    specs.push_back(std::move(spec));
  }
  features.finish();
  return specs;
}

void read_csv(Section& data, data::SourceSpec& src) {
  Section csv = data.sub("csv");
  if (!csv.present())
    data.error("source", "source = \"csv\" needs a [data.csv] table (columns, label_column)");
  auto types = read_required<std::vector<std::string>>(csv, "columns");
  std::vector<double> defaults;
  csv.read_numbers("defaults", defaults);
  if (!defaults.empty() && defaults.size() != types.size()) {
    csv.error("defaults", str_cat("data.csv.defaults has ", defaults.size(), " values for ",
                                  types.size(), " columns"));
  }
  const std::vector<std::string> kinds = {"float", "double", "int32", "int64"};
  for (size_t i = 0; i < types.size(); ++i) {
    auto it = std::find(kinds.begin(), kinds.end(), types[i]);
    if (it == kinds.end()) {
      csv.error("columns", str_cat("data.csv.columns[", i, "] = '", types[i], "' is not one of ",
                                   join(kinds), did_you_mean(types[i], kinds)));
    }
    data::CsvColumn c;
    c.dtype = std::array{DType::kF32, DType::kF64, DType::kI32,
                         DType::kI64}[static_cast<size_t>(it - kinds.begin())];
    if (!defaults.empty()) c.default_value = defaults[i];
    src.csv.columns.push_back(c);
  }
  src.label_column = static_cast<int64_t>(types.size()) - 1;
  csv.read("label_column", src.label_column);
  if (types.size() < 2 || src.label_column < 0 ||
      src.label_column >= static_cast<int64_t>(types.size())) {
    csv.error("label_column",
              str_cat("data.csv.label_column = ", src.label_column, " must name one of the ",
                      types.size(), " columns, and one column at least must be left as features"));
  }
  csv.read("header", src.csv.header);
  std::string delimiter = ",";
  csv.read("delimiter", delimiter);
  if (delimiter.size() != 1) csv.error("delimiter", "data.csv.delimiter must be one character");
  src.csv.delimiter = delimiter[0];
  csv.finish();
}

void read_image_dir(Section& data, data::SourceSpec& src, const TrainConfig& c) {
  Section im = data.sub("image_dir");
  if (!im.present())
    data.error("source", "source = \"image_dir\" needs a [data.image_dir] table (image_size)");
  im.read("decode", src.decode);
  if (src.decode || im.has("image_size"))
    std::tie(src.image_height, src.image_width) = read_size(im, "image_size");
  im.read("channels", src.channels);
  if (src.channels != 1 && src.channels != 3 && src.channels != 4)
    im.error("channels", "data.image_dir.channels must be 1, 3 or 4");
  src.categorical = read_choice(im, "labels", {"int", "categorical"}, "int") == "categorical";
  im.read("class_names", src.class_names);
  src.interpolation =
      read_choice(im, "interpolation", {"bilinear", "nearest"}, "bilinear") == "nearest"
          ? data::ResizeMethod::kNearest
          : data::ResizeMethod::kBilinear;
  im.read("parallel", src.decode_parallel);
  im.finish();
  src.validation_split = c.data.validation_split;
}

// data.dataset and data.shuffle_buffer belong to the other data path; the source-specific keys
// to their sources.
void check_source_keys(const Section& data, const std::string& source) {
  if (data.has("dataset"))
    data.error(
        "dataset",
        "data.dataset and data.source exclude each other: data.source describes an input pipeline");
  if (data.has("shuffle_buffer"))
    data.error("shuffle_buffer",
               "data.shuffle_buffer is for data.dataset; with data.source, add a "
               "[[data.transforms]] op = \"shuffle\"");
  for (const auto& [key, sources] : kSourceKeys) {
    if (data.has(key) && std::find(sources.begin(), sources.end(), source) == sources.end()) {
      data.error(key, str_cat("key 'data.", key, "' is for source ", join(sources), ", not \"",
                              source, "\""));
    }
  }
}

// idx (the four files), or fashion_mnist / mnist (Debian's file names under data.dir).
void read_idx_inputs(const Section& data, DataConfig& p) {
  p.pipeline.source.kind = data::SourceKind::kIdx;
  if (p.source == "idx") {
    p.train_inputs = {p.train_images, p.train_labels};
    p.test_inputs = {p.test_images, p.test_labels};
    for (const auto& key : {"train_images", "train_labels", "test_images", "test_labels"}) {
      if (!data.has(key)) data.error("source", str_cat("source = \"idx\" needs data.", key));
    }
  } else {
    p.train_inputs = {p.dir + "/train-images-idx3-ubyte.gz", p.dir + "/train-labels-idx1-ubyte.gz"};
    p.test_inputs = {p.dir + "/t10k-images-idx3-ubyte.gz", p.dir + "/t10k-labels-idx1-ubyte.gz"};
  }
}

// tfrecord and csv: file patterns per split, compression, parallel reads, then the feature spec or
// the columns.
void read_record_files(Section& data, DataConfig& p) {
  data::SourceSpec& src = p.pipeline.source;
  src.kind = p.source == "csv" ? data::SourceKind::kCsv : data::SourceKind::kTFRecord;
  for (auto [key, out] :
       {std::pair{"train_files", &p.train_inputs}, std::pair{"test_files", &p.test_inputs}}) {
    data.read_strings(key, *out);
    if (out->empty()) data.error(key, str_cat("source = \"", p.source, "\" needs data.", key));
  }
  data.read_strings("validation_files", p.validation_inputs);
  std::string compression = p.source == "csv" ? "auto" : "";
  data.read("compression", compression);
  try {
    data::Compression mode = compression == "auto" && p.source == "csv"
                                 ? data::Compression::kAuto
                                 : data::parse_compression(compression);
    src.tfrecord.compression = mode;
    src.csv.compression = mode;
  } catch (const Error& e) {
    data.error("compression", str_cat("key 'data.compression': ", e.message()));
  }
  data.read("skip_corrupt", src.tfrecord.skip_corrupt);
  data.read("parallel_reads", src.parallel_reads);
  if (src.parallel_reads < 1) data.error("parallel_reads", "data.parallel_reads must be >= 1");
  std::string input = "image", label = "label";
  data.read("input", input);
  data.read("label", label);
  if (p.source == "tfrecord") {
    if (input == label) data.error("label", "data.input and data.label name the same feature");
    src.features = read_features(data, input, label);
  } else {
    read_csv(data, src);
  }
}

// image_dir: one root folder per split, then [data.image_dir].
void read_image_dirs(Section& data, TrainConfig& c) {
  DataConfig& p = c.data;
  p.pipeline.source.kind = data::SourceKind::kImageDir;
  for (auto [key, out] :
       {std::pair{"train_dir", &p.train_inputs}, std::pair{"test_dir", &p.test_inputs}}) {
    std::string dir;
    data.read(key, dir);
    if (dir.empty()) data.error("source", str_cat("source = \"image_dir\" needs data.", key));
    *out = {dir};
  }
  std::string dir;
  data.read("validation_dir", dir);
  if (!dir.empty()) p.validation_inputs = {dir};
  read_image_dir(data, p.pipeline.source, c);
}

}  // namespace

void read_pipeline(Section& data, TrainConfig& c) {
  DataConfig& p = c.data;
  if (!data.has("source")) {
    for (const auto& key : {"train_files", "test_files", "validation_files", "compression",
                            "parallel_reads", "skip_corrupt", "input", "label", "features", "csv",
                            "train_dir", "test_dir", "validation_dir", "image_dir", "transforms"}) {
      if (data.has(key))
        data.error(key, str_cat("key 'data.", key, "' needs data.source (an input pipeline)"));
    }
    data.read("source", p.source);  // known, absent
    return;
  }
  p.source = read_choice(data, "source", kSources, "");
  check_source_keys(data, p.source);
  p.pipeline.source.seed = c.training.fit.seed;
  if (p.source == "idx" || p.source == "fashion_mnist" || p.source == "mnist") {
    read_idx_inputs(data, p);
  } else if (p.source == "tfrecord" || p.source == "csv") {
    read_record_files(data, p);
  } else {
    read_image_dirs(data, c);
  }
  if (p.validation_split > 0) {
    if (p.source == "tfrecord" || p.source == "csv") {
      data.error("validation_split",
                 str_cat("data.validation_split needs an IDX or image_dir source; for \"", p.source,
                         "\" give data.validation_files"));
    }
    if (!p.validation_inputs.empty())
      data.error("validation_split",
                 "data.validation_split and data.validation_dir exclude each other");
    p.validation_from_split = true;
  }
  read_pipeline_transforms(data, c);
}

}  // namespace tern::config
