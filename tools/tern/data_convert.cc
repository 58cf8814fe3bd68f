// `tern data convert`: IDX -> TFRecord of tf.Examples, IDX -> image folder, image folder ->
// TFRecord, TFRecord -> image folder. Images are encoded on every core.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "tern/base/error.h"
#include "tern/base/thread_pool.h"
#include "tern/data/example_proto.h"
#include "tern/data/idx_dataset.h"
#include "tern/data/image_codec.h"
#include "tern/data/image_folder.h"
#include "tern/data/image_ops.h"
#include "tern/data/input_stream.h"
#include "tern/data/tfrecord_reader.h"
#include "tern/data/tfrecord_writer.h"
#include "tern/format/crc32c.h"
#include "tools/tern/data_tools.h"

namespace tern::tools {
namespace {

namespace fs = std::filesystem;
using data::Example;
using data::Feature;

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
  std::unique_ptr<data::InputStream> in = data::InputStream::open(path, data::Compression::kAuto);
  unsigned char head[12];
  if (in->read(head, 12) != 12) return false;
  uint32_t stored = 0;
  std::memcpy(&stored, head + 8, 4);
  return format::crc32c_mask(format::crc32c(head, 8)) == stored;
}

// Runs fn(i) for i in [0, n) on every core; rethrows the first error.
void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  const int threads = static_cast<int>(std::min<int64_t>(std::max(1, available_cores()), n));
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        next = n;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

bool transforms(const ConvertOptions& o) {
  return o.height > 0 || o.channels != 0;
}

// Channel conversion and resizing as the options ask; u8 in, u8 out.
Tensor prepare(Tensor img, const ConvertOptions& o) {
  const int64_t c = img.shape().dim(2);
  if (o.channels == 3 && c == 1) {
    Tensor rgb(DType::kU8, Shape{img.shape().dim(0), img.shape().dim(1), 3});
    const uint8_t* s = img.data<uint8_t>();
    uint8_t* d = rgb.data<uint8_t>();
    for (int64_t i = 0; i < img.shape().dim(0) * img.shape().dim(1); ++i)
      d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = s[i];
    img = rgb;
  } else if (o.channels == 1 && c >= 3) {
    Tensor gray(DType::kU8, Shape{img.shape().dim(0), img.shape().dim(1), 1});
    const uint8_t* s = img.data<uint8_t>();
    uint8_t* d = gray.data<uint8_t>();
    for (int64_t i = 0; i < img.shape().dim(0) * img.shape().dim(1); ++i) {
      d[i] = static_cast<uint8_t>((s[c * i] * 299 + s[c * i + 1] * 587 + s[c * i + 2] * 114 + 500) /
                                  1000);
    }
    img = gray;
  }
  if (o.height > 0) {
    const Tensor f = data::resize_image(img, o.height, o.width);
    Tensor u(DType::kU8, f.shape());
    const float* s = f.data<float>();
    uint8_t* d = u.data<uint8_t>();
    for (int64_t i = 0; i < f.num_elements(); ++i)
      d[i] = static_cast<uint8_t>(std::clamp(std::lround(s[i]), 0L, 255L));
    img = u;
  }
  return img;
}

// `img` as a jpeg, png or raw file body.
std::string encode_as(const Tensor& img, const std::string& format, const ConvertOptions& o) {
  if (format == "raw") return data::tensor_bytes(img);
  return data::encode_image(
      img, format == "jpeg" ? data::ImageFormat::kJpeg : data::ImageFormat::kPng, o.jpeg_quality);
}

std::string extension_for(const std::string& format) {
  return format == "jpeg" ? ".jpg" : ".png";
}

std::string padded(int64_t v, int64_t max_value) {
  const size_t width = std::to_string(std::max<int64_t>(max_value, 0)).size();
  std::string s = std::to_string(v);
  return std::string(width > s.size() ? width - s.size() : 0, '0') + s;
}

Example image_example(const std::string& encoded, const std::string& format, int64_t h, int64_t w,
                      int64_t c) {
  Example ex;
  ex.features["image/encoded"] = Feature::bytes({encoded});
  ex.features["image/format"] = Feature::bytes({format});
  ex.features["image/height"] = Feature::int64s({h});
  ex.features["image/width"] = Feature::int64s({w});
  ex.features["image/channels"] = Feature::int64s({c});
  return ex;
}

// --- IDX ---
struct IdxInput {
  Tensor images;  // u8 [N, H, W, C]
  Tensor labels;  // [N] or undefined
  int64_t n = 0;
};

IdxInput read_idx_input(const std::string& path, const ConvertOptions& o) {
  IdxInput in;
  in.images = data::read_idx(path);
  TERN_CHECK_ARG(
      in.images.dtype() == DType::kU8 && (in.images.rank() == 3 || in.images.rank() == 4), path,
      ": expected u8 images [N, H, W] or [N, H, W, C], got ", in.images.type().to_string());
  if (in.images.rank() == 3) {
    const auto& d = in.images.shape().dims();
    in.images = in.images.reshape(Shape{d[0], d[1], d[2], 1});
  }
  in.n = in.images.shape().dim(0);
  if (!o.labels.empty()) {
    in.labels = data::read_idx(o.labels);
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
  parallel_for(in.n, [&](int64_t i) {
    const Tensor img = prepare(idx_row(in, i), o);
    const std::string encoded = encode_as(img, format, o);
    Example ex =
        image_example(encoded, format, img.shape().dim(0), img.shape().dim(1), img.shape().dim(2));
    if (in.labels.defined())
      ex.features["image/class/label"] = Feature::int64s({static_cast<int64_t>(in.labels.get(i))});
    records[static_cast<size_t>(i)] = data::serialize_example(ex);
  });
  data::TFRecordWriter w(output, data::parse_compression(o.compression));
  for (const std::string& r : records) w.write(r);
  w.close();
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
  std::vector<std::string> names;
  for (int64_t k = 0; k <= max_label; ++k)
    names.push_back(o.class_names.empty() ? padded(k, max_label)
                                          : o.class_names[static_cast<size_t>(k)]);
  for (const std::string& name : names) fs::create_directories(fs::path(output) / name);
  const std::string format = o.image_format.empty() ? "png" : o.image_format;
  parallel_for(in.n, [&](int64_t i) {
    const Tensor img = prepare(idx_row(in, i), o);
    const auto label = static_cast<size_t>(in.labels.get(i));
    const fs::path file =
        fs::path(output) / names[label] / (padded(i, in.n - 1) + extension_for(format));
    data::write_file_bytes(file.string(), encode_as(img, format, o));
  });
  return {in.n, str_cat("wrote ", in.n, " ", format, " images into ", names.size(),
                        " class folders under ", output)};
}

// --- image folder -> TFRecord ---
ConvertResult folder_to_tfrecord(const std::string& input, const std::string& output,
                                 const ConvertOptions& o) {
  data::ImageFolder folder = data::list_image_folder(input, o.class_names);
  int64_t n = static_cast<int64_t>(folder.files.size());
  if (o.limit >= 0) n = std::min(n, o.limit);
  std::vector<std::string> records(static_cast<size_t>(n));
  parallel_for(n, [&](int64_t i) {
    const std::string& path = folder.files[static_cast<size_t>(i)];
    std::string bytes = data::read_file_bytes(path);
    std::string format(data::image_format_name(data::detect_image_format(bytes)));
    data::ImageInfo info = data::read_image_info(bytes, path);
    if (transforms(o) || (!o.image_format.empty() && o.image_format != format)) {
      const Tensor img = prepare(data::decode_image(bytes, {}, path), o);
      format = o.image_format.empty() ? format : o.image_format;
      bytes = encode_as(img, format, o);
      info = {data::ImageFormat::kUnknown, img.shape().dim(0), img.shape().dim(1),
              static_cast<int>(img.shape().dim(2))};
    }
    Example ex = image_example(bytes, format, info.height, info.width, info.channels);
    const int64_t label = folder.labels[static_cast<size_t>(i)];
    ex.features["image/class/label"] = Feature::int64s({label});
    ex.features["image/class/text"] =
        Feature::bytes({folder.class_names[static_cast<size_t>(label)]});
    ex.features["image/filename"] = Feature::bytes({fs::relative(path, input).string()});
    records[static_cast<size_t>(i)] = data::serialize_example(ex);
  });
  data::TFRecordWriter w(output, data::parse_compression(o.compression));
  for (const std::string& r : records) w.write(r);
  w.close();
  return {n, str_cat("wrote ", n, " tf.train.Examples from ", folder.class_names.size(),
                     " classes to ", output)};
}

// --- TFRecord -> image folder ---
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
  TERN_CHECK_ARG(f->kind == data::FeatureKind::kInt64, what, ": feature ", *names.begin(), " is a ",
                 data::feature_kind_name(f->kind));
  return f->int64_list[0];
}

ConvertResult tfrecord_to_folder(const std::string& input, const std::string& output,
                                 const ConvertOptions& o) {
  data::TFRecordReader reader(input, {.compression = data::Compression::kAuto});
  std::vector<std::string> records;
  while (std::optional<std::string> r = reader.read()) {
    if (o.limit >= 0 && static_cast<int64_t>(records.size()) >= o.limit) break;
    records.push_back(std::move(*r));
  }
  const int64_t n = static_cast<int64_t>(records.size());
  std::mutex mu;
  std::map<std::string, int64_t> per_class;
  parallel_for(n, [&](int64_t i) {
    const std::string what = str_cat(input, " record ", i);
    const Example ex = data::parse_example_proto(records[static_cast<size_t>(i)], what);
    const Feature* image = find_any(ex, {"image/encoded", "image_raw", "image", "encoded"});
    TERN_CHECK_ARG(image != nullptr && image->kind == data::FeatureKind::kBytes, what,
                   ": no image bytes (image/encoded, image_raw, image or encoded)");
    const std::string& bytes = image->bytes_list[0];
    const int64_t label = int_feature(ex, {"image/class/label", "label"}, what);
    const Feature* text = find_any(ex, {"image/class/text"});
    const std::string cls = text != nullptr && text->kind == data::FeatureKind::kBytes
                                ? text->bytes_list[0]
                                : padded(label, 9);
    TERN_CHECK_ARG(!cls.empty() && cls.find('/') == std::string::npos && cls != "." && cls != "..",
                   what, ": class name '", cls, "' is not a folder name");
    std::string format(data::image_format_name(data::detect_image_format(bytes)));
    std::string out_bytes = bytes;
    const bool raw = format == "unknown";
    if (raw || transforms(o) || (!o.image_format.empty() && o.image_format != format)) {
      Tensor img;
      if (raw) {
        const int64_t h = int_feature(ex, {"image/height", "height"}, what);
        const int64_t w = int_feature(ex, {"image/width", "width"}, what);
        const int64_t c = int_feature(ex, {"image/channels", "channels", "depth"}, what, 1);
        TERN_CHECK_ARG(h > 0 && w > 0 && c > 0 && static_cast<int64_t>(bytes.size()) == h * w * c,
                       what, ": ", bytes.size(), " raw bytes for a ", h, "x", w, "x", c, " image");
        img = Tensor(DType::kU8, Shape{h, w, c});
        std::memcpy(img.raw_data(), bytes.data(), bytes.size());
      } else {
        img = data::decode_image(bytes, {}, what);
      }
      img = prepare(img, o);
      format = o.image_format.empty() || o.image_format == "raw" ? "png" : o.image_format;
      out_bytes = encode_as(img, format, o);
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      if (per_class[cls]++ == 0) fs::create_directories(fs::path(output) / cls);
    }
    data::write_file_bytes(
        (fs::path(output) / cls / (padded(i, n - 1) + extension_for(format))).string(), out_bytes);
  });
  return {n,
          str_cat("wrote ", n, " images into ", per_class.size(), " class folders under ", output)};
}

}  // namespace

ConvertResult data_convert(const std::string& input, const std::string& output,
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
    return folder_to_tfrecord(input, output, o);
  }
  if (is_tfrecord_name(input) || looks_like_tfrecord(input)) {
    TERN_CHECK_ARG(!out_tfrecord, "convert: TFRecord ", input,
                   " converts to an image folder, not another TFRecord");
    return tfrecord_to_folder(input, output, o);
  }
  return out_tfrecord ? idx_to_tfrecord(input, output, o) : idx_to_folder(input, output, o);
}

}  // namespace tern::tools
