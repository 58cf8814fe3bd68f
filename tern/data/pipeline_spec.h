// Input pipelines described as plain data: a source and an ordered list of transforms, built
// into a Dataset for training or for evaluation. Two languages write them: the [data] section of
// a `tern train` config (tern/config) and the one-line syntax of `tern data bench`
// (pipeline_line.h); both give a PipelineSpec and this builder builds it. The same spec gives
// training and evaluation: shuffles (and anything marked train-only) are left out in evaluation,
// random image ops run in their inference form (random_crop becomes a center crop, flips and
// jitter become the identity), so the two yield the same shapes.
//
//   PipelineSpec spec;
//   spec.source.kind = SourceKind::kTFRecord;
//   spec.source.features = {fixed_len_feature("image", FeatureKind::kBytes, {28, 28, 1}),
//                           fixed_len_feature("label", FeatureKind::kInt64)};
//   spec.source.features[0].dtype = DType::kU8;                 // raw bytes as u8 pixels
//   spec.transforms = {shuffle_transform(60000, 42), parse_transform(kAutotune),
//                      map_transform({.kind = ElementFnKind::kScale}), batch_transform(128),
//                      prefetch_transform()};
//   DatasetPtr train = build_input_pipeline(spec, {"train-*.tfrecord"}, PipelineMode::kTrain);
//
// Elements each source yields (the "raw" form the transforms start from):
//   idx       (u8 [H, W, C] image (C = 1 for [N, H, W] files), i64 [] label) from an image and a
//             label file; (image) from an image file alone
//   tfrecord  u8 [n] serialized records; a kParse transform turns them into the features' tensors
//   csv       (f32 [columns - 1] features, label as its column's dtype) from one label column
//   image_dir (u8 [H, W, C] image resized to image_size, i64 [] or f32 [classes] label); with
//             decode = false (u8 [n] file path, label), for a later read_image map
//   files     (u8 [n] file path) for every file matching the patterns
// In training the file-based sources (tfrecord, csv, image_dir, files) reshuffle their file order
// every epoch.
//
// Building fuses stages: consecutive map transforms become one map stage (one hand-off between
// threads per element instead of one per transform; random functions draw exactly what they
// would unfused), and a batch followed by parse parses whole batches. describe_pipeline() lists
// the stages as built. Errors while building name the transform's `origin` (e.g.
// "cfg.toml:31 (data.transforms[2])" or "stage 4 'crop 56 56'").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tern/data/csv_dataset.h"
#include "tern/data/dataset.h"
#include "tern/data/element_fns.h"
#include "tern/data/example_parser.h"
#include "tern/data/image_ops.h"
#include "tern/data/tfrecord_reader.h"

namespace tern::data {

enum class SourceKind { kIdx, kTFRecord, kCsv, kImageDir, kFiles };
std::string source_kind_name(SourceKind kind);

struct SourceSpec {
  SourceKind kind = SourceKind::kTFRecord;
  // --- tfrecord ---
  TFRecordOptions tfrecord;
  std::vector<FeatureSpec> features;  // what kParse yields, in this order (model input, label)
  // --- tfrecord and csv ---
  int64_t parallel_reads = 1;  // files read at once (interleaved, block 1); 1: one after another
  // --- csv ---
  CsvOptions csv;             // every column; select_columns is ignored
  int64_t label_column = -1;  // the label; the other columns become the f32 feature vector
  // --- image_dir ---
  bool decode = true;  // false: (path, label) elements, decoded later by a read_image map
  int64_t image_height = 0, image_width = 0;
  int channels = 3;
  bool categorical = false;              // f32 one-hot labels instead of i64 class indices
  std::vector<std::string> class_names;  // explicit classes and order; empty: every subfolder
  ResizeMethod interpolation = ResizeMethod::kBilinear;
  int64_t decode_parallel = kAutotune;  // decode + resize threads
  double validation_split = 0;          // fraction of the files held out (seeded shuffle)
  uint64_t seed = 0;                    // file-list shuffles (and the split)
};

enum class TransformKind {
  kShuffle,
  kParse,  // tf.train.Example records -> the source's features (tfrecord only)
  kMap,
  kBatch,
  kUnbatch,
  kRepeat,
  kTake,
  kSkip,
  kShard,
  kCache,
  kPrefetch,
};
std::string transform_kind_name(TransformKind kind);

enum class ApplyTo { kAll, kTrain, kEval };
enum class PipelineMode { kTrain, kEval };

struct TransformSpec {
  TransformKind kind = TransformKind::kMap;
  ApplyTo apply_to = ApplyTo::kAll;
  std::string origin;  // where it was written; prefixes build errors
  // shuffle buffer, batch size, repeat / take / skip count, prefetch buffer (kAutotune allowed)
  int64_t size = 0;
  uint64_t seed = 0;  // shuffle, random map functions
  bool reshuffle_each_iteration = true;
  bool drop_remainder = false;
  int64_t num_shards = 1, index = 0;
  // kMap: one or more functions applied in order by one (parallel) map stage; random ones draw
  // from keys mixed from `seed`, the epoch and the element's position.
  std::vector<ElementFnSpec> fns;
  int64_t num_parallel_calls = 0;  // kMap and kParse
  bool deterministic = true;

