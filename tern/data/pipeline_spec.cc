// Building datasets from pipeline specs: the sources (IDX, TFRecord, CSV, image folders) and the
// transforms, each in its training or evaluation form.
#include "tern/data/pipeline_spec.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>

#include "tern/base/error.h"
#include "tern/data/example_dataset.h"
#include "tern/data/idx_dataset.h"
#include "tern/data/image_augment.h"
#include "tern/data/image_codec.h"
#include "tern/data/image_folder.h"
#include "tern/data/iterator.h"
#include "tern/data/iterator_base.h"
#include "tern/data/list_files_dataset.h"
#include "tern/data/tensor_slice_dataset.h"
#include "tern/data/tfrecord_dataset.h"

namespace tern::data {
namespace {

// Records or rows of every file matching `patterns`, `parallel_reads` files at a time; in
// training the file order is reshuffled every epoch.
DatasetPtr read_files(const std::vector<std::string>& patterns, const SourceSpec& s,
                      PipelineMode mode, std::function<DatasetPtr(std::string)> open) {
  std::optional<uint64_t> shuffle;
  if (mode == PipelineMode::kTrain) shuffle = s.seed;
  DatasetPtr files = list_files(patterns, shuffle);
  return files->interleave(
      [open](const Element& e) { return open(tensor_bytes(e[0], "file name")); },
      {.cycle_length = std::max<int64_t>(1, s.parallel_reads), .block_length = 1});
}

DatasetPtr idx_source(const std::vector<std::string>& inputs) {
  TERN_CHECK_ARG(inputs.size() == 2, "idx source: expected an image file and a label file, got ",
                 inputs.size(), " paths");
  Tensor images = read_idx(inputs[0]);
  Tensor labels = read_idx(inputs[1]);
  TERN_CHECK_ARG(images.rank() >= 1, inputs[0], ": an IDX file of scalars holds no samples");
  TERN_CHECK_ARG(labels.rank() == 1 && is_integer(labels.dtype()), inputs[1],
                 ": labels must be integers [N], got ", dtype_name(labels.dtype()), labels.shape());
  TERN_CHECK_ARG(images.shape().dim(0) == labels.shape().dim(0), inputs[0], " has ",
                 images.shape().dim(0), " samples but ", inputs[1], " has ", labels.shape().dim(0),
                 " labels");
  if (images.rank() == 3) {
    const auto& d = images.shape().dims();
    images = images.reshape(Shape{d[0], d[1], d[2], 1});
  }
  return from_tensor_slices({images, labels.cast(DType::kI64)});
}

DatasetPtr csv_source(const std::vector<std::string>& patterns, const SourceSpec& s,
                      PipelineMode mode) {
  const auto columns = static_cast<int64_t>(s.csv.columns.size());
  TERN_CHECK_ARG(columns >= 2,
                 "csv source: need at least one feature column and the label column, got ", columns,
                 " columns");
  TERN_CHECK_ARG(s.label_column >= 0 && s.label_column < columns, "csv source: label column ",
                 s.label_column, " is outside [0, ", columns, ")");
  for (const auto& c : s.csv.columns) {
    TERN_CHECK_ARG(!c.as_bytes,
                   "csv source: text columns cannot feed a model; give numeric column types");
  }
  CsvOptions options = s.csv;
  options.select_columns.clear();
  DatasetPtr rows =
      read_files(patterns, s, mode, [options](std::string f) { return csv_dataset({f}, options); });
  const int64_t label = s.label_column;
  // Scalar columns -> (f32 [columns - 1] features, label).
  return rows->map([label, columns](Element e) {
    Tensor x(DType::kF32, Shape{columns - 1});
    float* p = x.data<float>();
    for (int64_t k = 0, j = 0; k < columns; ++k) {
      if (k != label) p[j++] = static_cast<float>(e[static_cast<size_t>(k)].get(0));
    }
    return Element{x, e[static_cast<size_t>(label)]};
  });
}

// u8 [h, w, C]: resized (rounded back to u8) when the stored size differs.
Tensor load_image_u8(const std::string& path, int channels, int64_t h, int64_t w,
                     ResizeMethod method) {
  Tensor image = read_image_file(path, {.channels = channels});
  const ImageDims d = image_dims(image, path.c_str());
  if (d.height == h && d.width == w) return image;
  Tensor r = resize_image(image, h, w, method);
  if (r.dtype() == DType::kU8) return r;
  Tensor out(DType::kU8, r.shape());
  const float* src = r.data<float>();
  uint8_t* dst = out.data<uint8_t>();
  for (int64_t i = 0; i < r.num_elements(); ++i)
    dst[i] = static_cast<uint8_t>(std::clamp(src[i] + 0.5f, 0.0f, 255.0f));
  return out;
}

DatasetPtr image_dir_source(const std::vector<std::string>& inputs, const SourceSpec& s,
                            PipelineMode mode) {
  TERN_CHECK_ARG(inputs.size() == 1, "image_dir source: expected one root folder, got ",
                 inputs.size(), " paths");
  TERN_CHECK_ARG(s.image_height > 0 && s.image_width > 0, "image_dir source: image size ",
                 s.image_height, "x", s.image_width, " must be positive");
  TERN_CHECK_ARG(s.channels == 1 || s.channels == 3 || s.channels == 4,
                 "image_dir source: channels must be 1, 3 or 4, got ", s.channels);
  TERN_CHECK_ARG(s.validation_split >= 0 && s.validation_split < 1,
                 "image_dir source: validation_split must be in [0, 1), got ", s.validation_split);
  ImageFolder folder = list_image_folder(inputs[0], s.class_names);
  if (s.validation_split > 0) {
    // The same seeded shuffle on both sides, then the last fraction is the held-out part.
    shuffle_file_list(folder.files, folder.labels, s.seed);
    const auto n = static_cast<int64_t>(folder.files.size());
    const auto n_val = static_cast<int64_t>(s.validation_split * static_cast<double>(n));
    const int64_t begin = mode == PipelineMode::kTrain ? 0 : n - n_val;
    const int64_t end = mode == PipelineMode::kTrain ? n - n_val : n;
    folder.files = {folder.files.begin() + begin, folder.files.begin() + end};
    folder.labels = {folder.labels.begin() + begin, folder.labels.begin() + end};
  }
  TERN_CHECK_ARG(!folder.files.empty(), inputs[0], ": no .jpg/.jpeg/.png files",
                 s.validation_split > 0
                     ? (mode == PipelineMode::kTrain ? " in the training part" : " held out")
                     : "");
  const auto n = static_cast<int64_t>(folder.files.size());
  DatasetPtr ds = file_label_dataset(folder.files, folder.labels);
  // Paths are cheap to shuffle: a full reshuffle every epoch, before anything is decoded.
  if (mode == PipelineMode::kTrain) ds = ds->shuffle(n, s.seed, true);
  const auto classes = static_cast<int64_t>(folder.class_names.size());
  const int channels = s.channels;
  const int64_t h = s.image_height, w = s.image_width;
  const ResizeMethod method = s.interpolation;
  const bool categorical = s.categorical;
  return ds->map(
      [=](Element e) {
        Tensor image = load_image_u8(tensor_bytes(e[0], "image path"), channels, h, w, method);
        const auto label = static_cast<int64_t>(e[1].get(0));
        if (!categorical)
          return Element{image, Tensor::scalar(DType::kI64, static_cast<double>(label))};
        Tensor y(DType::kF32, Shape{classes});
        std::fill_n(y.data<float>(), classes, 0.0f);
        y.data<float>()[label] = 1.0f;
        return Element{image, y};
      },
      {.num_parallel_calls = s.decode_parallel});
}

bool applies(const TransformSpec& t, PipelineMode mode) {
  if (t.apply_to == ApplyTo::kAll) return true;
  return (t.apply_to == ApplyTo::kTrain) == (mode == PipelineMode::kTrain);
}

DatasetPtr add_map(DatasetPtr ds, const TransformSpec& t, PipelineMode mode) {
  const bool training = mode == PipelineMode::kTrain;
  std::vector<ElementFnSpec> fns;
  bool random = false;
  for (const auto& f : t.fns) {
    validate_element_fn(f, t.origin);
    if (!training && element_fn_is_identity_in_eval(f.kind)) continue;
    random = random || (training && element_fn_is_random(f.kind));
    fns.push_back(f);
  }
  if (fns.empty()) return ds;
  // Random functions take a key per element (seed, epoch, position), so their draws do not
  // depend on how many threads run the map.
  if (random) ds = with_random_keys(ds, t.seed);
  const std::string origin = t.origin;
  return ds->map(
      [fns, random, training, origin](Element e) {
        uint64_t key = 0;
        if (random) {
          key = static_cast<uint64_t>(e.back().get(0));
          e.pop_back();
        }
        for (size_t i = 0; i < fns.size(); ++i) {
          try {
            e = apply_element_fn(fns[i], std::move(e), mix_seed(key, i), training);
          } catch (const Error& err) {
            throw_error(err.code(), origin, ": ", err.message());
          }
        }
        return e;
      },
      {.num_parallel_calls = t.num_parallel_calls, .deterministic = t.deterministic});
}

DatasetPtr add_transform(DatasetPtr ds, const TransformSpec& t, const SourceSpec& source,
                         PipelineMode mode) {
  switch (t.kind) {
    case TransformKind::kShuffle:
      return ds->shuffle(t.size, t.seed, t.reshuffle_each_iteration);
    case TransformKind::kParse:
      TERN_CHECK_ARG(source.kind == SourceKind::kTFRecord,
                     "parse reads tf.train.Example records: it needs a "
                     "tfrecord source");
      return parse_example(
          ds, source.features,
          {.num_parallel_calls = t.num_parallel_calls, .deterministic = t.deterministic});
    case TransformKind::kMap:
      return add_map(ds, t, mode);
    case TransformKind::kBatch:
      return ds->batch(t.size, t.drop_remainder);
    case TransformKind::kUnbatch:
      return ds->unbatch();
    case TransformKind::kRepeat:
      return ds->repeat(t.size);
    case TransformKind::kTake:
      return ds->take(t.size);
    case TransformKind::kSkip:
      return ds->skip(t.size);
    case TransformKind::kShard:
      return ds->shard(t.num_shards, t.index);
    case TransformKind::kCache:
      return ds->cache();
    case TransformKind::kPrefetch:
      return ds->prefetch(t.size);
  }
  return ds;
}

TransformSpec transform(TransformKind kind) {
  TransformSpec t;
  t.kind = kind;
  t.origin = transform_kind_name(kind);
  return t;
}

}  // namespace

std::string transform_kind_name(TransformKind kind) {
  switch (kind) {
    case TransformKind::kShuffle:
      return "shuffle";
    case TransformKind::kParse:
      return "parse";
    case TransformKind::kMap:
      return "map";
    case TransformKind::kBatch:
      return "batch";
    case TransformKind::kUnbatch:
      return "unbatch";
    case TransformKind::kRepeat:
      return "repeat";
    case TransformKind::kTake:
      return "take";
    case TransformKind::kSkip:
      return "skip";
    case TransformKind::kShard:
      return "shard";
    case TransformKind::kCache:
      return "cache";
    case TransformKind::kPrefetch:
      return "prefetch";
  }
  return "?";
}

TransformSpec shuffle_transform(int64_t buffer, uint64_t seed) {
  TransformSpec t = transform(TransformKind::kShuffle);
  t.apply_to = ApplyTo::kTrain;
  t.size = buffer;
  t.seed = seed;
  return t;
}

TransformSpec parse_transform(int64_t num_parallel_calls) {
  TransformSpec t = transform(TransformKind::kParse);
  t.num_parallel_calls = num_parallel_calls;
  return t;
}

TransformSpec map_transform(ElementFnSpec fn, int64_t num_parallel_calls) {
  TransformSpec t = transform(TransformKind::kMap);
  t.fns = {std::move(fn)};
  t.num_parallel_calls = num_parallel_calls;
  return t;
}

TransformSpec batch_transform(int64_t size, bool drop_remainder) {
  TransformSpec t = transform(TransformKind::kBatch);
  t.size = size;
  t.drop_remainder = drop_remainder;
  return t;
}

TransformSpec prefetch_transform(int64_t buffer) {
  TransformSpec t = transform(TransformKind::kPrefetch);
  t.size = buffer;
  return t;
}

DatasetPtr build_source(const SourceSpec& source, const std::vector<std::string>& inputs,
                        PipelineMode mode) {
  TERN_CHECK_ARG(!inputs.empty(), "pipeline source: no input files");
  switch (source.kind) {
    case SourceKind::kIdx:
      return idx_source(inputs);
    case SourceKind::kTFRecord: {
      TFRecordOptions options = source.tfrecord;
      return read_files(inputs, source, mode,
                        [options](std::string f) { return tfrecord_dataset({f}, options); });
    }
    case SourceKind::kCsv:
      return csv_source(inputs, source, mode);
    case SourceKind::kImageDir:
      return image_dir_source(inputs, source, mode);
  }
  throw_error(ErrorCode::kInternal, "bad source kind");
}

DatasetPtr apply_transforms(DatasetPtr input, const PipelineSpec& spec, PipelineMode mode) {
  DatasetPtr ds = std::move(input);
  std::vector<const TransformSpec*> ts;
  for (const auto& t : spec.transforms) {
    if (applies(t, mode)) ts.push_back(&t);
  }
  for (size_t i = 0; i < ts.size(); ++i) {
    const TransformSpec& t = *ts[i];
    try {
      if (t.kind == TransformKind::kBatch && i + 1 < ts.size() &&
          ts[i + 1]->kind == TransformKind::kParse) {
        // Batch, then parse the batch in one call: one map element per batch instead of per record.
        const TransformSpec& p = *ts[++i];
        TERN_CHECK_ARG(spec.source.kind == SourceKind::kTFRecord,
                       "parse reads tf.train.Example records: it needs a tfrecord source");
        ds = parse_example_batched(
            ds, t.size, spec.source.features, t.drop_remainder,
            {.num_parallel_calls = p.num_parallel_calls, .deterministic = p.deterministic});
        continue;
      }
      ds = add_transform(ds, t, spec.source, mode);
    } catch (const Error& e) {
      if (e.message().rfind(t.origin, 0) == 0) throw;
      throw_error(e.code(), t.origin, ": ", e.message());
    }
  }
  return ds;
}

DatasetPtr build_input_pipeline(const PipelineSpec& spec, const std::vector<std::string>& inputs,
                                PipelineMode mode) {
  return apply_transforms(build_source(spec.source, inputs, mode), spec, mode);
}

int64_t count_source_elements(const SourceSpec& source, const std::vector<std::string>& inputs,
                              PipelineMode mode) {
  if (source.kind == SourceKind::kIdx) {
    TERN_CHECK_ARG(inputs.size() == 2, "idx source: expected an image file and a label file");
    return read_idx(inputs[1]).shape().dim(0);
  }
  if (source.kind == SourceKind::kTFRecord) {
    int64_t n = 0;
    for (const auto& f : glob_files(inputs)) {
      TFRecordReader reader(f, source.tfrecord);
      while (reader.read()) ++n;
    }
    return n;
  }
  DatasetPtr ds = build_source(source, inputs, mode);
  if (ds->cardinality() >= 0) return ds->cardinality();
  int64_t n = 0;
  Iterator it = ds->make_iterator();
  while (it.next()) ++n;
  return n;
}

int64_t transformed_cardinality(int64_t n, const PipelineSpec& spec, PipelineMode mode) {
  for (const auto& t : spec.transforms) {
    if (!applies(t, mode) || n == kUnknownCardinality) continue;
    const bool infinite = n == kInfiniteCardinality;
    switch (t.kind) {
      case TransformKind::kBatch:
        if (!infinite) n = t.drop_remainder ? n / t.size : (n + t.size - 1) / t.size;
        break;
      case TransformKind::kUnbatch:
        n = kUnknownCardinality;
        break;
      case TransformKind::kRepeat:
        if (t.size < 0) {
          n = n == 0 ? 0 : kInfiniteCardinality;
        } else if (!infinite) {
          n *= t.size;
        }
        break;
      case TransformKind::kTake:
        if (t.size >= 0) n = infinite ? t.size : std::min(n, t.size);
        break;
      case TransformKind::kSkip:
        if (!infinite) n = t.size < 0 ? 0 : std::max<int64_t>(0, n - t.size);
        break;
      case TransformKind::kShard:
        if (!infinite) n = n > t.index ? (n - t.index + t.num_shards - 1) / t.num_shards : 0;
        break;
      default:
        break;
    }
  }
  return n;
}

}  // namespace tern::data
