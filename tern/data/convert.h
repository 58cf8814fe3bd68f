// Converting image datasets between the formats users hold them in (what `tern data convert`
// runs): IDX -> TFRecord of tf.Examples, IDX -> image folder, image folder -> TFRecord, TFRecord ->
// image folder. Images are encoded on every core (parallel_for).
//
//   ConvertResult r = convert_image_dataset("train-images-idx3-ubyte.gz", "train.tfrecord",
//                                           {.labels = "train-labels-idx1-ubyte.gz"});
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tern::data {

struct ConvertOptions {
  std::string labels;        // IDX input: the labels file
  std::string image_format;  // jpeg | png | raw (TFRecord only); empty: keep, or png
  int jpeg_quality = 95;
  int64_t height = 0, width = 0;         // resize (bilinear) before writing; 0: keep
  int channels = 0;                      // 0: keep; 1 or 3 (gray replicated to RGB)
  int64_t limit = -1;                    // convert only the first N
  std::string compression = "none";      // TFRecord output: none | gzip | zlib
  std::vector<std::string> class_names;  // image-folder output from labels: folder names
  // Called as images are written (from the encoding threads, one call at a time): done of
  // total. `tern data convert` draws a ProgressLine with it.
  std::function<void(int64_t done, int64_t total)> progress;
};

struct ConvertResult {
  int64_t written = 0;
  std::string summary;  // one line: what was written where
};

// The direction follows from the paths: an output ending in .tfrecord (or .tfrecords,
// .tfrecord.gz, .tfr) is a TFRecord, anything else an image-folder directory; an input that is a
// directory is an image folder, one whose first bytes frame a TFRecord is a TFRecord, anything
// else IDX. Examples use the TF-slim feature names (image_convert.h). Bad options are an
// InvalidArgument naming the option.
ConvertResult convert_image_dataset(const std::string& input, const std::string& output,
                                    const ConvertOptions& options);

}  // namespace tern::data
