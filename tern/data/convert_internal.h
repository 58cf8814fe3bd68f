// Shared by convert.cc and convert_tfrecord.cc, the two halves of convert_image_dataset; not an
// interface of its own.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tern/data/convert.h"
#include "tern/data/image_convert.h"

namespace tern::data::convert_internal {

// True if the options change the pixels (then images are decoded and re-encoded).
inline bool changes_pixels(const ConvertOptions& o) {
  return o.height > 0 || o.channels != 0;
}

inline Tensor convert_image(const Tensor& image, const ConvertOptions& o) {
  return convert_image_u8(image, o.channels, o.height, o.width);
}

// Reports finished images to ConvertOptions::progress from parallel_for's threads, serialized.
class ConvertProgress {
 public:
  ConvertProgress(const ConvertOptions& o, int64_t total) : fn_(o.progress), total_(total) {
    if (fn_) fn_(0, total_);
  }
  void one_done() {
    if (!fn_) return;
    std::lock_guard<std::mutex> lock(mu_);
    fn_(++done_, total_);
  }

 private:
  const std::function<void(int64_t, int64_t)>& fn_;
  int64_t total_, done_ = 0;
  std::mutex mu_;
};

// A class name usable as one folder inside the output: not empty, no '/', NUL, "." or "..".
// Names from records were checked; --class-names was not, and "../x" wrote outside the output
// folder (bad-input report F20).
inline bool is_folder_name(std::string_view name) {
  return !name.empty() && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos && name != "." && name != "..";
}

inline std::string extension_for(const std::string& format) {
  return format == "jpeg" ? ".jpg" : ".png";
}

// Writes `records` to the TFRecord file `output`; on any failure (a full disk) the partial file
// is removed before the error goes on: a failed conversion left half a TFRecord behind
// (bad-input report F9).
void write_records(const std::string& output, const std::string& compression,
                   const std::vector<std::string>& records);

ConvertResult folder_to_tfrecord(const std::string& input, const std::string& output,
                                 const ConvertOptions& o);
ConvertResult tfrecord_to_folder(const std::string& input, const std::string& output,
                                 const ConvertOptions& o);

}  // namespace tern::data::convert_internal
