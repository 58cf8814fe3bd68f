// Building the sources of pipeline specs: IDX, TFRecord, CSV, image folders and file lists, each
// in its training or evaluation form, whole or one worker's part of it (sharding.h).
#include <algorithm>
#include <functional>
#include <optional>

#include "tern/base/error.h"
#include "tern/base/strings.h"
#include "tern/data/idx_dataset.h"
#include "tern/data/image_codec.h"
#include "tern/data/image_folder.h"
#include "tern/data/iterator.h"
#include "tern/data/list_files_dataset.h"
#include "tern/data/pipeline_spec.h"
#include "tern/data/sharding.h"
#include "tern/data/tensor_slice_dataset.h"
#include "tern/data/tfrecord_dataset.h"

namespace tern::data {
namespace {

// The part of a source one worker reads; the default is all of it.
struct SourcePart {
  WorkerShard shard;
  ShardPolicy policy = ShardPolicy::kNone;
  std::vector<std::string> files;  // kFile: the worker's files
};

// Records or rows of every file matching `patterns` (kFile: of the worker's files),
// `parallel_reads` files at a time; in training the file order is reshuffled every epoch. Under
// kElement every worker reads the one record order source.seed gives, then takes its share.
DatasetPtr read_files(const std::vector<std::string>& patterns, const SourceSpec& s,
                      PipelineMode mode, const SourcePart& part,
                      std::function<DatasetPtr(std::string)> open) {
  std::optional<uint64_t> shuffle;
  DatasetPtr files;
  if (part.policy == ShardPolicy::kFile) {
    if (mode == PipelineMode::kTrain) shuffle = worker_seed(s.seed, part.shard);
    files = file_names_dataset(part.files, shuffle);
  } else {
    if (mode == PipelineMode::kTrain) shuffle = s.seed;
    files = list_files(patterns, shuffle);
  }
  DatasetPtr records = files->interleave(
      [open](const Element& e) { return open(tensor_bytes(e[0], "file name")); },
      {.cycle_length = std::max<int64_t>(1, s.parallel_reads), .block_length = 1});
  if (part.policy != ShardPolicy::kElement) return records;
  return records->shard(part.shard.num_workers, part.shard.index);
}

DatasetPtr idx_source(const std::vector<std::string>& inputs, const SourcePart& part) {
  TERN_CHECK_ARG(inputs.size() == 1 || inputs.size() == 2,
                 "idx source: expected an image file and a label file, got ", inputs.size(),
                 " paths");
  Tensor images = read_idx(inputs[0]);
  TERN_CHECK_ARG(images.rank() >= 1, inputs[0], ": an IDX file of scalars holds no samples");
  if (images.rank() == 3) {
    const auto& d = images.shape().dims();
    images = images.reshape(Shape{d[0], d[1], d[2], 1});
  }
  if (inputs.size() == 1) {
    return from_tensor_slices(
        {worker_rows(images, part.shard)},
        {.file = inputs[0], .first = part.shard.index, .stride = part.shard.num_workers});
  }
  Tensor labels = read_idx(inputs[1]);
  TERN_CHECK_ARG(labels.rank() == 1 && is_integer(labels.dtype()), inputs[1],
                 ": labels must be integers [N], got ", dtype_name(labels.dtype()), labels.shape());
  TERN_CHECK_ARG(images.shape().dim(0) == labels.shape().dim(0), inputs[0], " has ",
                 images.shape().dim(0), " samples but ", inputs[1], " has ", labels.shape().dim(0),
                 " labels");
  // Labels name the label file: a label out of range is what the row's position is wanted for.
  return from_tensor_slices(
      {worker_rows(images, part.shard), worker_rows(labels.cast(DType::kI64), part.shard)},
      {.file = inputs[1], .first = part.shard.index, .stride = part.shard.num_workers});
}

DatasetPtr csv_source(const std::vector<std::string>& patterns, const SourceSpec& s,
                      PipelineMode mode, const SourcePart& part) {
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
  DatasetPtr rows = read_files(patterns, s, mode, part,
                               [options](std::string f) { return csv_dataset({f}, options); });
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

DatasetPtr image_dir_source(const std::vector<std::string>& inputs, const SourceSpec& s,
                            PipelineMode mode, const SourcePart& part) {
  TERN_CHECK_ARG(inputs.size() == 1, "image_dir source: expected one root folder, got ",
                 inputs.size(), " paths");
  TERN_CHECK_ARG(!s.decode || (s.image_height > 0 && s.image_width > 0),
                 "image_dir source: image size ", s.image_height, "x", s.image_width,
                 " must be positive");
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
  if (part.policy == ShardPolicy::kElement) {
    // The worker's paths (of the split's order), before any reshuffle or decoding.
    folder.files = worker_items(folder.files, part.shard);
    folder.labels = worker_items(folder.labels, part.shard);
  }
  const auto n = static_cast<int64_t>(folder.files.size());
  DatasetPtr ds = file_label_dataset(folder.files, folder.labels);
  // Paths are cheap to shuffle: a full reshuffle every epoch, before anything is decoded.
  if (mode == PipelineMode::kTrain && n > 0)
    ds = ds->shuffle(n, worker_seed(s.seed, part.shard), true);
  if (!s.decode) return ds;
  const auto classes = static_cast<int64_t>(folder.class_names.size());
  const int channels = s.channels;
  const int64_t h = s.image_height, w = s.image_width;
  const ResizeMethod method = s.interpolation;
  const bool categorical = s.categorical;
  return ds->map(
      [=](Element e) {
        const std::string path = tensor_bytes(e[0], "image path");
        Tensor image =
            image_dir_decode(read_file_bytes(path), channels, h, w, method, printable(path));
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

// The source's elements, or the part of them `part` names.
DatasetPtr build_part(const SourceSpec& source, const std::vector<std::string>& inputs,
                      PipelineMode mode, const SourcePart& part) {
  TERN_CHECK_ARG(!inputs.empty(), "pipeline source: no input files");
  switch (source.kind) {
    case SourceKind::kIdx:
      return idx_source(inputs, part);
    case SourceKind::kTFRecord: {
      TFRecordOptions options = source.tfrecord;
      return read_files(inputs, source, mode, part,
                        [options](std::string f) { return tfrecord_dataset({f}, options); });
    }
    case SourceKind::kCsv:
      return csv_source(inputs, source, mode, part);
    case SourceKind::kImageDir:
      return image_dir_source(inputs, source, mode, part);
    case SourceKind::kFiles: {
      std::optional<uint64_t> shuffle;
      if (mode == PipelineMode::kTrain) shuffle = worker_seed(source.seed, part.shard);
      if (part.policy == ShardPolicy::kNone) return list_files(inputs, shuffle);
      std::vector<std::string> files = glob_files(inputs);
      if (files.empty()) return list_files(inputs);  // NotFound naming the patterns
      return file_names_dataset(worker_items(files, part.shard), shuffle);
    }
  }
  throw_error(ErrorCode::kInternal, "bad source kind");
}

}  // namespace

std::string source_kind_name(SourceKind kind) {
  switch (kind) {
    case SourceKind::kIdx:
      return "idx";
    case SourceKind::kTFRecord:
      return "tfrecord";
    case SourceKind::kCsv:
      return "csv";
    case SourceKind::kImageDir:
      return "image_dir";
    case SourceKind::kFiles:
      return "files";
  }
  return "?";
}

DatasetPtr build_source(const SourceSpec& source, const std::vector<std::string>& inputs,
                        PipelineMode mode) {
  return build_part(source, inputs, mode, {});
}

ShardedSource build_sharded_source(const SourceSpec& source, const std::vector<std::string>& inputs,
                                   WorkerShard shard) {
  validate_worker_shard(shard);
  ShardedSource out;
  std::vector<std::string> files;
  const bool reads_files = source.kind == SourceKind::kTFRecord || source.kind == SourceKind::kCsv;
  if (shard.num_workers > 1 && reads_files) files = glob_files(inputs);
  out.files_total = static_cast<int64_t>(files.size());
  out.policy = choose_shard_policy(source.kind, out.files_total, shard);
  SourcePart part{.shard = shard, .policy = out.policy};
  if (out.policy == ShardPolicy::kFile) part.files = out.files = worker_items(files, shard);
  out.dataset = build_part(source, inputs, PipelineMode::kTrain, part);
  out.description = describe_worker_shard(out.policy, shard, out.files_total,
                                          static_cast<int64_t>(out.files.size()));
  return out;
}

int64_t count_worker_elements(const SourceSpec& source, const std::vector<std::string>& inputs,
                              WorkerShard shard) {
  const ShardedSource part = build_sharded_source(source, inputs, shard);
  if (part.policy == ShardPolicy::kFile)
    return count_source_elements(source, part.files, PipelineMode::kTrain);
  return worker_elements(count_source_elements(source, inputs, PipelineMode::kTrain), shard);
}

int64_t count_source_elements(const SourceSpec& source, const std::vector<std::string>& inputs,
                              PipelineMode mode) {
  if (source.kind == SourceKind::kIdx) {
    TERN_CHECK_ARG(!inputs.empty() && inputs.size() <= 2,
                   "idx source: expected an image file and a label file");
    return read_idx(inputs.back()).shape().dim(0);
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

Tensor image_dir_decode(std::string_view bytes, int channels, int64_t height, int64_t width,
                        ResizeMethod method, std::string_view what) {
  Tensor image = decode_image(bytes, {.channels = channels}, what);
  const ImageDims d = image_dims(image, std::string(what).c_str());
  if (d.height == height && d.width == width) return image;
  Tensor r = resize_image(image, height, width, method);
  if (r.dtype() == DType::kU8) return r;
  Tensor out(DType::kU8, r.shape());
  const float* src = r.data<float>();
  uint8_t* dst = out.data<uint8_t>();
  for (int64_t i = 0; i < r.num_elements(); ++i)
    dst[i] = static_cast<uint8_t>(std::clamp(src[i] + 0.5f, 0.0f, 255.0f));
  return out;
}

}  // namespace tern::data
