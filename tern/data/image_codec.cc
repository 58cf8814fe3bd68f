// Format detection, dispatch to the JPEG / PNG codecs, and whole-file helpers.
#include "tern/data/image_codec.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tern/base/error.h"

namespace tern::data {

ImageFormat detect_image_format(std::string_view bytes) {
  if (bytes.size() >= 3 && bytes.substr(0, 3) == "\xFF\xD8\xFF") return ImageFormat::kJpeg;
  if (bytes.size() >= 8 && bytes.substr(0, 8) == "\x89PNG\r\n\x1a\n") return ImageFormat::kPng;
  return ImageFormat::kUnknown;
}

std::string_view image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg:
      return "jpeg";
    case ImageFormat::kPng:
      return "png";
    case ImageFormat::kUnknown:
      break;
  }
  return "unknown";
}

Tensor decode_image(std::string_view bytes, const DecodeImageOptions& options,
                    std::string_view what) {
  switch (detect_image_format(bytes)) {
    case ImageFormat::kJpeg:
      return decode_jpeg(bytes, options, what);
    case ImageFormat::kPng:
      return decode_png(bytes, options, what);
    case ImageFormat::kUnknown:
      break;
  }
  throw_error(ErrorCode::kDataLoss, what, ": not a JPEG or PNG image (", bytes.size(),
              " bytes, no known signature at byte offset 0)");
}

ImageInfo read_image_info(std::string_view bytes, std::string_view what) {
  switch (detect_image_format(bytes)) {
    case ImageFormat::kJpeg:
      return read_jpeg_info(bytes, what);
    case ImageFormat::kPng:
      return read_png_info(bytes, what);
    case ImageFormat::kUnknown:
      break;
  }
  throw_error(ErrorCode::kDataLoss, what, ": not a JPEG or PNG image");
}

std::string encode_image(const Tensor& image, ImageFormat format, int jpeg_quality) {
  switch (format) {
    case ImageFormat::kJpeg:
      return encode_jpeg(image, jpeg_quality);
    case ImageFormat::kPng:
      return encode_png(image);
    case ImageFormat::kUnknown:
      break;
  }
  throw_error(ErrorCode::kInvalidArgument, "encode_image: no format given");
}

std::string read_file_bytes(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    throw_error(ErrorCode::kNotFound, path, ": cannot open (", std::strerror(errno), ")");
  std::string out;
  if (std::fseek(f, 0, SEEK_END) == 0) {
    const long size = std::ftell(f);
    if (size > 0) out.reserve(static_cast<size_t>(size));
    std::rewind(f);
  }
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw_error(ErrorCode::kUnavailable, path, ": read error");
  return out;
}

void write_file_bytes(const std::string& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    throw_error(ErrorCode::kUnavailable, path, ": cannot create (", std::strerror(errno), ")");
  }
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !ok) throw_error(ErrorCode::kUnavailable, path, ": write error");
}

Tensor read_image_file(const std::string& path, const DecodeImageOptions& options) {
  return decode_image(read_file_bytes(path), options, path);
}

}  // namespace tern::data
