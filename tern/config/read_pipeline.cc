// The input-pipeline keys of [data] -> data::PipelineSpec, checked key by key (read_sections.h).

#include <algorithm>
#include <array>
#include <tuple>

#include "tern/base/thread_pool.h"
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
    data::CsvColumn column;
    column.dtype = std::array{DType::kF32, DType::kF64, DType::kI32,
                              DType::kI64}[static_cast<size_t>(it - kinds.begin())];
    if (!defaults.empty()) column.default_value = defaults[i];
    src.csv.columns.push_back(column);
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

void read_image_dir(Section& data, data::SourceSpec& src, const TrainConfig& cfg) {
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
  if (std::string why = thread_count_problem(src.decode_parallel, false, true); !why.empty()) {
    im.error("parallel", str_cat("key '", im.full("parallel"), "' ", why));
  }
  im.finish();
  src.validation_split = cfg.data.validation_split;
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
void read_idx_inputs(const Section& data, DataConfig& data_config) {
  data_config.pipeline.source.kind = data::SourceKind::kIdx;
  if (data_config.source == "idx") {
    data_config.train_inputs = {data_config.train_images, data_config.train_labels};
    data_config.test_inputs = {data_config.test_images, data_config.test_labels};
    for (const auto& key : {"train_images", "train_labels", "test_images", "test_labels"}) {
      if (!data.has(key)) data.error("source", str_cat("source = \"idx\" needs data.", key));
    }
  } else {
    data_config.train_inputs = {data_config.dir + "/train-images-idx3-ubyte.gz",
                                data_config.dir + "/train-labels-idx1-ubyte.gz"};
    data_config.test_inputs = {data_config.dir + "/t10k-images-idx3-ubyte.gz",
                               data_config.dir + "/t10k-labels-idx1-ubyte.gz"};
  }
}

// tfrecord and csv: file patterns per split, compression, parallel reads, then the feature spec or
// the columns.
void read_record_files(Section& data, DataConfig& data_config) {
  data::SourceSpec& src = data_config.pipeline.source;
  src.kind = data_config.source == "csv" ? data::SourceKind::kCsv : data::SourceKind::kTFRecord;
  for (auto [key, out] : {std::pair{"train_files", &data_config.train_inputs},
                          std::pair{"test_files", &data_config.test_inputs}}) {
    data.read_strings(key, *out);
    if (out->empty())
      data.error(key, str_cat("source = \"", data_config.source, "\" needs data.", key));
  }
  data.read_strings("validation_files", data_config.validation_inputs);
  std::string compression = data_config.source == "csv" ? "auto" : "";
  data.read("compression", compression);
  try {
    data::Compression mode = compression == "auto" && data_config.source == "csv"
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
  if (data_config.source == "tfrecord") {
    if (input == label) data.error("label", "data.input and data.label name the same feature");
    src.features = read_features(data, input, label);
  } else {
    read_csv(data, src);
  }
}

// image_dir: one root folder per split, then [data.image_dir].
void read_image_dirs(Section& data, TrainConfig& cfg) {
  DataConfig& data_config = cfg.data;
  data_config.pipeline.source.kind = data::SourceKind::kImageDir;
  for (auto [key, out] : {std::pair{"train_dir", &data_config.train_inputs},
                          std::pair{"test_dir", &data_config.test_inputs}}) {
    std::string dir;
    data.read(key, dir);
    if (dir.empty()) data.error("source", str_cat("source = \"image_dir\" needs data.", key));
    *out = {dir};
  }
  std::string dir;
  data.read("validation_dir", dir);
  if (!dir.empty()) data_config.validation_inputs = {dir};
  read_image_dir(data, data_config.pipeline.source, cfg);
}

}  // namespace

void read_pipeline(Section& data, TrainConfig& cfg) {
  DataConfig& data_config = cfg.data;
  if (!data.has("source")) {
    for (const auto& key : {"train_files", "test_files", "validation_files", "compression",
                            "parallel_reads", "skip_corrupt", "input", "label", "features", "csv",
                            "train_dir", "test_dir", "validation_dir", "image_dir", "transforms"}) {
      if (data.has(key))
        data.error(key, str_cat("key 'data.", key, "' needs data.source (an input pipeline)"));
    }
    data.read("source", data_config.source);  // known, absent
    return;
  }
  data_config.source = read_choice(data, "source", kSources, "");
  check_source_keys(data, data_config.source);
  data_config.pipeline.source.seed = cfg.training.fit.seed;
  if (data_config.source == "idx" || data_config.source == "fashion_mnist" ||
      data_config.source == "mnist") {
    read_idx_inputs(data, data_config);
  } else if (data_config.source == "tfrecord" || data_config.source == "csv") {
    read_record_files(data, data_config);
  } else {
    read_image_dirs(data, cfg);
  }
  if (data_config.validation_split > 0) {
    if (data_config.source == "tfrecord" || data_config.source == "csv") {
      data.error("validation_split",
                 str_cat("data.validation_split needs an IDX or image_dir source; for \"",
                         data_config.source, "\" give data.validation_files"));
    }
    if (!data_config.validation_inputs.empty())
      data.error("validation_split",
                 "data.validation_split and data.validation_dir exclude each other");
    data_config.validation_from_split = true;
  }
  read_pipeline_transforms(data, cfg);
}

}  // namespace tern::config
