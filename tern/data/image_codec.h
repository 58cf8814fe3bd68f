// Image decoding and encoding: JPEG (libjpeg-turbo) and PNG (libpng), to and from u8 [H, W, C]
// tensors (NHWC without the N). Corrupt or truncated input is a DataLoss naming `what` (the file)
// and libjpeg's / libpng's own description; it never crashes and never leaks (the libraries'
// error managers are used as documented: libjpeg's longjmp lands in a frame holding only plain C
// data, and libpng is driven through its simplified API, which contains its own).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tern/tensor/tensor.h"

namespace tern::data {

enum class ImageFormat { kUnknown, kJpeg, kPng };

// From the leading magic bytes (FF D8 FF for JPEG, 89 50 4E 47 0D 0A 1A 0A for PNG).
ImageFormat detect_image_format(std::string_view bytes);
std::string_view image_format_name(ImageFormat format);  // "jpeg", "png", "unknown"

struct DecodeImageOptions {
  // 0: as stored (JPEG: 1 or 3; PNG: 1 to 4); 1 gray, 3 RGB, 4 RGBA (alpha 255 when absent).
  int channels = 0;
  // Larger images (height * width * channels bytes) are refused before anything is allocated.
  int64_t max_bytes = int64_t{1} << 30;
  // JPEG only: decode what is there of a truncated or corrupt stream (libjpeg fills the rest)
  // instead of a DataLoss.
  bool tolerate_corrupt = false;
};

struct ImageInfo {
  ImageFormat format = ImageFormat::kUnknown;
  int64_t height = 0, width = 0;
  int channels = 0;  // as stored
};

// u8 [H, W, C]. `what` names the source in errors (a file path, "record 12").
Tensor decode_image(std::string_view bytes, const DecodeImageOptions& options = {},
                    std::string_view what = "image");
Tensor decode_jpeg(std::string_view bytes, const DecodeImageOptions& options = {},
                   std::string_view what = "image");
Tensor decode_png(std::string_view bytes, const DecodeImageOptions& options = {},
                  std::string_view what = "image");
// The header only (no pixel decoding).
ImageInfo read_image_info(std::string_view bytes, std::string_view what = "image");
ImageInfo read_jpeg_info(std::string_view bytes, std::string_view what = "image");
ImageInfo read_png_info(std::string_view bytes, std::string_view what = "image");

// `image` is u8 [H, W, C] (or [H, W] for gray). JPEG takes C = 1 or 3, PNG C = 1 to 4.
std::string encode_jpeg(const Tensor& image, int quality = 95);
std::string encode_png(const Tensor& image);
// By format; InvalidArgument for kUnknown.
std::string encode_image(const Tensor& image, ImageFormat format, int jpeg_quality = 95);

// Whole-file helpers: NotFound if the file cannot be opened, Unavailable on a read/write error.
std::string read_file_bytes(const std::string& path);
void write_file_bytes(const std::string& path, std::string_view bytes);
// decode_image(read_file_bytes(path)) with `path` named in errors.
Tensor read_image_file(const std::string& path, const DecodeImageOptions& options = {});

}  // namespace tern::data
