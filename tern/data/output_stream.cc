// OutputStream: buffered file writes and streaming zlib/gzip deflation.
#include "tern/data/output_stream.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "tern/base/error.h"
#include "tern/base/logging.h"

namespace tern::data {

struct OutputStream::Deflater {
  z_stream strm{};
  std::vector<unsigned char> out = std::vector<unsigned char>(256 * 1024);
  ~Deflater() { deflateEnd(&strm); }
};

std::unique_ptr<OutputStream> OutputStream::create(const std::string& path,
                                                   Compression compression) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    throw_error(ErrorCode::kUnavailable, "cannot create ", path, ": ", std::strerror(errno));
  }
  if (compression == Compression::kAuto) compression = Compression::kNone;
  return std::unique_ptr<OutputStream>(new OutputStream(path, f, compression));
}

OutputStream::OutputStream(std::string path, std::FILE* file, Compression compression)
    : path_(std::move(path)), file_(file), compression_(compression) {
  if (compression_ == Compression::kNone) return;
  deflater_ = std::make_unique<Deflater>();
  const int window_bits = compression_ == Compression::kGzip ? 15 + 16 : 15;
  if (deflateInit2(&deflater_->strm, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    std::fclose(file_);
    throw_error(ErrorCode::kResourceExhausted, "zlib: cannot initialize deflate for ", path_);
  }
}

OutputStream::~OutputStream() {
  if (file_ == nullptr) return;
  try {
    close();
  } catch (const Error& e) {
    log_warning("closing ", path_, ": ", e.message());
  }
}

void OutputStream::write_file(const void* data, size_t n) {
  if (n > 0 && std::fwrite(data, 1, n, file_) != n) {
    throw_error(ErrorCode::kUnavailable, "write error in ", path_, ": ", std::strerror(errno));
  }
}

void OutputStream::deflate_some(int flush_mode) {
  Deflater& z = *deflater_;
  for (;;) {
    z.strm.next_out = z.out.data();
    z.strm.avail_out = static_cast<uInt>(z.out.size());
    const int rc = deflate(&z.strm, flush_mode);
    if (rc == Z_STREAM_ERROR) throw_error(ErrorCode::kInternal, "zlib deflate failed for ", path_);
    write_file(z.out.data(), z.out.size() - z.strm.avail_out);
    // Done when deflate left output space unused and (when finishing) ended the stream.
    if (z.strm.avail_out != 0 && z.strm.avail_in == 0 &&
        (flush_mode != Z_FINISH || rc == Z_STREAM_END)) {
      return;
    }
  }
}

void OutputStream::write(std::string_view bytes) {
  TERN_CHECK_ARG(file_ != nullptr, "write to closed stream ", path_);
  offset_ += static_cast<int64_t>(bytes.size());
  if (!deflater_) {
    write_file(bytes.data(), bytes.size());
    return;
  }
  z_stream& s = deflater_->strm;
  while (!bytes.empty()) {
    const size_t chunk = std::min<size_t>(bytes.size(), 1u << 30);
    s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    s.avail_in = static_cast<uInt>(chunk);
    deflate_some(Z_NO_FLUSH);
    bytes.remove_prefix(chunk);
  }
}

void OutputStream::flush(bool durable) {
  TERN_CHECK_ARG(file_ != nullptr, "flush of closed stream ", path_);
  if (deflater_) deflate_some(Z_SYNC_FLUSH);
  if (std::fflush(file_) != 0) {
    throw_error(ErrorCode::kUnavailable, "flush failed for ", path_, ": ", std::strerror(errno));
  }
  if (durable && fsync(fileno(file_)) != 0) {
    throw_error(ErrorCode::kUnavailable, "fsync failed for ", path_, ": ", std::strerror(errno));
  }
}

void OutputStream::close() {
  if (file_ == nullptr) return;
  std::FILE* f = file_;
  try {
    if (deflater_) deflate_some(Z_FINISH);
  } catch (...) {
    file_ = nullptr;
    std::fclose(f);
    throw;
  }
  file_ = nullptr;
  if (std::fclose(f) != 0) {
    throw_error(ErrorCode::kUnavailable, "close failed for ", path_, ": ", std::strerror(errno));
  }
}

}  // namespace tern::data
