// convert_image_dataset from an image folder (-> TFRecord) or a TFRecord (-> image folder).
#include <filesystem>
#include <map>
#include <mutex>

#include "tern/base/error.h"
#include "tern/base/strings.h"
#include "tern/base/thread_pool.h"
#include "tern/data/convert_internal.h"
#include "tern/data/image_codec.h"
#include "tern/data/image_convert.h"
#include "tern/data/image_folder.h"
#include "tern/data/tfrecord_reader.h"
#include "tern/data/tfrecord_writer.h"

namespace tern::data {
namespace {

namespace fs = std::filesystem;

const Feature* find_any(const Example& ex, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto it = ex.features.find(name);
    if (it != ex.features.end() && it->second.size() > 0) return &it->second;
  }
  return nullptr;
}

int64_t int_feature(const Example& ex, std::initializer_list<const char*> names,
                    const std::string& what, int64_t fallback = -1) {
  const Feature* f = find_any(ex, names);
  if (f == nullptr) {
    TERN_CHECK_ARG(fallback >= 0, what, ": no int64 feature ", *names.begin());
    return fallback;
  }
  TERN_CHECK_ARG(f->kind == FeatureKind::kInt64, what, ": feature ", *names.begin(), " is a ",
                 feature_kind_name(f->kind));
  return f->int64_list[0];
}

}  // namespace

namespace convert_internal {

void write_records(const std::string& output, const std::string& compression,
                   const std::vector<std::string>& records) {
  try {
    TFRecordWriter w(output, parse_compression(compression));
    for (const std::string& r : records) w.write(r);
    w.close();
  } catch (...) {
    std::error_code ec;
    // Only a regular file this wrote: never a device such as /dev/full (as root, removing it
    // would delete the node).
    if (fs::is_regular_file(fs::symlink_status(output, ec))) fs::remove(output, ec);
    throw;
  }
}

// --- image folder -> TFRecord ---
ConvertResult folder_to_tfrecord(const std::string& input, const std::string& output,
                                 const ConvertOptions& o) {
  ImageFolder folder = list_image_folder(input, o.class_names);
  int64_t n = static_cast<int64_t>(folder.files.size());
  if (o.limit >= 0) n = std::min(n, o.limit);
  std::vector<std::string> records(static_cast<size_t>(n));
  ConvertProgress progress(o, n);
  parallel_for(n, [&](int64_t i) {
    const std::string& path = folder.files[static_cast<size_t>(i)];
    std::string bytes = read_file_bytes(path);
    std::string format(image_format_name(detect_image_format(bytes)));
    ImageInfo info = read_image_info(bytes, path);
    if (!changes_pixels(o) && (o.image_format.empty() || o.image_format == format)) {
      // Copied as they are, but decoded once: a corrupt JPEG was copied into the TFRecord and
      // failed only in training (bad-input report F20).
      decode_image(bytes, {}, path);
    } else {
      const Tensor img = convert_image(decode_image(bytes, {}, path), o);
      format = o.image_format.empty() ? format : o.image_format;
      bytes = encode_image_as(img, format, o.jpeg_quality);
      info = {ImageFormat::kUnknown, img.shape().dim(0), img.shape().dim(1),
              static_cast<int>(img.shape().dim(2))};
    }
    Example ex = image_example(bytes, format, info.height, info.width, info.channels);
    const int64_t label = folder.labels[static_cast<size_t>(i)];
    ex.features["image/class/label"] = Feature::int64s({label});
    ex.features["image/class/text"] =
        Feature::bytes({folder.class_names[static_cast<size_t>(label)]});
    ex.features["image/filename"] = Feature::bytes({fs::relative(path, input).string()});
    records[static_cast<size_t>(i)] = serialize_example(ex);
    progress.one_done();
  });
  convert_internal::write_records(output, o.compression, records);
  return {n, str_cat("wrote ", n, " tf.train.Examples from ", folder.class_names.size(),
                     " classes to ", output)};
}

// --- TFRecord -> image folder ---
ConvertResult tfrecord_to_folder(const std::string& input, const std::string& output,
                                 const ConvertOptions& o) {
  TFRecordReader reader(input, {.compression = Compression::kAuto});
  std::vector<std::string> records;
  while (std::optional<std::string> r = reader.read()) {
    if (o.limit >= 0 && static_cast<int64_t>(records.size()) >= o.limit) break;
    records.push_back(std::move(*r));
  }
  const int64_t n = static_cast<int64_t>(records.size());
  std::mutex mu;
  std::map<std::string, int64_t> per_class;
  ConvertProgress progress(o, n);
  parallel_for(n, [&](int64_t i) {
    const std::string what = str_cat(input, " record ", i);
    const Example ex = parse_example_proto(records[static_cast<size_t>(i)], what);
    const Feature* image = find_any(ex, {"image/encoded", "image_raw", "image", "encoded"});
    TERN_CHECK_ARG(image != nullptr && image->kind == FeatureKind::kBytes, what,
                   ": no image bytes (image/encoded, image_raw, image or encoded)");
    const std::string& bytes = image->bytes_list[0];
    const int64_t label = int_feature(ex, {"image/class/label", "label"}, what);
    const Feature* text = find_any(ex, {"image/class/text"});
    const std::string cls = text != nullptr && text->kind == FeatureKind::kBytes
                                ? text->bytes_list[0]
                                : zero_padded(label, 9);
    TERN_CHECK_ARG(is_folder_name(cls), what, ": class name '", printable(cls),
                   "' is not a folder name");
    std::string format(image_format_name(detect_image_format(bytes)));
    std::string out_bytes = bytes;
    const bool raw = format == "unknown";
    if (!raw && !changes_pixels(o) && (o.image_format.empty() || o.image_format == format)) {
      decode_image(bytes, {}, what);  // copied as they are, but checked (a corrupt PNG was)
    } else {
      Tensor img;
      if (raw) {
        const int64_t h = int_feature(ex, {"image/height", "height"}, what);
        const int64_t w = int_feature(ex, {"image/width", "width"}, what);
        const int64_t c = int_feature(ex, {"image/channels", "channels", "depth"}, what, 1);
        // Divisions, not h * w * c: h = 2^62, w = 4 wrapped past the check (UBSan).
        const auto n = static_cast<int64_t>(bytes.size());
        TERN_CHECK_ARG(h > 0 && w > 0 && c > 0 && n % c == 0 && (n / c) % w == 0 && n / c / w == h,
                       what, ": ", bytes.size(), " raw bytes for a ", h, "x", w, "x", c, " image");
        img = Tensor(DType::kU8, Shape{h, w, c});
        std::memcpy(img.raw_data(), bytes.data(), bytes.size());
      } else {
        img = decode_image(bytes, {}, what);
      }
      img = convert_image(img, o);
      format = o.image_format.empty() || o.image_format == "raw" ? "png" : o.image_format;
      out_bytes = encode_image_as(img, format, o.jpeg_quality);
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      if (per_class[cls]++ == 0) fs::create_directories(fs::path(output) / cls);
    }
    write_file_bytes(
        (fs::path(output) / cls / (zero_padded(i, n - 1) + extension_for(format))).string(),
        out_bytes);
    progress.one_done();
  });
  return {n,
          str_cat("wrote ", n, " images into ", per_class.size(), " class folders under ", output)};
}

}  // namespace convert_internal
}  // namespace tern::data
