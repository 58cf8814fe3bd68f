// PNG decoding and encoding through libpng's simplified API (png_image), which handles libpng's
// longjmp-based errors inside the library and reports them in png_image::message; nothing here
// is jumped over. 16-bit images come out as 8-bit (scaled, not gamma-converted); palette images
// as RGB or RGBA.
#include <png.h>

#include <cstring>

#include "tern/base/error.h"
#include "tern/data/image_codec.h"

namespace tern::data {
namespace {

// Channels as stored; a palette image counts its palette entries' channels (RGB or RGBA).
int format_channels(png_uint_32 format) {
  return static_cast<int>(PNG_IMAGE_PIXEL_CHANNELS(format & ~PNG_FORMAT_FLAG_COLORMAP));
}

// libpng stops reading after the image data, so a file cut inside or before its IEND chunk
// would decode; a complete PNG ends with IEND (possibly followed by trailing bytes).
bool has_iend(std::string_view bytes) {
  static constexpr std::string_view kIend("\0\0\0\0IEND\xAE\x42\x60\x82", 12);
  return bytes.rfind(kIend) != std::string_view::npos;
}

png_uint_32 format_for(int channels) {
  switch (channels) {
    case 1:
      return PNG_FORMAT_GRAY;
    case 2:
      return PNG_FORMAT_GA;
    case 3:
      return PNG_FORMAT_RGB;
    default:
      return PNG_FORMAT_RGBA;
  }
}

// Releases the png_image if begin_read succeeded and finish_read was not reached.
struct PngImage {
  png_image image;
  PngImage() {
    std::memset(&image, 0, sizeof(image));
    image.version = PNG_IMAGE_VERSION;
  }
  ~PngImage() { png_image_free(&image); }
  PngImage(const PngImage&) = delete;
  PngImage& operator=(const PngImage&) = delete;
};

// Every chunk's declared length must fit in the bytes after it, checked before libpng sees the
// file: a 61-byte PNG whose tEXt chunk claimed 2^31-1 bytes made libpng allocate 2.1 GB before it
// found the data missing (bad-input report F11). Stops at IEND; a bad signature or a header cut
// short is left to libpng's own errors.
void check_chunk_lengths(std::string_view bytes, std::string_view what) {
  static constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);
  if (bytes.substr(0, 8) != kSignature) return;
  uint64_t at = 8;
  while (at + 8 <= bytes.size()) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + at);
    const uint64_t length =
        (uint64_t{p[0]} << 24) | (uint64_t{p[1]} << 16) | (uint64_t{p[2]} << 8) | uint64_t{p[3]};
    const std::string_view type = bytes.substr(at + 4, 4);
    if (length + 12 > bytes.size() - at) {
      throw_error(ErrorCode::kDataLoss, what, ": corrupt PNG (chunk '", type, "' at byte ", at,
                  " claims ", length, " bytes of data; ", bytes.size() - at - 8,
                  " bytes follow its header, its CRC included)");
    }
    if (type == "IEND") return;
    at += 12 + length;
  }
}

void begin_read(PngImage& png, std::string_view bytes, std::string_view what) {
  check_chunk_lengths(bytes, what);
  if (!png_image_begin_read_from_memory(&png.image, bytes.data(), bytes.size())) {
    throw_error(ErrorCode::kDataLoss, what, ": corrupt PNG (", png.image.message, ")");
  }
}

}  // namespace

Tensor decode_png(std::string_view bytes, const DecodeImageOptions& options,
                  std::string_view what) {
  TERN_CHECK_ARG(options.channels >= 0 && options.channels <= 4,
                 "decode_png: channels must be 0 to 4, got ", options.channels);
  PngImage png;
  begin_read(png, bytes, what);
  const int stored = format_channels(png.image.format);
  const int channels = options.channels != 0 ? options.channels : stored;
  png.image.format = format_for(channels);
  // Without gAMA/sRGB chunks libpng would treat 16-bit data as linear and gamma-encode it.
  png.image.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  const int64_t h = png.image.height, w = png.image.width;
  if (h * w * channels > options.max_bytes) {
    throw_error(ErrorCode::kResourceExhausted, what, ": PNG of ", h, "x", w, "x", channels,
                " exceeds the decode limit of ", options.max_bytes, " bytes");
  }
  Tensor out(DType::kU8, Shape{h, w, channels});
  if (!png_image_finish_read(&png.image, nullptr, out.raw_data(), 0, nullptr)) {
    throw_error(ErrorCode::kDataLoss, what, ": corrupt or truncated PNG (", png.image.message, ")");
  }
  if (!has_iend(bytes)) {
    throw_error(ErrorCode::kDataLoss, what, ": truncated PNG (no IEND chunk in ", bytes.size(),
                " bytes)");
  }
  return out;
}

ImageInfo read_png_info(std::string_view bytes, std::string_view what) {
  PngImage png;
  begin_read(png, bytes, what);
  return {ImageFormat::kPng, png.image.height, png.image.width, format_channels(png.image.format)};
}

std::string encode_png(const Tensor& image) {
  TERN_CHECK_ARG(
      image.defined() && image.dtype() == DType::kU8 && (image.rank() == 2 || image.rank() == 3),
      "encode_png: expected a u8 [H, W, C] image, got ",
      image.defined() ? image.type().to_string() : "undefined");
  const int channels = image.rank() == 2 ? 1 : static_cast<int>(image.shape().dim(2));
  TERN_CHECK_ARG(channels >= 1 && channels <= 4, "encode_png: channels must be 1 to 4, got ",
                 channels);
  const int64_t h = image.shape().dim(0), w = image.shape().dim(1);
  TERN_CHECK_ARG(h >= 1 && w >= 1 && h <= 0x7fffffff / 8 && w <= 0x7fffffff / 8,
                 "encode_png: image size ", h, "x", w, " out of range");
  PngImage png;
  png.image.width = static_cast<png_uint_32>(w);
  png.image.height = static_cast<png_uint_32>(h);
  png.image.format = format_for(channels);
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&png.image, nullptr, &size, 0, image.raw_data(), 0, nullptr)) {
    throw_error(ErrorCode::kInternal, "encode_png: libpng failed (", png.image.message, ")");
  }
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&png.image, out.data(), &size, 0, image.raw_data(), 0, nullptr)) {
    throw_error(ErrorCode::kInternal, "encode_png: libpng failed (", png.image.message, ")");
  }
  out.resize(size);
  return out;
}

}  // namespace tern::data