  bool operator==(const TransformSpec&) const = default;
};

TransformSpec shuffle_transform(int64_t buffer, uint64_t seed);
TransformSpec parse_transform(int64_t num_parallel_calls = kAutotune);
TransformSpec map_transform(ElementFnSpec fn, int64_t num_parallel_calls = kAutotune);
TransformSpec batch_transform(int64_t size, bool drop_remainder = false);
TransformSpec prefetch_transform(int64_t buffer = kAutotune);

struct PipelineSpec {
  SourceSpec source;
  std::vector<TransformSpec> transforms;
};

// The source's elements for `inputs`: glob patterns (tfrecord, csv), the image and label files
// (idx), or the root folder (image_dir; with validation_split, kTrain reads the training part
// and kEval the held-out part). In kTrain, image_dir file lists are reshuffled every epoch.
DatasetPtr build_source(const SourceSpec& source, const std::vector<std::string>& inputs,
                        PipelineMode mode);
// `input` with the transforms that apply in `mode` (stages fused as described above).
DatasetPtr apply_transforms(DatasetPtr input, const PipelineSpec& spec, PipelineMode mode);
// The stages apply_transforms builds after the source, e.g. {"tfrecord", "shuffle(1024)",
// "map(decode_image+random_crop+normalize)", "batch(128)", "prefetch(autotune)"}.
std::vector<std::string> describe_pipeline(const PipelineSpec& spec, PipelineMode mode);
// True if the pipeline's elements are batches (a batch applies and no unbatch follows it).
bool yields_batches(const PipelineSpec& spec, PipelineMode mode);
// build_source, then apply_transforms.
DatasetPtr build_input_pipeline(const PipelineSpec& spec, const std::vector<std::string>& inputs,
                                PipelineMode mode);

// The image_dir source's per-file step, on the file's bytes: decoded (JPEG / PNG, `channels`),
// then resized to height x width with `method` and rounded back to u8 when the stored size
// differs. The served form of an image_dir pipeline runs this on request bytes (tern/serve).
// DataLoss naming `what` for bytes that do not decode.
Tensor image_dir_decode(std::string_view bytes, int channels, int64_t height, int64_t width,
                        ResizeMethod method, std::string_view what);

// Number of elements the source yields for `inputs`, by counting when it is not known up front
// (reads TFRecord framing and CSV rows, parses nothing).
int64_t count_source_elements(const SourceSpec& source, const std::vector<std::string>& inputs,
                              PipelineMode mode);
// The transforms' effect on an element count (kUnknownCardinality if a stage makes it unknown,
// kInfiniteCardinality for an endless repeat).
int64_t transformed_cardinality(int64_t source_elements, const PipelineSpec& spec,
                                PipelineMode mode);

}  // namespace tern::data
