// Format detection, dispatch to the JPEG / PNG codecs, and whole-file helpers.
#include "tern/data/image_codec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tern/base/error.h"
#include "tern/base/strings.h"

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
  // open + fstat + read into the final buffer: the fewest syscalls and copies for small files.
  // O_NONBLOCK and regular files only: a FIFO blocked forever, /dev/zero grew without end
  // (bad-input report F14).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  // Paths of image files come from folder listings: shown through printable() (F24).
  if (fd < 0) {
    throw_error(ErrorCode::kNotFound, printable(path), ": cannot open (", std::strerror(errno),
                ")");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw_error(ErrorCode::kInvalidArgument, printable(path), ": not a regular file");
  }
  std::string out;
  if (st.st_size > 0) out.resize(static_cast<size_t>(st.st_size));
  size_t filled = 0;
  char tail[4096];  // reads past the expected size (a growing file) land here first
  while (true) {
    const bool spare = filled < out.size();
    const ssize_t n = spare ? ::read(fd, out.data() + filled, out.size() - filled)
                            : ::read(fd, tail, sizeof(tail));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw_error(ErrorCode::kUnavailable, printable(path), ": read error (", std::strerror(err),
                  ")");
    }
    if (n == 0) break;
    if (!spare) {
      out.resize(filled + static_cast<size_t>(n));
      std::memcpy(out.data() + filled, tail, static_cast<size_t>(n));
    }
    filled += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(filled);
  return out;
}

void write_file_bytes(const std::string& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    throw_error(ErrorCode::kUnavailable, path, ": cannot create (", std::strerror(errno), ")");
  }
  errno = 0;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  int e = ok ? 0 : errno;
  if (std::fclose(f) != 0 && e == 0) e = errno;
  if (!ok || e != 0) {
    // The reason (ENOSPC: "No space left on device"), and no partial file left behind (only a
    // regular file is removed: never a device node such as /dev/full).
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) std::remove(path.c_str());
    throw_error(ErrorCode::kUnavailable, path, ": cannot write (",
                e != 0 ? std::strerror(e) : "write error", ")");
  }
}

Tensor read_image_file(const std::string& path, const DecodeImageOptions& options) {
  return decode_image(read_file_bytes(path), options, printable(path));
}

}  // namespace tern::data
