// convert_image_dataset: the direction from the paths, option checks, and the IDX inputs (IDX ->
// TFRecord, IDX -> image folder). The image-folder and TFRecord inputs are in convert_tfrecord.cc.
#include "tern/data/convert.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "tern/base/error.h"
#include "tern/base/strings.h"
#include "tern/base/thread_pool.h"
#include "tern/data/convert_internal.h"
#include "tern/data/idx_dataset.h"
#include "tern/data/image_codec.h"
#include "tern/data/image_convert.h"
#include "tern/data/input_stream.h"
#include "tern/data/tfrecord_writer.h"
#include "tern/format/crc32c.h"

namespace tern::data {
namespace {

namespace fs = std::filesystem;
using convert_internal::convert_image;
using convert_internal::extension_for;
using convert_internal::is_folder_name;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_tfrecord_name(const std::string& path) {
  for (const char* ext : {".tfrecord", ".tfrecords", ".tfrecord.gz", ".tfrecords.gz", ".tfr"})
    if (ends_with(path, ext)) return true;
  return false;
}

// A file whose first 12 (decompressed) bytes are a valid TFRecord length header.
bool looks_like_tfrecord(const std::string& path) {
  std::unique_ptr<InputStream> in = InputStream::open(path, Compression::kAuto);
  unsigned char head[12];
  if (in->read(head, 12) != 12) return false;
  uint32_t stored = 0;
  std::memcpy(&stored, head + 8, 4);
  return format::crc32c_mask(format::crc32c(head, 8)) == stored;
}

// --- IDX ---
struct IdxInput {
  Tensor images;  // u8 [N, H, W, C]
  Tensor labels;  // [N] or undefined
  int64_t n = 0;
};

IdxInput read_idx_input(const std::string& path, const ConvertOptions& o) {
  IdxInput in;
  in.images = read_idx(path);
  TERN_CHECK_ARG(
      in.images.dtype() == DType::kU8 && (in.images.rank() == 3 || in.images.rank() == 4), path,
      ": expected u8 images [N, H, W] or [N, H, W, C], got ", in.images.type().to_string());
  if (in.images.rank() == 3) {
    const auto& d = in.images.shape().dims();
    in.images = in.images.reshape(Shape{d[0], d[1], d[2], 1});
  }
  in.n = in.images.shape().dim(0);
  if (!o.labels.empty()) {
    in.labels = read_idx(o.labels);
    TERN_CHECK_ARG(in.labels.rank() == 1 && in.labels.shape().dim(0) >= in.n, o.labels,
                   ": expected at least ", in.n, " labels [N], got ", in.labels.type().to_string());
  }
  if (o.limit >= 0) in.n = std::min(in.n, o.limit);
  return in;
}

Tensor idx_row(const IdxInput& in, int64_t i) {
  const auto& d = in.images.shape().dims();
  return in.images.slice_rows(i, i + 1).reshape(Shape{d[1], d[2], d[3]});
}

ConvertResult idx_to_tfrecord(const std::string& input, const std::string& output,
                              const ConvertOptions& o) {
  const IdxInput in = read_idx_input(input, o);
  const std::string format = o.image_format.empty() ? "png" : o.image_format;
  std::vector<std::string> records(static_cast<size_t>(in.n));
  convert_internal::ConvertProgress progress(o, in.n);
  parallel_for(in.n, [&](int64_t i) {
    const Tensor img = convert_image(idx_row(in, i), o);
    const std::string encoded = encode_image_as(img, format, o.jpeg_quality);
    Example ex =
        image_example(encoded, format, img.shape().dim(0), img.shape().dim(1), img.shape().dim(2));
    if (in.labels.defined())
      ex.features["image/class/label"] = Feature::int64s({static_cast<int64_t>(in.labels.get(i))});
    records[static_cast<size_t>(i)] = serialize_example(ex);
    progress.one_done();
  });
  convert_internal::write_records(output, o.compression, records);
  return {in.n, str_cat("wrote ", in.n, " tf.train.Examples (", format, " images) to ", output)};
}

ConvertResult idx_to_folder(const std::string& input, const std::string& output,
                            const ConvertOptions& o) {
  TERN_CHECK_ARG(!o.labels.empty(),
                 "convert: an image folder needs --labels (one subfolder per class)");
  TERN_CHECK_ARG(o.image_format != "raw", "convert: image folders hold jpeg or png files, not raw");
  const IdxInput in = read_idx_input(input, o);
  int64_t max_label = 0;
  for (int64_t i = 0; i < in.n; ++i) {
    const double v = in.labels.get(i);
    TERN_CHECK_ARG(v >= 0 && v < 1e6, o.labels, ": label ", v, " at index ", i,
                   " is not a class index");
    max_label = std::max(max_label, static_cast<int64_t>(v));
  }
  TERN_CHECK_ARG(o.class_names.empty() || static_cast<int64_t>(o.class_names.size()) > max_label,
                 "convert: ", o.class_names.size(), " class names for labels up to ", max_label);
  std::set<std::string> distinct;
  for (const std::string& name : o.class_names) {
    TERN_CHECK_ARG(is_folder_name(name), "convert: --class-names: '", printable(name),
                   "' is not a folder name (no '/', '.' or '..')");
    TERN_CHECK_ARG(distinct.insert(name).second, "convert: --class-names: '", printable(name),
                   "' is given twice (two classes in one folder)");
  }
  std::vector<std::string> names;
  for (int64_t k = 0; k <= max_label; ++k)
    names.push_back(o.class_names.empty() ? zero_padded(k, max_label)
                                          : o.class_names[static_cast<size_t>(k)]);
  for (const std::string& name : names) fs::create_directories(fs::path(output) / name);
  const std::string format = o.image_format.empty() ? "png" : o.image_format;
  convert_internal::ConvertProgress progress(o, in.n);
  parallel_for(in.n, [&](int64_t i) {
    const Tensor img = convert_image(idx_row(in, i), o);
    const auto label = static_cast<size_t>(in.labels.get(i));
    const fs::path file =
        fs::path(output) / names[label] / (zero_padded(i, in.n - 1) + extension_for(format));
    write_file_bytes(file.string(), encode_image_as(img, format, o.jpeg_quality));
    progress.one_done();
  });
  return {in.n, str_cat("wrote ", in.n, " ", format, " images into ", names.size(),
                        " class folders under ", output)};
}

}  // namespace

ConvertResult convert_image_dataset(const std::string& input, const std::string& output,
                                    const ConvertOptions& o) {
  TERN_CHECK_ARG(o.image_format.empty() || o.image_format == "jpeg" || o.image_format == "png" ||
                     o.image_format == "raw",
                 "convert: --image-format must be jpeg, png or raw, got '", o.image_format, "'");
  TERN_CHECK_ARG(o.channels == 0 || o.channels == 1 || o.channels == 3,
                 "convert: --channels must be 1 or 3, got ", o.channels);
  TERN_CHECK_ARG((o.height > 0) == (o.width > 0) && o.height >= 0,
                 "convert: --size needs a positive height and width, got ", o.height, "x", o.width);
  TERN_CHECK_ARG(o.jpeg_quality >= 1 && o.jpeg_quality <= 100,
                 "convert: --quality must be in [1, 100]");
  const bool out_tfrecord = is_tfrecord_name(output);
  if (fs::is_directory(input)) {
    TERN_CHECK_ARG(out_tfrecord, "convert: image folder ", input,
                   " converts to a TFRecord file (name it *.tfrecord), not ", output);
    return convert_internal::folder_to_tfrecord(input, output, o);
  }
  if (is_tfrecord_name(input) || looks_like_tfrecord(input)) {
    TERN_CHECK_ARG(!out_tfrecord, "convert: TFRecord ", input,
                   " converts to an image folder, not another TFRecord");
    return convert_internal::tfrecord_to_folder(input, output, o);
  }
  return out_tfrecord ? idx_to_tfrecord(input, output, o) : idx_to_folder(input, output, o);
}

}  // namespace tern::data
