// Test helpers of tern/transform: tf.Examples written as TFRecord files, and a CSV file as
// tf.Examples by the ingest rules of issue 14 (a column whose every non-empty cell is a number is
// numeric: int64_list when all are integers, else float_list; other columns bytes_list; an empty
// cell leaves the feature out) -- a small local stand-in for the pipeline's ingest; and the
// skew-test setup on UCI Automobile: a transform analyzed and applied, a model trained on the
// transformed data and exported with the transform in front.
#pragma once

#include <gtest/gtest.h>

#include <charconv>
#include <limits>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tern/data/csv_reader.h"
#include "tern/data/example_parser.h"
#include "tern/data/example_proto.h"
#include "tern/data/tensor_slice_dataset.h"
#include "tern/data/tfrecord_writer.h"
#include "tern/nn/dense.h"
#include "tern/nn/losses.h"
#include "tern/optim/adam.h"
#include "tern/train/callbacks.h"
#include "tern/serve/tensor_value.h"
#include "tern/transform/transform.h"
#include "tern/transform/records.h"

namespace tern::transform::testing {

// UCI Automobile (205 cars: make, fuel, body style, ..., price), shipped by python3-statsmodels.
inline constexpr const char* kAutosCsv =
    "/usr/lib/python3/dist-packages/statsmodels/gam/tests/results/autos.csv";

inline void write_examples(const std::string& path, const std::vector<data::Example>& examples) {
  data::TFRecordWriter w(path);
  for (const auto& e : examples) w.write(data::serialize_example(e));
  w.close();
}

inline data::Example example(std::vector<std::pair<std::string, data::Feature>> features) {
  data::Example e;
  for (auto& [k, v] : features) e.features[k] = std::move(v);
  return e;
}

// A fresh temp directory removed with the object.
struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tern_transform_test_XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

// The rows of `csv` (header first) as Examples; `categorical` columns stay bytes.
inline std::vector<data::Example> csv_examples(const std::string& csv,
                                               const std::set<std::string>& categorical = {}) {
  data::CsvReader reader(csv, ',', data::Compression::kNone, 1 << 20);
  auto header = reader.next_row();
  std::vector<std::vector<std::string>> rows;
  while (auto row = reader.next_row()) {
    std::vector<std::string> cells;
    for (auto& f : *row) cells.push_back(f.text);
    rows.push_back(std::move(cells));
  }
  const size_t cols = header->size();
  auto is_int = [](const std::string& s) {
    int64_t v;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  auto is_number = [](const std::string& s) {
    double v;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
  };
  std::vector<char> kind(cols, 'i');  // i int64, f float, b bytes
  for (size_t c = 0; c < cols; ++c) {
    if (categorical.count((*header)[c].text)) kind[c] = 'b';
    for (const auto& r : rows) {
      if (kind[c] == 'b' || c >= r.size() || r[c].empty()) continue;
      if (!is_number(r[c])) kind[c] = 'b';
      else if (!is_int(r[c])) kind[c] = 'f';
    }
  }
  std::vector<data::Example> out;
  for (const auto& r : rows) {
    data::Example e;
    for (size_t c = 0; c < cols && c < r.size(); ++c) {
      if (r[c].empty()) continue;
      const std::string& name = (*header)[c].text;
      if (kind[c] == 'b') {
        e.features[name] = data::Feature::bytes({r[c]});
      } else if (kind[c] == 'f') {
        e.features[name] = data::Feature::floats({std::stof(r[c])});
      } else {
        e.features[name] = data::Feature::int64s({std::stoll(r[c])});
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

// The transform of the skew tests: numbers with missing values (z_score, scale, bucketize),
// vocabularies, a hash and a cross; the label "drive" (4wd, fwd, rwd).
inline constexpr const char* kAutosSpec = R"([transform]
label = "drive"
[[transform.features]]
input = "price"
op = "z_score"
[[transform.features]]
input = "hp"
op = "z_score"
[[transform.features]]
input = "loss"
op = "z_score"
[[transform.features]]
input = "weight"
op = "scale_to_0_1"
[[transform.features]]
input = "city_mpg"
op = "bucketize"
num_buckets = 4
[[transform.features]]
input = "make"
op = "vocabulary"
top_k = 15
[[transform.features]]
input = "style"
op = "vocabulary"
[[transform.features]]
input = "doors"
op = "vocabulary"
[[transform.features]]
input = "eng_type"
op = "hash"
hash_buckets = 8
[[transform.features]]
inputs = ["fuel", "aspir"]
op = "cross"
hash_buckets = 8
)";

// x [N, D] and label [N] of a transformed TFRecord file.
inline std::pair<Tensor, Tensor> read_transformed_xy(const std::string& path, int64_t dim) {
  std::vector<std::string> records;
  RecordBlocks blocks(path);
  std::vector<std::string_view> views;
  while (blocks.next(views)) records.insert(records.end(), views.begin(), views.end());
  std::vector<std::string_view> all(records.begin(), records.end());
  data::Element e = data::parse_example_batch(
      all, {data::fixed_len_feature("x", data::FeatureKind::kFloat, {dim}),
            data::fixed_len_feature("label", data::FeatureKind::kInt64)});
  return {e[0], e[1]};
}

// The raw features of `examples` as a predict request: numbers (NaN where missing), strings
// ("" where missing).
inline serve::TensorMap raw_request(const TransformSpec& spec,
                                    const std::vector<data::Example>& examples) {
  serve::TensorMap inputs;
  const int64_t n = static_cast<int64_t>(examples.size());
  for (const auto& f : spec.raw_features()) {
    if (f.kind == RawKind::kNumeric) {
      Tensor t(DType::kF32, Shape{n});
      for (int64_t i = 0; i < n; ++i) {
        const data::Example& e = examples[static_cast<size_t>(i)];
        auto it = e.features.find(f.name);
        float v = std::numeric_limits<float>::quiet_NaN();
        if (it != e.features.end()) {
          v = it->second.kind == data::FeatureKind::kFloat
                  ? it->second.float_list[0]
                  : static_cast<float>(it->second.int64_list[0]);
        }
        t.data<float>()[i] = v;
      }
      inputs[f.name] = serve::TensorValue::from_tensor(t);
    } else {
      std::vector<std::string> s;
      for (const auto& e : examples) {
        auto it = e.features.find(f.name);
        s.push_back(it == e.features.end() ? "" : it->second.bytes_list[0]);
      }
      inputs[f.name] = serve::TensorValue::from_strings({n}, s);
    }
  }
  return inputs;
}

// autos.csv split (every fifth car to eval), the transform analyzed on train and written to
// DIR/transform, both splits applied, a 2-layer MLP trained 5 epochs on the transformed train
// split, and exported with the transform to DIR/models/autos/1.
struct AutosModel {
  TransformSpec spec;
  std::vector<data::Example> train, eval;
  Tensor eval_x;         // the transformed eval split
  Tensor want_logits;    // the trained model on eval_x
  std::vector<double> losses;  // per epoch
  std::string model_dir;
};

inline AutosModel train_and_export_autos(const std::string& dir) {
  AutosModel m;
  std::vector<data::Example> all = csv_examples(kAutosCsv);
  for (size_t i = 0; i < all.size(); ++i) (i % 5 == 4 ? m.eval : m.train).push_back(all[i]);
  write_examples(dir + "/train.tfrecord", m.train);
  write_examples(dir + "/eval.tfrecord", m.eval);
  m.spec = parse_transform_spec(kAutosSpec, "autos.toml");
  write_transform_artifact(m.spec, analyze(m.spec, {dir + "/train.tfrecord"}),
                           dir + "/transform");
  TransformArtifact artifact = read_transform_artifact(dir + "/transform");
  apply_transform(artifact, {dir + "/train.tfrecord"}, dir + "/transform/transformed/train.tfrecord");
  apply_transform(artifact, {dir + "/eval.tfrecord"}, dir + "/transform/transformed/eval.tfrecord");
  const int64_t dim = artifact.output_dim;
  auto [x, y] = read_transformed_xy(dir + "/transform/transformed/train.tfrecord", dim);
  m.eval_x = read_transformed_xy(dir + "/transform/transformed/eval.tfrecord", dim).first;
  nn::Sequential model({nn::Dense(16, "relu"), nn::Dense(3)}, Shape{dim});
  model.compile(std::make_shared<optim::Adam>(1e-2),
                std::make_shared<nn::SparseCategoricalCrossentropy>(/*from_logits=*/true),
                {"accuracy"});
  m.losses = model.fit(data::from_tensor_slices({x, y})->batch(32), {.epochs = 5, .verbose = 0})
                 .at("loss");
  m.want_logits = model.predict(m.eval_x, 16);
  m.model_dir = dir + "/models/autos/1";
  export_with_transform(model, artifact, {}, m.model_dir);
  return m;
}

}  // namespace tern::transform::testing
